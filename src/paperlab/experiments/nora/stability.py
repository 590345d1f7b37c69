"""Nora's stability claim measured against every optimizer: row-norm jitter, norm drift and angular spread.

The paper says projecting out the radial component stabilizes weight norms. Nora's own row norms follow a
data-free recursion by construction, so agreement with it is a consistency check. What can fail is the
comparison: the **radial jitter** of a traced matrix, the mean ``|second difference of log row norm|`` per step
divided by the mean angular step of its rows (radial noise per unit of tangential motion, so the lr cancels).
A smooth norm trajectory (Nora) scores near 0; an update with a data-dependent radial part scores higher. The
claim holds when Nora's jitter is below both AdamW's and Muon's on the same seed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from paperlab.experiments.base import mean_std
from paperlab.optim.trace import radial_residual
from paperlab.tables import save_figure

__all__ = ["COMPARATORS", "jitter_effects", "stability_figure", "stability_rows"]

COMPARATORS = ("adamw", "muon")  # the optimizers Nora's norm stability is compared with


_PLOTTED_ROWS = 8


def run_measures(tracer, lrs: list[float], *, row_wise: bool, weight_decay: float) -> dict[str, Any]:
    """What a run keeps of its :class:`~paperlab.optim.trace.RowTracer` (JSON-ready): the stability measures
    and, for the figure, the norm and angle traces of the first 8 rows."""
    norms, angles = tracer.norm_trace(0), tracer.angle_trace(0)
    log_r = norms.log()
    rough = (log_r[2:] - 2 * log_r[1:-1] + log_r[:-2]).abs().mean()
    row_angle = angles.mean(0)  # [rows] mean angular step of each row
    out = {"radial jitter": float(rough / angles.mean().clamp_min(1e-300)),
           "norm drift |log r_end/r_0|": float((log_r[-1] - log_r[0]).abs().mean()),
           "angular step spread (CV over rows)": float(row_angle.std() / row_angle.mean().clamp_min(1e-300)),
           "angular step CV over time": float((angles.std(0) / angles.mean(0).clamp_min(1e-300)).mean())}
    if row_wise:  # the recursion is only defined for row-wise updates
        resid = radial_residual(norms, torch.tensor(lrs), weight_decay=weight_decay)
        out["radial residual (mean, units lr^2)"] = float(resid.mean())
    return {"measures": out, "norms": norms[:, :_PLOTTED_ROWS].tolist(),
            "angles": angles[:, :_PLOTTED_ROWS].tolist()}


def stability_rows(best: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]],
                                                             dict[str, list[dict[str, float]]]]:
    """One table row per optimizer (each measure's mean over its seeds) and the per-seed measures
    ``{optimizer: [measures]}``."""
    per_seed = {name: [run["trace"]["measures"] for run in b["runs"]] for name, b in best.items()}
    rows = []
    for name, seeds in per_seed.items():
        row: dict[str, Any] = {"optimizer": name, "seeds": len(seeds)}
        row.update({key: mean_std([s[key] for s in seeds])[0] for key in seeds[0]})
        rows.append(row)
    return rows, per_seed


def jitter_effects(per_seed: dict[str, list[dict[str, float]]]) -> list[float]:
    """Per seed, ``log(min over comparators of their jitter / Nora's jitter)``: > 0 when Nora is steadier than
    every comparator on that seed. NaN when a run has no finite jitter (a diverged run)."""
    effects = []
    for i, nora in enumerate(per_seed["nora"]):
        others = [per_seed[c][i]["radial jitter"] for c in COMPARATORS if c in per_seed]
        ratio = min(others) / nora["radial jitter"] if nora["radial jitter"] > 0 else math.inf
        effects.append(math.log(ratio) if math.isfinite(ratio) and ratio > 0 else math.nan)
    return effects


def stability_figure(best: dict[str, dict[str, Any]], out_dir: Path, name: str, layer: str) -> str:
    """Row norms (8 rows) and per-step angles of the traced matrix, one column per optimizer (seed 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(best)
    fig, axes = plt.subplots(2, len(names), figsize=(3.6 * len(names), 6), sharex=True, squeeze=False)
    for col, opt in enumerate(names):
        trace = best[opt]["runs"][0]["trace"]
        axes[0, col].plot(trace["norms"])
        axes[0, col].set(title=f"{opt}: row norms", ylabel="||theta_i||" if col == 0 else None)
        axes[1, col].plot(trace["angles"])
        axes[1, col].set(title=f"{opt}: angular step", xlabel="step", ylabel="radians" if col == 0 else None)
    fig.suptitle(f"8 rows of {layer}, each optimizer at its tuned lr (seed 0)")
    fig.tight_layout()
    return save_figure(fig, out_dir, name)
