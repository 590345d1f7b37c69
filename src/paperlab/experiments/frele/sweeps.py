"""The FreLE ``sweeps`` experiment: delta (keep ratio 1), keep ratio (delta 0.3) and the peak weighting, each point
a full DLinear training run, cached run by run so an interrupted ``--full`` run resumes where it stopped.

Claims are decided per seed, as in the benchmark: a seed's effect is the mean over its (dataset, horizon) cells,
so the interval comes from the seeds, never from treating cells as independent replicates.
"""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path
from typing import Any

from paperlab._runtime import torch_threads
from paperlab.data.registry import present_files
from paperlab.experiments.base import Figure, Result, Verdict, mean_std
from paperlab.experiments.cache import cache_key, load_or_compute
from paperlab.experiments.frele import bench as fb
from paperlab.experiments.frele import plots as fp
from paperlab.experiments.frele.configs import SCALE, SweepConfig
from paperlab.experiments.verdicts import verdict_from_effect, verdict_from_threshold
from paperlab.models.forecast_train import ForecastTrainConfig

__all__ = ["WEIGHTINGS", "per_seed", "run_sweeps"]

WEIGHTINGS: dict[str, dict[str, object]] = {
    "dc1": {},  # the default (weight_mode='index_dc1'): peak weight i / K, the DC bin never damped
    "index": {"weight_mode": "index"},  # the literal reading: a DC peak gets 1 / K
    "dc0": {"weight_mode": "index", "index_base": 0},  # 0-based bins: a DC peak gets 0 (DC drops out of L_f)
    "constant": {"weight_mode": "constant"},  # every peak weight K / eta = 1: EFR, the unweighted control
}


def _points(config: SweepConfig) -> list[tuple[str, float, dict[str, object]]]:
    """(sweep, value, FreLE options) of every distinct run; shared runs are listed once (see ``_aliases``)."""
    points: list[tuple[str, float, dict[str, object]]] = [("delta", d, {"delta": d}) for d in config.deltas]
    points += [("keep_ratio", r, {"keep_ratio": r}) for r in config.keep_ratios if r != 1.0 or 0.3 not in
               config.deltas]
    points += [(f"weighting {w}", d, {"delta": d, **WEIGHTINGS[w]}) for w in config.weightings
               for d in config.weighting_deltas if WEIGHTINGS[w] or d not in config.deltas]
    return points


def _aliases(config: SweepConfig, sweep: str, value: float) -> list[tuple[str, float]]:
    """The other sweep points that are the same run as (sweep, value)."""
    out = []
    if sweep == "delta" and value == 0.3 and 1.0 in config.keep_ratios:
        out.append(("keep_ratio", 1.0))
    if sweep == "delta" and "dc1" in config.weightings and value in config.weighting_deltas:
        out.append(("weighting dc1", value))
    return out


def _run(config: SweepConfig, ds: str, h: int, seed: int, opts: dict[str, object], *, out_dir: Path
         ) -> dict[str, Any]:
    """One FreLE training run through a checked cache entry: its row."""
    train = ForecastTrainConfig(epochs=config.epochs, max_train_windows=config.max_train_windows,
                                max_val_windows=config.max_val_windows)
    key = cache_key(train, config.backbone, ds, h, seed, opts, present_files(), code="frele.sweep/1")
    name = f"{config.backbone}-{ds}-{h}-{seed}-{key.short}.json"
    return load_or_compute(Path(out_dir) / "sweep_runs" / name, key, lambda: fb.run_cell(
        config.backbone, ds, h, "frele", seed, config=train, loss_options=opts).row)


def per_seed(rows: list[dict[str, Any]], sweep: str, value: float, *, seeds: tuple[int, ...]
             ) -> dict[int, dict[tuple[str, int], float]]:
    """seed -> {(dataset, H): test MSE} of one sweep point."""
    return {s: {(r["dataset"], r["H"]): r["test_mse"] for r in rows
                if r["sweep"] == sweep and r["value"] == value and r["seed"] == s} for s in seeds}


