"""Fast paths of the SMI audit against their readable references: w1 replicates and range, kernels, counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from paperlab.audit import SMI
from paperlab.audit.base import resample_count_rows, resample_counts
from paperlab.audit.kernels import kernel_matrix, mmd_permutation
from paperlab.audit.scratch import reuse_scratch
from paperlab.audit.w1 import w1_proportion, w1_proportion_reference, w1_range


def scores_and_weights(seed: int, *, discrete: bool = False, reps: int = 60, same: str | None = None):
    """Three score sets and multinomial (optionally class-weighted, fp32-rounded) weights ``[n, reps]``."""
    rng = np.random.default_rng(seed)
    nf, nm, nn_ = (int(k) for k in rng.integers(12, 300, 3))
    sm, sn = rng.normal(0.0, 1.0, nm), rng.normal(1.0, 1.0, nn_)
    sf = {"m": sm[:nf] if nf <= nm else sm, "n": sn[:nf] if nf <= nn_ else sn}.get(same, rng.normal(0.4, 1, nf))
    if discrete:  # many tied scores: zero-length grid intervals and tied ratios
        sf, sm, sn = (np.round(x, 1) for x in (sf, sm, sn))
    out = []
    for k, s in enumerate((sf, sm, sn)):
        c = resample_counts(rng, len(s), reps)
        cls = rng.random(len(s)) + 0.5 if k else np.ones(len(s))
        out.append((c * cls[:, None]).astype(np.float32).astype(np.float64))
    return (sf, sm, sn), tuple(out)


@pytest.mark.parametrize("seed", range(12))
def test_w1_fast_replicates_equal_reference_bitwise(seed):
    s, w = scores_and_weights(seed, discrete=seed % 3 == 0, same=(None, "m", "n")[seed % 3])
    ref = w1_proportion_reference(*s, *w)
    assert np.array_equal(w1_proportion(*s, *w), ref, equal_nan=True)
    rows = tuple(np.ascontiguousarray(x.T) for x in w)  # [B, n] arrays passed as transposed views
    assert np.array_equal(w1_proportion(*s, *(r.T for r in rows), chunk=7), ref, equal_nan=True)


@pytest.mark.parametrize("seed", range(12))
def test_w1_range_equals_percentiles_of_all_reference_replicates(seed):
    s, w = scores_and_weights(100 + seed, discrete=seed % 4 == 0, reps=400, same=(None, "m", "n")[seed % 3])
    reps = np.clip(w1_proportion_reference(*s, *w), 0.0, 1.0)
    for q in (np.array([0.025, 0.975]), np.array([0.0, 0.1, 0.5, 1.0])):
        want = np.quantile(reps[np.isfinite(reps)], q)
        got = w1_range(*s, *w, q, bins=(256, 4, 1)[seed % 3], chunk=(64, 5, 400)[seed % 3])
        assert np.array_equal(got, want)  # == : a zero end may be -0.0 on one side and 0.0 on the other


def test_w1_exact_at_the_anchors():
    rng = np.random.default_rng(0)
    m, n = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 500)
    ones = [np.ones((k, 1)) for k in (300, 300, 500)]
    assert w1_proportion(m, m, n, *ones)[0] == 0.0  # F equals M: exactly 0, no cumsum rounding left over
    assert w1_proportion(n, m, n, ones[2], ones[1], ones[2])[0] == 1.0


def test_w1_range_checks_bins():
    s, w = scores_and_weights(0, reps=5)
    with pytest.raises(ValueError, match="power of two"):
        w1_range(*s, *w, np.array([0.5]), bins=100)


@pytest.mark.parametrize("rho_shift", [0.0, 0.6, 3.0])
def test_smi_w1_estimate_and_range_equal_the_reference(rho_shift):
    """The whole SMI w1 audit (class reweighting, fp32-rounded bootstrap weights) against the reference loop."""
    rng = np.random.default_rng(7)
    m, n = rng.normal(0.0, 1.0, 300), rng.normal(1.0, 1.0, 400)
    f = np.concatenate([rng.normal(1.0, 1.0, 60), rng.normal(rho_shift, 1.0, 140)])
    lm, ln, lf = rng.integers(0, 3, 300), rng.integers(0, 3, 400), rng.integers(0, 3, 200)
    smi = SMI(estimator="w1", n_bootstrap=500, n_permutations=20, seed=3).fit(m, n, member_labels=lm,
                                                                             nonmember_labels=ln)
    res = smi.estimate(f, labels=lf)
    wm0, wn0 = smi._class_weights(lf)
    s_f = smi.witness(f)
    ft = smi._standardise(f[:, None])
    assert np.array_equal(s_f, smi.estimator_.forget_scores(ft, smi._k(ft, smi.member_), smi._k(ft, smi.nonmember_))
                          [0]["f"])
    ones = [np.ones((k, 1)) for k in (200, 300, 400)]
    raw = w1_proportion_reference(s_f, smi.s_m_, smi.s_n_, ones[0], wm0[:, None], wn0[:, None])[0]
    assert res.raw_rate == raw
    g = np.random.default_rng([3, 7])
    cf, cm, cn = (resample_counts(g, k, 500) for k in (200, 300, 400))
    wm, wn = ((c * w0[:, None]).astype(np.float32).astype(np.float64) for c, w0 in ((cm, wm0), (cn, wn0)))
    reps = np.clip(w1_proportion_reference(s_f, smi.s_m_, smi.s_n_, cf, wm, wn), 0.0, 1.0)
    low, high = np.quantile(reps[np.isfinite(reps)], [0.025, 0.975])
    assert (res.low, res.high) == (low, high)


def test_count_rows_are_the_same_draws():
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    assert np.array_equal(resample_count_rows(a, 37, 11).T.astype(float), resample_counts(b, 37, 11))


def _kernel_by_matmul(a: torch.Tensor, b: torch.Tensor, bandwidth: float) -> torch.Tensor:
    """The previous formula: one matmul for the cross term, then the norms, clamp, scale, exp."""
    d2 = (a @ b.T).mul_(-2.0).add_((a * a).sum(1)[:, None]).add_((b * b).sum(1)[None, :]).clamp_min_(0.0)
    return d2.div_(-bandwidth).exp_()


@pytest.mark.parametrize("dim", [1, 5])
def test_kernel_chunks_and_fp32_copy_are_exact(dim):
    g = torch.Generator().manual_seed(dim)
    a, b = torch.randn(301, dim, generator=g, dtype=torch.float64), torch.randn(157, dim, generator=g,
                                                                                dtype=torch.float64)
    out32 = torch.empty(301, 157)
    k = kernel_matrix(a, b, kernel="gaussian", bandwidth=1.7, chunk=13 if dim == 1 else None, out32=out32)
    assert torch.equal(k, _kernel_by_matmul(a, b, 1.7))
    assert torch.equal(out32, k.float())
    pool = torch.cat([a, b])
    kp = kernel_matrix(pool, pool, kernel="gaussian", bandwidth=1.7)
    assert mmd_permutation(kp, 301, permutations=30, seed=0) == mmd_permutation(
        kp, 301, permutations=30, seed=0, k_pool32=kp.float())


@pytest.mark.parametrize("estimator", ["w1", "mmd"])
def test_scratch_blocks_reused_or_recomputed_give_the_same_audit(estimator):
    """Inside reuse_scratch, 1-d audits read fit's kernel block from a per-thread scratch buffer; after another
    fit overwrote it, or after the scratch was released, they recompute it: the same result every way."""
    rng = np.random.default_rng(2)
    m, n, f = rng.normal(0.0, 1.0, 150), rng.normal(1.0, 1.0, 180), rng.normal(0.5, 1.0, 120)
    with reuse_scratch():
        a = SMI(estimator=estimator, n_bootstrap=50, n_permutations=20).fit(m, n)
        first = a.estimate(f).to_dict()
        SMI(estimator=estimator, n_bootstrap=5, n_permutations=20).fit(n[:90], m[:120])  # takes the scratch over
        again = a.estimate(f).to_dict()
    released = a.estimate(f).to_dict()
    own = SMI(estimator=estimator, n_bootstrap=50, n_permutations=20).fit(m, n).estimate(f).to_dict()
    for d in (first, again, released, own):
        d.pop("seconds")
    assert again == first == released == own


def test_smi_mmd_estimate_and_range_equal_a_from_scratch_computation():
    """The mmd audit (scratch blocks, 1-d product kernels) against the closed form on kernel blocks built by the
    previous matmul formula: fp64 full-sample means, fp32 replicate means, the same multinomial counts."""
    from paperlab.audit.kernels import cross_mean, mixture_estimate, self_mean

    rng = np.random.default_rng(11)
    m, n = rng.normal(0.0, 1.0, 250), rng.normal(1.2, 1.0, 300)
    f = np.concatenate([rng.normal(1.2, 1.0, 90), rng.normal(0.0, 1.0, 110)])
    lm, ln, lf = rng.integers(0, 4, 250), rng.integers(0, 4, 300), rng.integers(0, 4, 200)
    smi = SMI(estimator="mmd", n_bootstrap=300, n_permutations=20, seed=4).fit(m, n, member_labels=lm,
                                                                              nonmember_labels=ln)
    res = smi.estimate(f, labels=lf)
    wm0, wn0 = smi._class_weights(lf)
    ft, mt, nt = smi._standardise(f[:, None]), smi.member_, smi.nonmember_
    h = smi.bandwidth_
    blocks = tuple(_kernel_by_matmul(a, b, h) for a, b in ((ft, nt), (ft, mt), (mt, nt), (mt, mt), (nt, nt), (ft, ft)))

    def estimates(counts, dt):
        w = (torch.as_tensor(counts[0], dtype=dt), torch.as_tensor(counts[1] * wm0[:, None], dtype=dt),
             torch.as_tensor(counts[2] * wn0[:, None], dtype=dt))
        k = tuple(x.to(dt) for x in blocks)
        means = (cross_mean(k[0], w[0], w[2]), cross_mean(k[1], w[0], w[1]), cross_mean(k[2], w[1], w[2]),
                 self_mean(k[3], w[1]), self_mean(k[4], w[2]), self_mean(k[5], w[0]))
        return mixture_estimate(*(x.double() for x in means))[0].numpy()

    assert res.raw_rate == estimates(tuple(np.ones((k, 1)) for k in (200, 250, 300)), torch.float64)[0]
    g = np.random.default_rng([4, 7])
    reps = np.clip(estimates(tuple(resample_counts(g, k, 300) for k in (200, 250, 300)), torch.float32), 0.0, 1.0)
    assert (res.low, res.high) == tuple(np.quantile(reps[np.isfinite(reps)], [0.025, 0.975]))
