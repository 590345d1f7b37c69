"""MIA baselines as forgetting-rate estimators: planted signals, debiasing, battery and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from paperlab.audit import (
    RMIA,
    SVCMIA,
    AttackData,
    AuditResult,
    LiRA,
    NotFittedError,
    ThresholdMIA,
    balanced_threshold,
    membership_score,
)
from paperlab.audit.mia import SCORES

C = 10


def logits_for(n: int, *, member: bool, strength: float, seed: int):
    """Logits whose true class is boosted by ``strength`` more for members than for non-members."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, C, n)
    logits = rng.standard_normal((n, C))
    logits[np.arange(n), labels] += (strength if member else 0.0) + 1.0 + rng.standard_normal(n)
    return logits, labels


def mixed(pi: float, n: int, *, strength: float, seed: int):
    k = round(pi * n)
    a, la = logits_for(k, member=False, strength=strength, seed=seed)
    b, lb = logits_for(n - k, member=True, strength=strength, seed=seed + 1)
    return np.concatenate([a, b]), np.concatenate([la, lb])


def refs(strength: float, n: int = 400):
    return logits_for(n, member=True, strength=strength, seed=1), logits_for(n, member=False, strength=strength,
                                                                            seed=2)


@pytest.mark.parametrize("score", SCORES)
def test_threshold_attacks_detect_planted_signal(score):
    m, n = refs(strength=5.0)
    attack = ThresholdMIA(score=score, n_bootstrap=50).fit(m, n)
    assert attack.auc_ > 0.9
    res_members = attack.estimate(mixed(0.0, 300, strength=5.0, seed=10))
    res_non = attack.estimate(mixed(1.0, 300, strength=5.0, seed=20))
    assert res_members.forgetting_rate < 0.15 and res_non.forgetting_rate > 0.85


def test_debiased_count_recovers_proportion_raw_count_does_not():
    m, n = refs(strength=1.5, n=2000)
    f = mixed(0.1, 2000, strength=1.5, seed=30)
    raw = ThresholdMIA(score="loss", n_bootstrap=0).fit(m, n).estimate(f)
    deb = ThresholdMIA(score="loss", debias=True, n_bootstrap=100).fit(m, n).estimate(f)
    assert 0.6 < raw.auc < 0.9  # a weak attack: the raw count is biased by the reference error rates
    assert abs(deb.forgetting_rate - 0.1) < 0.06
    assert abs(raw.forgetting_rate - 0.1) > 0.1
    assert deb.low <= 0.1 <= deb.high


def test_svc_mia_detects_planted_signal():
    m, n = refs(strength=5.0)
    attack = SVCMIA(n_bootstrap=20).fit(m, n)
    assert attack.auc_ > 0.9
    assert attack.estimate(mixed(0.0, 200, strength=5.0, seed=3)).forgetting_rate < 0.15
    assert attack.estimate(mixed(1.0, 200, strength=5.0, seed=4)).forgetting_rate > 0.85


