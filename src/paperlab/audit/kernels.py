"""Kernel means, the closed-form mixture-proportion estimate and the MMD permutation test (fp64).

Reconstruction (arXiv 2602.01150 names MMD; the paper's exact estimator is unknown). With
``kbar(A, B)`` the mean kernel value over ``A x B`` (a U-statistic, no self-pairs, when ``A = B``)::

    pi = [kbar(F,N) - kbar(F,M) - kbar(M,N) + kbar(M,M)] / [kbar(N,N) - 2 kbar(M,N) + kbar(M,M)]

is the minimiser of ``MMD(P_F, pi P_N + (1 - pi) P_M)``. Every mean here takes per-point weights
``w`` (multinomial bootstrap counts times class weights), batched over replicates ``[n, B]``:
``kbar_w(A, B) = w_A^T K_AB w_B / (sum w_A sum w_B)``; within a set, pairs of the same original index are
dropped: ``(w^T K w - sum_i w_i^2 K_ii) / ((sum w)^2 - sum_i w_i^2)``.
"""

from __future__ import annotations

import numpy as np
import torch

from paperlab._validate import check_choice

__all__ = ["KERNELS", "cross_mean", "kernel_matrix", "median_sq_distance", "mixture_estimate", "mmd_permutation",
           "self_mean"]

KERNELS = ("gaussian", "laplacian", "energy")


