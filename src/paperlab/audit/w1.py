"""The ``w1`` mixture-proportion estimator of :class:`paperlab.audit.SMI` and its bootstrap range, fast.

Reconstruction (arXiv 2602.01150 names "Wasserstein"; the form is ours): minimise
``W(pi) = int |F_F - pi F_N - (1 - pi) F_M| dt`` between weighted empirical CDFs of a scalar score. With
``a_j = F_F - F_M`` and ``b_j = F_N - F_M`` on interval ``j`` of the pooled grid (length ``dt_j``),
``W = sum_j dt_j |b_j| |a_j / b_j - pi|`` is convex and piecewise linear: its minimiser is the weighted median
of the ratios ``a_j / b_j`` with weights ``dt_j |b_j|``. Clipping it to [0, 1] gives the constrained minimiser.

Three implementations of one computation (weights ``w [n, B]``: one column per bootstrap replicate):

- :func:`w1_proportion_reference`: the definition, one replicate at a time (readable, slow).
- :func:`w1_proportion`: every replicate at once, ``chunk`` replicates per step; bitwise equal to the
  reference (tested). The CDFs are cumulative sums of each set's weights in grid order, read off at the grid.
- :func:`w1_range`: only the percentile range ``np.quantile(clip(replicates, 0, 1), q)``. The percentiles
  need a few order statistics of the replicates, not all replicates exactly: one weighted histogram of the
  ratios per replicate (``bins`` cells on (0, 1], plus ``<= 0`` and ``> 1``; no sort) finds the cell holding
  each replicate's weighted median, and only the replicates in the cells holding the needed order statistics
  are computed exactly (:func:`w1_proportion`). Equal to the reference's range (tested); a zero end may differ
  in sign (``-0.0`` vs ``0.0``).

The histogram sums the same weights as the reference's sorted cumulative sum, in another order: a replicate
could land in a neighbouring cell only if its weighted-median threshold fell within rounding (~1e-16 relative)
of a cell edge. Every exactly computed replicate is checked against its cell; a mismatch falls back to
computing all replicates exactly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["w1_proportion", "w1_proportion_reference", "w1_range"]

_TOL = 1e-12  # cumsum rounding: equal CDFs must give ratios of exactly 0 (or 1)


def w1_proportion_reference(s_f: np.ndarray, s_m: np.ndarray, s_n: np.ndarray,
                            wf: np.ndarray, wm: np.ndarray, wn: np.ndarray) -> np.ndarray:
    """Unclipped minimiser of ``W(pi)`` per replicate, one replicate at a time (the readable reference).

    Args:
        s_f, s_m, s_n: ``[nF]``, ``[nM]``, ``[nN]`` scalar scores; wf, wm, wn: ``[n*, B]`` weights.

    Returns:
        ``[B]``: the weighted median of ``a_j / b_j`` (NaN where no interval has ``F_N != F_M``).
    """
    pooled = np.concatenate([s_f, s_m, s_n])
    order = np.argsort(pooled, kind="stable")
    gaps = np.diff(pooled[order])
    n_f, n_m = len(s_f), len(s_m)
    out = np.empty(wf.shape[1])
    for b in range(wf.shape[1]):
        cdfs = []
        for lo, hi, w in ((0, n_f, wf[:, b]), (n_f, n_f + n_m, wm[:, b]), (n_f + n_m, len(pooled), wn[:, b])):
            full = np.zeros(len(pooled))
            full[lo:hi] = w / w.sum()
            cdfs.append(np.cumsum(full[order])[:-1])
        a, bb = cdfs[0] - cdfs[1], cdfs[2] - cdfs[1]
        a[np.abs(a) < _TOL] = 0.0
        a = np.where(np.abs(a - bb) < _TOL, bb, a)
        keep = np.abs(bb) > _TOL
        if not keep.any():
            out[b] = np.nan
            continue
        ratio, weight = a[keep] / bb[keep], gaps[keep] * np.abs(bb[keep])
        idx = np.argsort(ratio, kind="stable")
        cum = np.cumsum(weight[idx])
        out[b] = ratio[idx][np.searchsorted(cum, 0.5 * cum[-1])]
    return out


class _Grid:
    """The pooled grid of three score sets: interval lengths ``gaps [J]`` and, per set, the order of its points
    along the grid and how many of them lie at or left of each interval's start (``[J]``)."""

    def __init__(self, s_f: np.ndarray, s_m: np.ndarray, s_n: np.ndarray) -> None:
        pooled = np.concatenate([s_f, s_m, s_n])
        order = np.argsort(pooled, kind="stable")
        self.gaps = np.diff(pooled[order])
        rank = np.empty(len(pooled), dtype=np.int64)
        rank[order] = np.arange(len(pooled))
        bounds = np.cumsum([0, len(s_f), len(s_m), len(s_n)])
        self.sets = []
        for i in range(3):
            r = rank[bounds[i]:bounds[i + 1]]
            on_grid = np.zeros(len(pooled), dtype=np.int64)
            on_grid[r] = 1
            self.sets.append((np.argsort(r), np.cumsum(on_grid)[:-1]))

    def ratios(self, rows: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ratio, weight, any_kept)`` for weight rows ``(wF, wM, wN)``, each ``[c, n*]`` C-contiguous.

        ``ratio, weight [c, J]``: dropped intervals (``|b_j| <= 1e-12``) get ratio ``inf`` and weight 0, so they
        sort last and add nothing; the reference's arithmetic otherwise (a cumulative sum with the other sets'
        zeros left out adds the same numbers in the same order).
        """
        cdfs = []
        for (along, count), w in zip(self.sets, rows, strict=True):
            cum = np.zeros((len(w), w.shape[1] + 1))
            np.cumsum((w / w.sum(1, keepdims=True))[:, along], axis=1, out=cum[:, 1:])
            cdfs.append(cum[:, count])
        a = np.subtract(cdfs[0], cdfs[1], out=cdfs[0])
        bb = np.subtract(cdfs[2], cdfs[1], out=cdfs[2])
        np.copyto(a, 0.0, where=np.abs(a) < _TOL)
        diff = np.subtract(a, bb, out=cdfs[1])
        np.copyto(a, bb, where=np.abs(diff, out=diff) < _TOL)
        weight = np.abs(bb)
        drop = weight <= _TOL
        ratio = np.divide(a, bb, out=a, where=~drop)
        ratio[drop] = np.inf
        weight = np.multiply(self.gaps, weight, out=weight)
        weight[drop] = 0.0
        return ratio, weight, ~np.all(drop, axis=1)


def _rows(w: np.ndarray, cols: slice | np.ndarray) -> np.ndarray:
    """Replicate columns of ``w [n, B]`` as C-contiguous rows ``[c, n]`` (row sums then match the reference's)."""
    return np.ascontiguousarray(w[:, cols].T)


def _weighted_median(ratio: np.ndarray, weight: np.ndarray, any_kept: np.ndarray) -> np.ndarray:
    """Per row: the first ratio in stable sorted order whose cumulative weight reaches half the total."""
    order = np.argsort(ratio, axis=1, kind="stable")
    cum = np.cumsum(np.take_along_axis(weight, order, 1), axis=1)
    pos = np.minimum((cum < 0.5 * cum[:, -1:]).sum(1), ratio.shape[1] - 1)  # searchsorted(cum, half) per row
    rows = np.arange(len(ratio))
    return np.where(any_kept, ratio[rows, order[rows, pos]], np.nan)


def w1_proportion(s_f: np.ndarray, s_m: np.ndarray, s_n: np.ndarray, wf: np.ndarray, wm: np.ndarray,
                  wn: np.ndarray, *, chunk: int = 64) -> np.ndarray:
    """Unclipped minimiser of ``W(pi)`` per replicate, ``chunk`` replicates at a time.

    Same arguments and result as :func:`w1_proportion_reference`, bitwise.
    """
    return _proportions(_Grid(s_f, s_m, s_n), (wf, wm, wn), np.arange(wf.shape[1]), chunk=chunk)


def _proportions(grid: _Grid, w: tuple[np.ndarray, ...], cols: np.ndarray, *, chunk: int) -> np.ndarray:
    out = np.empty(len(cols))
    for i in range(0, len(cols), chunk):
        sel = cols[i:i + chunk]
        out[i:i + chunk] = _weighted_median(*grid.ratios(tuple(_rows(x, sel) for x in w)))
    return out


def _cells(ratio: np.ndarray, bins: int) -> np.ndarray:
    """Cell of each ratio: -1 for ``r <= 0``, ``ceil(r bins) - 1`` for ``r`` in (0, 1], ``bins`` for ``r > 1``.

    Exact and monotone (``bins`` is a power of two, so ``r * bins`` is not rounded); clipping maps the cells
    -1 and ``bins`` to exactly 0 and 1 and leaves the others unchanged.
    """
    return np.clip(np.ceil(ratio * bins), 0, bins + 1).astype(np.int64) - 1


_NAN, _OPEN = -3, -2  # cell codes: no interval kept (NaN estimate); zero total weight (computed exactly)


def _replicate_cells(grid: _Grid, w: tuple[np.ndarray, ...], bins: int, chunk: int) -> np.ndarray:
    """The cell of every replicate's weighted median, from a weighted histogram of its ratios (no sort)."""
    n_rep = w[0].shape[1]
    out = np.empty(n_rep, dtype=np.int64)
    width = bins + 2
    for b0 in range(0, n_rep, chunk):
        ratio, weight, any_kept = grid.ratios(tuple(_rows(x, slice(b0, b0 + chunk)) for x in w))
        c = len(ratio)
        shifted = np.ceil(np.multiply(ratio, bins, out=ratio), out=ratio)
        np.clip(shifted, 0, bins + 1, out=shifted)  # the cell (see _cells) plus one, as a float
        flat = np.add(shifted, width * np.arange(c)[:, None], out=shifted).astype(np.int64).ravel()
        hist = np.bincount(flat, weights=weight.ravel(), minlength=c * width).reshape(c, width)
        cum = np.cumsum(hist, axis=1)
        half = 0.5 * cum[:, -1:]
        cell = (cum < half).sum(1) - 1  # first cell whose cumulative weight reaches half the total
        cell[half[:, 0] <= 0] = _OPEN
        cell[~any_kept] = _NAN
        out[b0:b0 + c] = cell
    return out


def w1_range(s_f: np.ndarray, s_m: np.ndarray, s_n: np.ndarray, wf: np.ndarray, wm: np.ndarray, wn: np.ndarray,
             q: np.ndarray, *, bins: int = 256, chunk: int = 64) -> np.ndarray:
    """``np.quantile(clip(r, 0, 1), q)`` over the finite replicates ``r`` of :func:`w1_proportion_reference`.

    Args:
        s_f, s_m, s_n, wf, wm, wn: as :func:`w1_proportion_reference` (``B`` replicates).
        q: ``[k]`` quantile levels in [0, 1].

    Returns:
        ``[k]`` (NaN when no replicate is finite); computes only the replicates in the histogram cells that hold
        the needed order statistics.
    """
    if bins < 1 or bins & (bins - 1):
        raise ValueError(f"bins must be a power of two (cells are then exact), got {bins}")
    grid, w = _Grid(s_f, s_m, s_n), (wf, wm, wn)
    cell = _replicate_cells(grid, w, bins, chunk)
    exact = np.full(len(cell), np.nan)
    open_ = np.flatnonzero(cell == _OPEN)
    if len(open_):
        exact[open_] = _proportions(grid, w, open_, chunk=chunk)
        cell[open_] = _cells(exact[open_], bins)
    finite = cell != _NAN
    ranked = np.sort(cell[finite])
    if not len(ranked):
        return np.full(len(q), np.nan)  # no finite replicate: no range
    top = len(ranked) - 1
    lo = np.floor(np.asarray(q, dtype=float) * top).astype(np.int64)
    ranks = np.clip(np.concatenate([lo - 1, lo, lo + 1, lo + 2]), 0, top)  # a margin around floor / ceil
    need = np.setdiff1d(ranked[ranks], [-1, bins])
    todo = np.flatnonzero(np.isin(cell, need) & np.isnan(exact))
    exact[todo] = _proportions(grid, w, todo, chunk=chunk)
    done = np.flatnonzero(~np.isnan(exact))
    if (_cells(exact[done], bins) != cell[done]).any():  # a cell decided by rounding: compute everything
        reps = _proportions(grid, w, np.arange(len(cell)), chunk=chunk)
        return np.quantile(np.clip(reps, 0.0, 1.0)[np.isfinite(reps)], q)
    # stand-ins keep every order statistic in its cell: 0 / 1 at the ends, cell centres for the cells not needed
    vals = np.where(cell == -1, 0.0, np.where(cell == bins, 1.0, (cell + 0.5) / bins))
    vals[done] = np.clip(exact[done], 0.0, 1.0)
    return np.quantile(vals[finite], q)
