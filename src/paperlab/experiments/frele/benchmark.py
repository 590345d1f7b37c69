"""The FreLE ``benchmark`` experiment: every (backbone, dataset, horizon, loss, seed) cell, each loss at its own
tuned learning rate, cached cell by cell so an interrupted ``--full`` run resumes.

Learning rates: per (backbone, dataset, loss), :func:`~paperlab.experiments.lr_search.tune_lr` on validation MSE
over the same grid for every loss (the backbone's default lr times ``config.lr_factors``, extended past an edge
optimum), at the dataset's first horizon with the first seed; the other horizons and seeds reuse it.

Claims are decided per seed: a seed's effect is FreLE's relative test-MSE gain over a peer averaged over the
cells, so the interval comes from the seeds (pairs of runs sharing data, backbone and seed), never from treating
cells as independent replicates. The win/tie/loss table decides each cell by its own paired test over seeds.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from paperlab._runtime import torch_threads
from paperlab.data.registry import present_files
from paperlab.experiments.base import Figure, Result, Verdict, mean_std
from paperlab.experiments.cache import cache_key, load_or_compute
from paperlab.experiments.frele import bench as fb
from paperlab.experiments.frele import plots as fp
from paperlab.experiments.frele.configs import SCALE
from paperlab.experiments.lr_search import LRChoice, tune_lr
from paperlab.experiments.verdicts import verdict_from_effect, verdict_from_threshold
from paperlab.models.forecast_train import DEFAULT_LR, ForecastTrainConfig

__all__ = ["PEERS", "run_benchmark", "seed_effects", "seed_means"]

PEERS = (("frele-beats-mse", "mse"), ("frele-beats-mae", "mae"), ("frele-beats-efr", "efr"),
         ("frele-beats-fredf", "fredf"))
_TRACKED = ("mse", "frele")  # losses whose cells record band errors for the figures and the band table


def _cell(config: Any, cell: tuple[str, str, int, str, int], lr: float, *, track: bool, out_dir: Path
          ) -> dict[str, Any]:
    """One training run through a checked cache entry: its row, plus (tracked) band history, per-bin heat-map
    and the mean test amplitude spectra of forecast and target (what the figures need, not the forecasts)."""
    backbone, ds, h, loss, seed = cell
    train = ForecastTrainConfig(epochs=config.epochs, max_train_windows=config.max_train_windows,
                                max_val_windows=config.max_val_windows, lr=lr)
    # the data files in view are part of the key: a cell run on the generated stand-in is not reused once the
    # real file is there
    key = cache_key(train, cell, track, present_files(), code="frele.cell/1")

    def compute() -> dict[str, Any]:
        out = fb.run_cell(backbone, ds, h, loss, seed, config=train, track=track, lr=lr)
        if out.heatmap is None or out.test_pred is None or out.test_target is None:
            return {"row": out.row}
        return {"row": out.row, "history": out.history, "heatmap": out.heatmap.tolist(),
                "amp_pred": fp.mean_amplitude(out.test_pred), "amp_target": fp.mean_amplitude(out.test_target)}

    name = f"{backbone}-{ds}-{h}-{loss}-{seed}-{key.short}.json"
    return load_or_compute(Path(out_dir) / "bench_runs" / name, key, compute)


def _tuned(config: Any, backbone: str, ds: str, h: int, loss: str, *, out_dir: Path) -> LRChoice:
    """The loss's lr on this backbone and dataset: validation MSE of the first seed at horizon ``h``."""
    grid = [DEFAULT_LR[backbone] * f for f in config.lr_factors]
    seed = config.seeds[0]
    # tracked like the evaluation cells, so the run at the chosen lr is the first seed's cell, not trained twice
    return tune_lr(lambda lr: _cell(config, (backbone, ds, h, loss, seed), lr, track=loss in _TRACKED,
                                    out_dir=out_dir)["row"]["val_mse"], grid)