def _sqdist(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``|a_i|^2 + |b_j|^2 - 2 a_i.b_j`` clamped at 0, written into ``out [n, m]`` when given."""
    # d = 1: one product per entry, and (-2 a) b rounds exactly as -2 (a b): no matmul needed
    d2 = torch.mul(a * -2.0, b.T, out=out) if a.shape[1] == 1 else torch.mm(a, b.T, out=out).mul_(-2.0)
    return d2.add_((a * a).sum(1)[:, None]).add_((b * b).sum(1)[None, :]).clamp_min_(0.0)


def kernel_matrix(a: torch.Tensor, b: torch.Tensor, *, kernel: str, bandwidth: float, chunk: int | None = None,
                  out32: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """``K[i, j] = k(a_i, b_j)`` for ``a [n, d]``, ``b [m, d]``, computed in row chunks of ``chunk``.

    Kernels: ``gaussian`` ``exp(-|x-y|^2 / h)``, ``laplacian`` ``exp(-|x-y| / sqrt(h))`` and ``energy``
    ``-|x-y|`` (no bandwidth). Returns ``[n, m]`` in ``a``'s dtype. Each chunk is computed in place in the
    output. ``chunk=None``: 64 rows for ``d = 1`` (in cache; the values do not depend on the chunk, one product
    per entry), else 2048 (a matmul's rounding can depend on its row count). ``out32`` (``[n, m]`` float32), if
    given, receives ``K.float()`` chunk by chunk; ``out`` (``[n, m]``, ``a``'s dtype), if given, receives ``K``.
    """
    check_choice("kernel", kernel, KERNELS)
    chunk = chunk or (64 if a.shape[1] == 1 else 2048)
    out = torch.empty(len(a), len(b), dtype=a.dtype) if out is None else out
    b = b.contiguous()
    for i in range(0, len(a), chunk):
        d2 = _sqdist(a[i:i + chunk], b, out[i:i + chunk])
        if kernel == "gaussian":
            d2.div_(-bandwidth).exp_()
        elif kernel == "laplacian":
            d2.sqrt_().div_(-(bandwidth ** 0.5)).exp_()
        else:
            d2.sqrt_().neg_()
        if out32 is not None:
            out32[i:i + chunk] = d2
    return out


def median_sq_distance(x: torch.Tensor, *, max_points: int = 1000, seed: int = 0) -> float:
    """Median pairwise squared distance over distinct pairs of a seeded subsample of ``x [n, d]``."""
    if len(x) > max_points:
        g = torch.Generator().manual_seed(seed)
        x = x[torch.randperm(len(x), generator=g)[:max_points]]
    d2 = _sqdist(x, x)
    iu = torch.triu_indices(len(x), len(x), offset=1)
    med = float(d2[iu[0], iu[1]].median())
    return med if med > 0 else 1.0


def cross_mean(k: torch.Tensor, wa: torch.Tensor, wb: torch.Tensor) -> torch.Tensor:
    """Weighted mean of ``k [na, nb]`` under weights ``wa [na, B]``, ``wb [nb, B]``; returns ``[B]``."""
    return (wa * (k @ wb)).sum(0) / (wa.sum(0) * wb.sum(0))


def self_mean(k: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Within-set weighted U-mean of ``k [n, n]`` under ``w [n, B]`` (same-index pairs dropped); ``[B]``."""
    diag = torch.diagonal(k)[:, None]
    total = w.sum(0)
    sq = (w * w).sum(0)
    return ((w * (k @ w)).sum(0) - (diag * w * w).sum(0)) / (total * total - sq)


def mixture_estimate(k_fn, k_fm, k_mn, k_mm, k_nn, k_ff) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Closed-form proportion and residual from the six kernel means (each a ``[B]`` tensor).

    Returns:
        ``(pi_raw, residual, mmd2_mn)``: the unclipped estimate; ``MMD(F, mix) / MMD(M, N)`` at the clipped
        estimate, where ``MMD^2(F, mix) = MMD^2(F,M) - 2 pi <mu_F - mu_M, mu_N - mu_M> + pi^2 MMD^2(M,N)``
        (clamped at 0); and ``MMD^2(M, N)``.
    """
    inner = k_fn - k_fm - k_mn + k_mm
    mmd2_mn = k_nn - 2.0 * k_mn + k_mm
    pi_raw = inner / mmd2_mn
    pi = pi_raw.clamp(0.0, 1.0)
    mmd2_fm = k_ff - 2.0 * k_fm + k_mm
    fit2 = (mmd2_fm - 2.0 * pi * inner + pi * pi * mmd2_mn).clamp_min(0.0)
    residual = fit2.sqrt() / mmd2_mn.clamp_min(1e-300).sqrt()
    return pi_raw, residual, mmd2_mn


def mmd_permutation(k_pool: torch.Tensor, n_first: int, *, permutations: int, seed: int,
                    k_pool32: torch.Tensor | None = None) -> tuple[float, float]:
    """Unbiased ``MMD^2`` between the first ``n_first`` points of a pooled kernel matrix and the rest,
    with a permutation p-value ``(1 + #{perm >= observed}) / (1 + permutations)``.

    Args:
        k_pool: ``[n, n]`` kernel matrix of the pooled sample (first set, then second).
        k_pool32: ``k_pool.float()`` if already computed (e.g. by :func:`kernel_matrix` with ``out32``).
    """
    n = len(k_pool)
    rng = np.random.default_rng(seed)
    masks = np.zeros((n, permutations + 1), dtype=np.float32)
    masks[:n_first, 0] = 1.0
    for p in range(1, permutations + 1):
        masks[rng.permutation(n)[:n_first], p] = 1.0
    # fp32 halves the cost; observed and permuted statistics share the precision
    k32 = k_pool.float() if k_pool32 is None else k_pool32
    a = torch.as_tensor(masks, dtype=torch.float32)
    b = 1.0 - a
    ka = k32 @ a  # one matmul serves all three means: K b = K 1 - K a
    kb = k32.sum(1, keepdim=True) - ka
    diag = torch.diagonal(k32)[:, None]
    n_a, n_b = float(n_first), float(n - n_first)
    k_aa = ((a * ka).sum(0) - (diag * a).sum(0)) / (n_a * (n_a - 1))
    k_bb = ((b * kb).sum(0) - (diag * b).sum(0)) / (n_b * (n_b - 1))
    stat = k_aa + k_bb - 2.0 * (a * kb).sum(0) / (n_a * n_b)
    observed = float(stat[0])
    p_value = float((1 + (stat[1:] >= observed).sum()) / (1 + permutations))
    return observed, p_value
