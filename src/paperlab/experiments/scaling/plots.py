"""Plots of fitted scaling laws (Effective Frontiers, arXiv 2602.02593): fitted vs observed loss, isoFLOP bins.

Used by the ``chinchilla`` and ``memorization`` experiments and by ``paperlab scaling fit``. Matplotlib is
imported at call time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from paperlab.experiments.base import Figure
from paperlab.tables import save_figure

__all__ = ["isoflop_bins", "memorization_curves", "observed_vs_fitted", "plain_log_ticks"]


def plain_log_ticks(axis: Any, lo: float, hi: float, *, n: int = 5) -> None:
    """About ``n`` plain labels ("2.1", "2.6") on a log axis from ``lo`` to ``hi`` (under a decade).

    Matplotlib labels such an axis with its minor ticks as "2.2x10^0"; on a 4-inch panel those labels overlap.
    Candidates are fine 1-2-5 steps, thinned so neighbours sit at least 1/(n + 1) of the axis apart in log
    (equal linear steps alone crowd at the top of a log axis).
    """
    from matplotlib.ticker import FixedLocator, MaxNLocator, NullFormatter, StrMethodFormatter

    cand = np.asarray(MaxNLocator(nbins=3 * n, steps=[1, 2, 5, 10]).tick_values(lo, hi))  # stubs: a Sequence
    cand = cand[(cand >= lo) & (cand <= hi)]
    min_gap = math.log(hi / lo) / (n + 1)
    ticks = [float(cand[0])]
    for t in cand[1:]:
        if math.log(t / ticks[-1]) >= min_gap:
            ticks.append(float(t))
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(StrMethodFormatter("{x:.3g}"))
    axis.set_minor_formatter(NullFormatter())


def observed_vs_fitted(ax: Any, observed: np.ndarray, fitted: np.ndarray, log10_C: np.ndarray, *,
                       title: str) -> Any:
    """Scatter [n] fitted against [n] observed loss on log axes, coloured by log10 compute, with y = x dashed.

    Returns the scatter (for a colour bar). The y label is left to the caller (panels may share it).
    """
    sc = ax.scatter(observed, fitted, c=log10_C, s=8, cmap="viridis")
    lims = [float(observed.min()), float(observed.max())]
    ax.plot(lims, lims, "k--", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="observed loss", title=title)
    lo, hi = min(lims[0], float(fitted.min())), max(lims[1], float(fitted.max()))
    plain_log_ticks(ax.xaxis, lo, hi)
    plain_log_ticks(ax.yaxis, lo, hi)
    return sc


def _sci(x: float) -> str:
    """2.5e18 -> "$2.5\\times10^{18}$" for a legend."""
    e = math.floor(math.log10(x))
    return rf"${x / 10**e:.1f}\times10^{{{e}}}$"


def isoflop_bins(ax: Any, N: np.ndarray, C: np.ndarray, loss: np.ndarray, law: Any, *, n_bins: int = 7) -> None:
    """Runs ([n] N, compute C, loss) in ``n_bins`` equal log-C bins as approximate isoFLOP curves, each with
    ``law(N, C / 6N)`` at the bin's central C; bins with fewer than 3 runs are skipped. The legend names each bin."""
    from matplotlib.lines import Line2D

    lC = np.log10(C)
    edges = np.linspace(lC.min(), lC.max(), n_bins + 1)
    which = np.clip(np.searchsorted(edges, lC, side="right") - 1, 0, n_bins - 1)  # a run on an edge: one bin
    for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        m = which == b
        if m.sum() < 3:
            continue
        mid = 10 ** ((lo + hi) / 2)
        dots = ax.scatter(N[m], loss[m], s=8, label=f"C ≈ {_sci(mid)} ({int(m.sum())} runs)")
        Ns = np.geomspace(N[m].min(), N[m].max(), 50)
        ax.plot(Ns, law(Ns, mid / (6 * Ns)), color=dots.get_facecolor()[0], lw=1)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.4", lw=1))
    labels.append("fitted law at the bin's central C")
    # outside the axes: inside, it covers the high-loss ends of the small-budget curves
    ax.legend(handles, labels, fontsize=7, title="log-C bin (FLOP)", title_fontsize=7, loc="upper left",
              bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    ax.set(xscale="log", xlabel="N (parameters)", ylabel="loss")


def memorization_curves(first: dict[float, dict[str, Any]], out_dir: Any) -> Any:
    """Error vs N, D and T per zipf_alpha (one seed's sweep each) with the predicted slopes as dotted guides.

    ``first`` maps zipf_alpha -> a :func:`paperlab.scaling.memorization.sweep` result. Returns a Figure.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))

    def guide(ax: Any, x: Any, y0: float, slope: float, label: str) -> None:  # the predicted law through point 1
        x = np.asarray(x, dtype=float)
        ax.loglog(x, y0 * (x / x[0]) ** slope, ":", color="gray", label=label)

    for a, r in first.items():
        axes[0].loglog(r["N"], r["error_N"], "o-", label=f"alpha={a}")
        guide(axes[0], r["N"], r["error_N"][0], -(a - 1), f"theory gamma=1: -{a - 1:.2f}")
        axes[1].loglog(r["D"], r["error_D"], "o-", label=f"alpha={a}")
        axes[1].loglog(r["D"], r["unseen_D"], "x", color="gray", ms=4)
        guide(axes[1], r["D"], r["error_D"][0], -(a - 1) / a, f"theory: -{(a - 1) / a:.2f}")
        axes[2].loglog(r["T"], r["error_T_sgd"], "o-", label=f"SGD alpha={a}")
        axes[2].loglog(r["T"], r["error_T_adam"], "s--", label=f"Adam alpha={a}")
        guide(axes[2], r["T"], r["error_T_sgd"][0], -(a - 1) / a, f"theory opt_bias=1: -{(a - 1) / a:.2f}")
    from matplotlib.ticker import NullFormatter

    for ax, x in zip(axes, ("N (parameters)", "D (draws; x: unseen mass)", "T (full-batch steps)"), strict=True):
        ax.set(xlabel=x, ylabel="Zipf-weighted error")
        ax.xaxis.set_minor_formatter(NullFormatter())  # N spans about a decade: minor labels ran into each other
        ax.legend(fontsize=7)
    fig.tight_layout()
    return Figure(file=save_figure(fig, out_dir, "memorization_curves"),
                  caption="Zipf memorisation: error vs N, D and T (first seed); dotted: predicted slopes; "
                          "x: mass of the keys the draws missed")