def _paired(rows, a: tuple[str, float], b: tuple[str, float], seeds, effect) -> list[float]:
    """One value per seed: ``effect(mse_a, mse_b)`` averaged over the (dataset, H) cells both points ran."""
    xa, xb = per_seed(rows, *a, seeds=seeds), per_seed(rows, *b, seeds=seeds)
    out = []
    for s in seeds:
        both = [effect(xa[s][k], xb[s][k]) for k in xa[s] if k in xb[s]]
        if both:
            out.append(statistics.fmean(both))
    return out


def _verdicts(rows: list[dict[str, Any]], config: SweepConfig, notes: list[str]) -> list[Verdict]:
    out = []
    eff = _paired(rows, ("delta", 0.0), ("delta", 0.3), config.seeds, lambda d0, d3: 100 * (d0 - d3) / d0)
    if eff:
        out.append(verdict_from_effect("frele-delta-mix", eff, unit="%", scale_note=SCALE))
    cost = _paired(rows, ("keep_ratio", 0.8), ("keep_ratio", 1.0), config.seeds, lambda k8, k10: 100 * (k8 / k10 - 1))
    if cost:
        out.append(verdict_from_threshold("frele-keep-ratio", cost, target=2.0, higher_is_better=False, unit="%",
                                          scale_note="test MSE increase when keeping 80 % of the bins (one value "
                                          "per seed, the mean over datasets and horizons)"))
        notes.append(f"keep ratio 0.8 vs 1.0: test MSE change {mean_std(cost)[0]:+.2f} %")
    return out


def _mean_pm(values: list[float]) -> str:
    if not values:
        return "-"
    m, sd = mean_std(values)
    return f"{m:.4f} ± {sd:.4f}"


def run_sweeps(config: SweepConfig, *, out_dir: Path) -> Result:
    """Every sweep point x dataset x horizon x seed (cached), the sweep tables and plots, and the verdicts."""
    rows = []
    with torch_threads(config.threads):
        for ds in config.datasets:
            for h in config.horizons:
                for seed in config.seeds:
                    for sweep, value, opts in _points(config):
                        row = _run(config, ds, h, seed, opts, out_dir=out_dir)
                        rows += [{**row, "sweep": s, "value": v}
                                 for s, v in [(sweep, value), *_aliases(config, sweep, value)]]
    res = Result(experiment="sweeps", config=dataclasses.asdict(config), rows=rows)
    for sweep, label in (("delta", "delta"), ("keep_ratio", "keep ratio")):
        table = []
        for v in sorted({r["value"] for r in rows if r["sweep"] == sweep}):
            m, s = mean_std([r["test_mse"] for r in rows if r["sweep"] == sweep and r["value"] == v])
            table.append({label: v, "test MSE mean": m, "std": s})
        res.tables[f"FreLE {label} sweep ({config.backbone}, {list(config.datasets)}, H {list(config.horizons)})"] \
            = table
        file = fp.plot_sweep([t[label] for t in table], [t["test MSE mean"] for t in table],
                             [t["std"] for t in table], out_dir, f"{sweep}_sweep", xlabel=label)
        res.figures.append(Figure(file=file, caption=f"test MSE against FreLE's {label} (mean ± std over runs)"))
    if config.weightings:
        res.tables[f"FreLE peak weighting ({config.backbone}, test MSE mean ± std over runs)"] = [
            {"weighting": w, "options": str(WEIGHTINGS[w]) if WEIGHTINGS[w] else "defaults",
             **{f"delta {d:g}": _mean_pm([r["test_mse"] for r in rows if r["sweep"] == f"weighting {w}"
                                          and r["value"] == d]) for d in config.weighting_deltas}}
            for w in config.weightings]
    res.verdicts.extend(_verdicts(rows, config, res.notes))
    if any(r["data"] == "generated" for r in rows):
        res.notes.append("data files not found: the sweeps ran on a GENERATED seasonal series")
    return res
