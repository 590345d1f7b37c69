"""Bootstrap intervals for SMI's forgetting rate (arXiv 2602.01150 names "bootstrap reference ranges"; the
interval forms are the textbook ones, Efron & Tibshirani 1993, ch. 13-14; the choice between them is ours).

For an unclipped full-sample estimate ``t``, replicates ``t*_b`` (resampling F, M and N) and ``q = (alpha/2,
1 - alpha/2)``, every interval is clipped to [0, 1] at the end:

- ``percentile``: the quantiles ``q`` of the clipped replicates.
- ``basic``: ``[2 t - Q(1 - alpha/2), 2 t - Q(alpha/2)]`` with ``Q`` the replicates' quantile function: it
  reflects the replicates' spread around ``t``, so a truth at 0 with ``t`` just below 0 is not stuck at [0, 0].
- ``bca``: the quantiles ``Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q)))`` of the replicates, with the bias
  correction ``z0 = Phi^-1(share of t*_b below t, ties half)`` and the acceleration ``a`` from a grouped
  jackknife (:func:`acceleration`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from paperlab.audit.base import resample_count_rows

__all__ = ["INTERVALS", "JACKKNIFE_GROUPS", "acceleration", "bootstrap_interval", "jackknife_weights",
           "stratified_count_rows"]

INTERVALS = ("percentile", "basic", "bca")
JACKKNIFE_GROUPS = 20


def stratified_count_rows(rng: np.random.Generator, groups: np.ndarray, replicates: int) -> np.ndarray:
    """Bootstrap counts ``int64 [replicates, n]`` that resample each group (class) within itself, so every
    replicate keeps the group sizes; groups in sorted order, each drawn as :func:`resample_count_rows`."""
    out = np.zeros((replicates, len(groups)), dtype=np.int64)
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        out[:, idx] = resample_count_rows(rng, len(idx), replicates)
    return out


def jackknife_weights(n: int, *, groups: int = JACKKNIFE_GROUPS, seed: int) -> np.ndarray:
    """Delete-a-group jackknife weights ``[n, groups]``: column ``g`` is 0 on a seeded ``1/groups`` share of the
    points and 1 elsewhere (``min(groups, n)`` columns)."""
    k = min(groups, n)
    assign = np.random.default_rng(seed).permutation(n) % k
    return (assign[:, None] != np.arange(k)[None, :]).astype(float)


def acceleration(deleted: list[np.ndarray]) -> float:
    """BCa acceleration from delete-a-group estimates, one ``[G]`` array per resampled set (F, M, N).

    ``a = sum v^3 / (6 (sum v^2)^(3/2))`` over ``v = mean_g t_(g) - t_(g)`` of every set: the multi-sample
    jackknife form (Efron & Tibshirani 1993, ch. 14) with groups in place of single points (a group's ``v`` is
    about the sum of its points' own, and the ratio does not depend on that scale when every set has the same
    number of groups). 0 when the deletions do not move the estimate.
    """
    v = np.concatenate([d.mean() - d for d in deleted])
    den = float((v * v).sum())
    return float((v ** 3).sum() / (6.0 * den ** 1.5)) if den > 0 and np.isfinite(den) else 0.0


def bootstrap_interval(estimate: float, replicates: np.ndarray, *, alpha: float, kind: str,
                       accel: float = 0.0) -> tuple[float, float]:
    """The ``kind`` interval at level ``1 - alpha`` from the unclipped ``estimate`` and ``replicates [B]`` (NaN
    replicates dropped; ``(nan, nan)`` if none is left), clipped to [0, 1]."""
    reps = replicates[np.isfinite(replicates)]
    if not len(reps):
        return math.nan, math.nan
    q = np.array([alpha / 2, 1 - alpha / 2])
    if kind == "percentile":
        lo, hi = np.quantile(np.clip(reps, 0.0, 1.0), q)
    elif kind == "basic":
        lo, hi = 2.0 * estimate - np.quantile(reps, q[::-1])
    else:
        share = (np.sum(reps < estimate) + 0.5 * np.sum(reps == estimate)) / len(reps)
        z0 = ndtri(min(max(share, 0.5 / len(reps)), 1.0 - 0.5 / len(reps)))  # finite when every t* is on one side
        zq = ndtri(q)
        levels = ndtr(z0 + (z0 + zq) / np.maximum(1.0 - accel * (z0 + zq), 1e-12))
        lo, hi = np.quantile(reps, levels)
    return float(np.clip(lo, 0.0, 1.0)), float(np.clip(hi, 0.0, 1.0))
