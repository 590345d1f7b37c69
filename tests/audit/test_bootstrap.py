"""SMI's bootstrap: interval forms, class-stratified resampling, per-class estimates and coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from paperlab.audit import SMI
from paperlab.audit.base import resample_count_rows
from paperlab.audit.bootstrap import acceleration, bootstrap_interval, jackknife_weights, stratified_count_rows


def test_stratified_counts_keep_every_group_size_and_match_plain_draws_for_one_group():
    groups = np.array([2, 0, 1, 0, 2, 2, 1, 0, 0, 2])
    rows = stratified_count_rows(np.random.default_rng(3), groups, 50)
    for g in (0, 1, 2):
        assert (rows[:, groups == g].sum(1) == (groups == g).sum()).all()
    same = stratified_count_rows(np.random.default_rng(4), np.zeros(10), 50)
    assert np.array_equal(same, resample_count_rows(np.random.default_rng(4), 10, 50))


def test_jackknife_weights_delete_each_point_once():
    w = jackknife_weights(53, groups=20, seed=0)
    assert w.shape == (53, 20) and ((1 - w).sum(1) == 1).all() and set((1 - w).sum(0).tolist()) == {2.0, 3.0}
    assert jackknife_weights(5, groups=20, seed=0).shape == (5, 5)


def test_interval_forms():
    rng = np.random.default_rng(0)
    reps = 0.3 + 0.05 * np.exp(rng.standard_normal(2000))  # right-skewed replicates in (0.3, 1)
    q = np.quantile(reps, [0.05, 0.95])
    assert bootstrap_interval(0.35, reps, alpha=0.1, kind="percentile") == tuple(q)
    assert bootstrap_interval(0.35, reps, alpha=0.1, kind="basic") == pytest.approx(tuple(0.7 - q[::-1]))
    # no bias (half the replicates below the estimate) and no acceleration: BCa is the percentile interval
    median = float(np.median(reps))
    assert bootstrap_interval(median, reps, alpha=0.1, kind="bca") == pytest.approx(tuple(q), abs=2e-3)
    shifted = bootstrap_interval(median, reps, alpha=0.1, kind="bca", accel=0.1)
    assert shifted[0] > q[0] and shifted[1] > q[1]  # positive acceleration moves the interval up
    assert bootstrap_interval(-0.3, reps - 0.7, alpha=0.1, kind="basic")[0] == 0.0  # clipped to [0, 1]
    assert all(math.isnan(v) for v in bootstrap_interval(0.2, np.full(5, np.nan), alpha=0.1, kind="bca"))
    assert acceleration([np.ones(20), np.ones(20)]) == 0.0
    assert acceleration([np.r_[np.zeros(19), 1.0]]) < 0 < acceleration([np.r_[np.zeros(19), -1.0]])


def _planted(pi: float, *, n: int = 200, seed: int = 0, d: int = 1, shift: float = 1.0):
    rng = np.random.default_rng(seed)
    u = np.zeros(d)
    u[0] = shift
    m, nn_ = rng.standard_normal((n, d)), rng.standard_normal((n, d)) + u
    k = round(pi * n)
    return m, nn_, np.concatenate([rng.standard_normal((k, d)) + u, rng.standard_normal((n - k, d))])


@pytest.mark.parametrize("estimator", ["mmd", "w1", "em"])
def test_per_class_with_one_class_equals_the_pooled_audit(estimator):
    m, n, f = _planted(0.3, seed=1, d=3, shift=2.0)
    one = {"member_labels": np.zeros(len(m)), "nonmember_labels": np.zeros(len(n))}
    kw = dict(estimator=estimator, n_bootstrap=40, n_permutations=20)
    pooled = SMI(**kw).fit(m, n, **one).estimate(f, labels=np.zeros(len(f)))
    per = SMI(**kw, stratify="per_class").fit(m, n, **one).estimate(f, labels=np.zeros(len(f)))
    assert per.raw_rate == pytest.approx(pooled.raw_rate, abs=1e-12)
    assert (per.low, per.high) == pytest.approx((pooled.low, pooled.high), abs=1e-12)


def test_per_class_combines_class_estimates_by_forget_share():
    rng = np.random.default_rng(0)

    def draw(n, classes, member):
        x = rng.standard_normal((n, 4))
        x[:, 1] += 6.0 * classes
        x[:, 0] += 0.0 if member else np.where(classes == 0, 3.0, 1.5)  # class-dependent membership shift
        return x

    cm, cn = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    m, n = draw(500, cm, True), draw(500, cn, False)
    cf = (rng.random(400) < 0.2).astype(int)
    f = np.where((np.arange(400) < 200)[:, None], draw(400, cf, False), draw(400, cf, True))
    kw = dict(member_labels=cm, nonmember_labels=cn)
    for interval in ("percentile", "basic", "bca"):
        res = SMI(stratify="per_class", interval=interval, n_bootstrap=50, n_permutations=20).fit(m, n, **kw).estimate(
            f, labels=cf)
        assert abs(res.forgetting_rate - 0.5) < 0.07 and res.low < 0.5 < res.high and res.high - res.low < 0.4


def test_per_class_and_interval_bad_input():
    m, n, f = _planted(0.3)
    with pytest.raises(ValueError, match="stratify='per_class' needs class labels"):
        SMI(stratify="per_class", n_permutations=20).fit(m, n).estimate(f)
    labels = np.r_[np.zeros(199, dtype=int), 1]  # class 1 has one member and one non-member reference point
    smi = SMI(stratify="per_class", n_permutations=20).fit(m, n, member_labels=labels, nonmember_labels=labels)
    with pytest.raises(ValueError, match=r"forget-set classes \[1\] have fewer than 2 member reference points"):
        smi.estimate(f, labels=labels)
    with pytest.raises(ValueError, match="interval='student' is not valid; choose one of"):
        SMI(interval="student").fit(m, n)
    with pytest.raises(ValueError, match="stratify='classes' is not valid"):
        SMI(stratify="classes").fit(m, n)


@pytest.mark.slow
def test_default_interval_covers_planted_proportions_at_the_nominal_rate():
    """200 planted 1-d mixtures per rho, nominal 90%: inside (rho = 0.3) the coverage is within 3 binomial
    standard errors (0.064) of 0.9; at rho = 0 and 1 clipping can only add coverage (no under-coverage), and
    the range sits on the boundary ([0, 0] or [1, 1]) in a few draws."""
    se3 = 3 * math.sqrt(0.9 * 0.1 / 200)
    for pi in (0.0, 0.3, 1.0):
        hits = flat = 0
        for r in range(200):
            m, n, f = _planted(pi, seed=1000 * r + int(10 * pi))
            res = SMI(n_bootstrap=200, n_permutations=20, alpha=0.1, seed=r).fit(m, n).estimate(f)
            hits += res.low <= pi <= res.high
            flat += res.low == res.high
        if pi == 0.3:
            assert abs(hits / 200 - 0.9) <= se3 and flat == 0, (pi, hits)
        else:
            assert hits / 200 >= 0.9 - se3 and 0 < flat < 40, (pi, hits, flat)