def shadow_data(n: int, *, member: bool, k: int, seed: int, online: bool) -> AttackData:
    """Binary logits [s, 0] so the logit-scaled confidence is exactly s; per-example difficulty d."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0, 2, n)
    target = d + (3.0 if member else 0.0) + 0.3 * rng.standard_normal(n)
    shadow_in = (rng.random((k, n)) < 0.5) if online else np.zeros((k, n), dtype=bool)
    shadows = d + 3.0 * shadow_in + 0.3 * rng.standard_normal((k, n))

    def to_logits(s):
        return np.stack([s, np.zeros_like(s)], -1)

    return AttackData(to_logits(target), np.zeros(n, dtype=np.int64), to_logits(shadows), shadow_in)


@pytest.mark.parametrize("online", [False, True])
def test_lira_detects_planted_signal(online):
    kw = dict(k=8, online=online)
    m, n = shadow_data(300, member=True, seed=1, **kw), shadow_data(300, member=False, seed=2, **kw)
    attack = LiRA(online=online, n_bootstrap=20).fit(m, n)
    assert attack.auc_ > 0.9
    assert attack.estimate(shadow_data(300, member=True, seed=3, **kw)).forgetting_rate < 0.15
    assert attack.estimate(shadow_data(300, member=False, seed=4, **kw)).forgetting_rate > 0.85


def test_rmia_detects_planted_signal():
    kw = dict(k=4, online=False)
    m, n = shadow_data(300, member=True, seed=1, **kw), shadow_data(300, member=False, seed=2, **kw)
    attack = RMIA(n_bootstrap=20).fit(m, n)
    assert attack.auc_ > 0.9
    assert attack.estimate(shadow_data(300, member=False, seed=4, **kw)).forgetting_rate > 0.8


def test_membership_scores_match_formulas():
    logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]], dtype=torch.float64)
    labels = torch.tensor([0, 2])
    p = logits.softmax(-1)
    ce = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
    np.testing.assert_allclose(membership_score(logits, labels, kind="loss"), -ce.numpy(), atol=1e-12)
    np.testing.assert_allclose(membership_score(logits, labels, kind="confidence"), p[[0, 1], labels].numpy())
    py = p[[0, 1], labels]
    mentr = -(1 - py) * py.log() - sum(p[:, c] * (1 - p[:, c]).log() * (labels != c) for c in range(3))
    np.testing.assert_allclose(membership_score(logits, labels, kind="m_entropy"), -mentr.numpy(), atol=1e-12)
    np.testing.assert_allclose(membership_score(logits, labels, kind="scaled_confidence"),
                               (py / (1 - py)).log().numpy(), atol=1e-12)


def test_balanced_threshold_separates_exactly():
    assert balanced_threshold(np.array([2.0, 3.0]), np.array([0.0, 1.0])) == 2.0


ATTACKS = [lambda: ThresholdMIA(n_bootstrap=10), lambda: SVCMIA(n_bootstrap=10), lambda: LiRA(n_bootstrap=10),
           lambda: RMIA(n_bootstrap=10)]


@pytest.mark.parametrize("make", ATTACKS, ids=["threshold", "svc", "lira", "rmia"])
def test_battery(make):
    kw = dict(k=4, online=False)
    m, n = shadow_data(100, member=True, seed=1, **kw), shadow_data(100, member=False, seed=2, **kw)
    f = shadow_data(100, member=False, seed=5, **kw)
    with pytest.raises(NotFittedError, match="not fitted"):
        make().estimate(f)
    attack = make()
    first = attack.fit(m, n).estimate(f)
    again = attack.fit(m, n).estimate(f)
    assert (first.forgetting_rate, first.low, first.high) == (again.forgetting_rate, again.low, again.high)
    back = AuditResult.from_dict(json.loads(json.dumps(first.to_dict())))
    assert back.forgetting_rate == first.forgetting_rate and math.isnan(back.residual)


def test_bad_inputs_raise():
    m, n = refs(strength=2.0, n=50)
    with pytest.raises(TypeError, match="AttackData or a"):
        ThresholdMIA().fit(m[0], n)
    with pytest.raises(ValueError, match="logits must be"):
        ThresholdMIA().fit((m[0][:, 0], m[1]), n)
    bad = m[0].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        ThresholdMIA().fit((bad, m[1]), n)
    with pytest.raises(ValueError, match="labels must lie in"):
        ThresholdMIA().fit((m[0], m[1] + C), n)
    with pytest.raises(ValueError, match="at least 10 examples"):
        ThresholdMIA().fit((m[0][:3], m[1][:3]), n)
    with pytest.raises(ValueError, match="shadow_logits is required"):
        LiRA().fit(m, n)
    with pytest.raises(ValueError, match="score='nope' is not valid"):
        ThresholdMIA(score="nope").fit(m, n)
    attack = ThresholdMIA().fit(m, n)
    with pytest.raises(ValueError, match="classes"):
        attack.estimate((m[0][:, :4], m[1] % 4))


def test_non_integer_labels_are_refused_not_truncated():
    m, n = refs(strength=2.0, n=50)
    halves = m[1] + 0.5  # 3.5 would silently become class 3
    for labels in (halves, torch.tensor(halves)):
        with pytest.raises(ValueError, match=r"labels must be integer class ids.*3\.5|labels must be integer"):
            ThresholdMIA().fit((m[0], labels), n)
    with pytest.raises(ValueError, match="labels must be integer class ids"):
        membership_score(m[0], halves, kind="loss")
    whole = ThresholdMIA().fit((m[0], m[1].astype(np.float64)), n).estimate(m)  # integral floats are class ids
    assert whole.forgetting_rate == ThresholdMIA().fit(m, n).estimate(m).forgetting_rate


def test_detection_threshold_flags_at_most_fpr_of_the_nonmembers():
    from paperlab.audit.mia import detection_threshold

    rng = np.random.default_rng(0)
    nonmember = rng.normal(size=1000)
    for fpr in (0.01, 0.05, 0.2):
        t = detection_threshold(nonmember, fpr=fpr)
        assert (nonmember >= t).mean() <= fpr and (nonmember >= t).mean() > fpr - 0.002  # as many as allowed
    ties = np.array([0.0] * 50 + [1.0] * 50)
    assert (ties >= detection_threshold(ties, fpr=0.3)).mean() == 0.0  # a tie block is never split past fpr
    with pytest.raises(ValueError, match="fpr"):
        detection_threshold(nonmember, fpr=0.0)


def test_threshold_mia_detection_rule_is_stricter_than_balanced():
    from paperlab.audit.mia import AttackData, ThresholdMIA

    rng = np.random.default_rng(1)

    def data(n, margin):  # logits whose true-class margin sets the loss
        logits = rng.normal(size=(n, 3))
        logits[:, 0] += margin
        return AttackData(torch.tensor(logits, dtype=torch.float32), torch.zeros(n, dtype=torch.long))

    member, nonmember, forget = data(500, 3.0), data(500, 1.0), data(400, 2.0)
    balanced = ThresholdMIA(score="loss").fit(member, nonmember).estimate(forget)
    detect = ThresholdMIA(score="loss", fpr=0.05).fit(member, nonmember)
    assert detect.out_n_.mean() >= 0.95 - 1e-9  # at most 5% of the non-members called members
    assert detect.estimate(forget).raw_rate > balanced.raw_rate  # a detection rule calls more points "forgotten"
    assert detect.name == "mia-loss-fpr5" and "fpr=0.05" in repr(detect)
    with pytest.raises(ValueError, match="fpr"):
        ThresholdMIA(fpr=1.5).fit(member, nonmember)