def _lr_rows(choices: dict[tuple[str, str, str], LRChoice]) -> list[dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for (backbone, ds, loss), c in choices.items():
        rows.setdefault((backbone, ds), {"backbone": backbone, "dataset": ds})[loss] = c.cell()
    return list(rows.values())


def seed_effects(rows: list[dict[str, Any]], other: str, *, seeds: tuple[int, ...]) -> list[float]:
    """Per seed: FreLE's test-MSE gain over ``other`` in %, 100 (other - frele) / other, averaged over the cells
    where both ran with that seed (positive = FreLE better). One value per seed that has any such cell."""
    idx = {(r["backbone"], r["dataset"], r["H"], r["seed"], r["loss"]): r["test_mse"] for r in rows}
    out = []
    for s in seeds:
        gains = [100 * (idx[k] - idx[k[:4] + ("frele",)]) / idx[k] for k in idx
                 if k[3] == s and k[4] == other and k[:4] + ("frele",) in idx]
        if gains:
            out.append(statistics.fmean(gains))
    return out


def _verdicts(rows: list[dict[str, Any]], config: Any, scale: str, notes: list[str]) -> list[Verdict]:
    out = []
    for claim, other in PEERS:
        if other not in config.losses or "frele" not in config.losses:
            continue
        eff = seed_effects(rows, other, seeds=config.seeds)
        out.append(verdict_from_effect(claim, eff, unit="%", scale_note=scale))
        if eff:
            m, s = mean_std(eff)
            notes.append(f"FreLE vs {other}: test MSE lower by {m:+.2f} % (sd {s:.2f} over {len(eff)} seeds, each "
                         "the mean over cells; positive = FreLE better)")
    mse_rows = [r for r in rows if r["loss"] == "mse" and "test_HF" in r]
    if mse_rows:
        per_seed = "; one value per seed, the mean over its cells"
        out.append(verdict_from_threshold("hf-error-gt-lf",
                                          seed_means(mse_rows, lambda r: r["test_HF"] / r["test_LF"]),
                                          target=1.0, unit="x",
                                          scale_note="test band RMSE HF / LF under MSE" + per_seed))
        out.append(verdict_from_threshold("hf-relative-error-gt-lf",
                                          seed_means(mse_rows, lambda r: r["test_rel_HF"] / r["test_rel_LF"]),
                                          target=1.0, unit="x",
                                          scale_note="power-normalised band error HF / LF under MSE (I)" + per_seed))
    return out


def seed_means(rows: list[dict[str, Any]], value: Callable[[dict[str, Any]], float]) -> list[float]:
    """Per seed (in order of appearance): the mean over that seed's rows of ``value(row)``, so cells or runs
    sharing a seed are not counted as independent replicates."""
    by_seed: dict[int, list[float]] = {}
    for r in rows:
        by_seed.setdefault(r["seed"], []).append(value(r))
    return [statistics.fmean(v) for v in by_seed.values()]


def run_benchmark(config: Any, *, out_dir: Path) -> Result:
    """Tune each loss's lr, train every cell (cached), then tables, band errors, figures and verdicts."""
    choices: dict[tuple[str, str, str], LRChoice] = {}
    cells: dict[tuple[str, str, int, str, int], dict[str, Any]] = {}
    with torch_threads(config.threads):
        for backbone, datasets, horizons in config.grid:
            for ds in datasets:
                for loss in config.losses:
                    choices[backbone, ds, loss] = _tuned(config, backbone, ds, horizons[0], loss, out_dir=out_dir)
                for h in horizons:
                    for seed in config.seeds:
                        for loss in config.losses:
                            cell = (backbone, ds, h, loss, seed)
                            cells[cell] = _cell(config, cell, choices[backbone, ds, loss].lr,
                                                track=loss in _TRACKED, out_dir=out_dir)
    rows = [c["row"] for c in cells.values()]
    res = Result(experiment="benchmark", config=dataclasses.asdict(config), rows=rows)
    for backbone in dict.fromkeys(g[0] for g in config.grid):
        head = (f"{backbone}: test MSE ± std / MAE ± std (standardised; seeds {list(config.seeds)}; each loss at "
                f"its tuned lr; <= {config.epochs} epochs)")
        res.tables[head] = fb.main_table(rows, backbone, config.losses)
        res.tables[f"{backbone}: FreLE win/tie/loss (paired test per cell over seeds)"] = fb.win_tie_loss(
            rows, backbone, config.losses)
    res.tables["tuned learning rate per loss (validation MSE, first seed, first horizon)"] = _lr_rows(choices)
    res.tables["test band RMSE (Table 1 style), with and without FreLE"] = fb.band_table(rows)
    edge = [f"{b}/{d}/{loss}" for (b, d, loss), c in choices.items() if c.grid_edge]
    res.notes.append("every tuned lr is interior" if not edge else
                     f"lr tuning stopped on a grid edge for {edge}: those comparisons are not at a tuned lr")
    res.figures.extend(_figures(cells, out_dir))
    generated = sorted({r["dataset"] for r in rows if r["data"] == "generated"})
    if generated:
        res.notes.append(f"data files not found for {generated}: those rows ran on a GENERATED seasonal series "
                         "(synthetic_seasonal), not the real dataset; set PAPERLAB_DATA to use the files")
    res.verdicts.extend(_verdicts(rows, config, SCALE, res.notes))
    return res


def _figures(cells: dict[tuple[str, str, int, str, int], dict[str, Any]], out_dir: Path) -> list[Figure]:
    """Band curves, heat-maps and spectra of the first tracked (mse, frele) pair."""
    first = next(iter(cells))[:3] + (next(iter(cells))[4],)
    pair = {loss: cells.get(first[:3] + (loss, first[3])) for loss in ("mse", "frele")}
    mse, fre = pair["mse"], pair["frele"]
    if not (mse and fre and "history" in mse and "history" in fre):
        return []
    tag = f"{first[0]} {first[1]}-{first[2]}"
    curves = fp.plot_band_curves({"MSE": mse["history"], "FreLE": fre["history"]}, out_dir, "band_curves")
    heat = fp.plot_heatmaps({"MSE": torch.tensor(mse["heatmap"]), "FreLE": torch.tensor(fre["heatmap"])}, out_dir,
                            "freq_epoch_heatmap")
    spec = fp.plot_spectrum_overlay(torch.tensor(mse["amp_target"]), {"MSE": torch.tensor(mse["amp_pred"]),
                                                                      "FreLE": torch.tensor(fre["amp_pred"])},
                                    out_dir, "spectrum_overlay")
    return [Figure(file=curves, caption=f"{tag}: validation band RMSE per epoch (solid MSE, dashed FreLE)"),
            Figure(file=heat, caption=f"{tag}: per-bin relative amplitude error, frequency x epoch"),
            Figure(file=spec, caption=f"{tag}: mean test amplitude spectrum, target vs forecasts")]
