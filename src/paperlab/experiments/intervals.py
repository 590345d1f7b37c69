"""Two-sided 95% intervals of a mean over seeds: Student t, or the expanded percentile bootstrap."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from paperlab._validate import check_choice

__all__ = ["BOOTSTRAP_RESAMPLES", "LEVEL", "MIN_BOOTSTRAP_SEEDS", "confidence_intervals"]

LEVEL = 0.95
MIN_BOOTSTRAP_SEEDS = 10  # below this a bootstrap distribution is too discrete to hold its level
BOOTSTRAP_RESAMPLES = 4000  # the expanded tail at n = 10 is 0.86%: about 34 resamples beyond each end


def confidence_intervals(effects: np.ndarray | Sequence[float], *, method: str = "t",
                         seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """Two-sided 95% intervals of the mean, one per row.

    Args:
        effects: ``[D, n]`` (or ``[n]``) per-seed effects, n >= 2.
        method: ``"t"`` (Student t, df = n - 1) or ``"bootstrap"`` (expanded percentile bootstrap over seeds,
            which keeps each seed's arms paired; used only when n >= 10, else t).
        seed: seeds the ``np.random.Generator`` of the bootstrap (one resample set shared by the D rows).

    Returns:
        ``(low [D], high [D], method in words)``.
    """
    check_choice("method", method, ("t", "bootstrap"))
    x = np.atleast_2d(np.asarray(effects, dtype=float))
    n = x.shape[-1]
    if n < 2:
        raise ValueError(f"an interval needs at least 2 values per row, got effects of shape {x.shape}")
    tcrit = float(stats.t.ppf(0.5 + LEVEL / 2, n - 1))
    if method == "bootstrap" and n >= MIN_BOOTSTRAP_SEEDS:
        counts = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=BOOTSTRAP_RESAMPLES)
        means = x @ counts.T / n  # [D, B]
        # Widen the percentile level so that, for normal data, it matches the t interval's width (Hesterberg).
        tail = float(stats.norm.sf(math.sqrt(n / (n - 1)) * tcrit))
        low, high = np.quantile(means, [tail, 1.0 - tail], axis=-1)
        return low, high, f"expanded percentile bootstrap over seeds (B={BOOTSTRAP_RESAMPLES}, seed={seed})"
    mean, half = x.mean(axis=-1), tcrit * x.std(axis=-1, ddof=1) / math.sqrt(n)
    fallback = f"; bootstrap needs >= {MIN_BOOTSTRAP_SEEDS} seeds" if method == "bootstrap" else ""
    return mean - half, mean + half, f"Student t (df={n - 1}{fallback})"
