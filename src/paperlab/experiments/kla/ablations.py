"""KLA ablations (E5): the norm / step-size modes on MQAR, and the NoNorm collapse claim over an lr x precision
grid.

The paper reports NoNorm (raw q and k, beta = eta) collapsing on MQAR (about 0 vs 98.39 for KLA). Whether a
model without normalisation collapses depends on the learning rate and the precision, so one run decides
little: with ``lrs`` set, KLA and NoNorm train in every (lr, precision) cell on every seed. In a cell, the claim
is decided under the evidence protocol as "NoNorm's 1x accuracy <= 10%" on seeds where KLA reached 90% (a
collapse is only one where the normalised model learns). Runs reuse the MQAR experiment's cache.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from paperlab.experiments.base import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Figure,
    Result,
    Verdict,
    progress,
    shared_dir,
)
from paperlab.experiments.kla.common import bar_plot, cell
from paperlab.experiments.kla.configs import ABLATION_MODES, PAPER_ABLATIONS, AblationConfig, MQARConfig
from paperlab.experiments.kla.tasks import mqar_seed_run
from paperlab.experiments.protocol import ClaimSpec, Difference, Gate, decide
from paperlab.tables import save_figure

__all__ = ["COLLAPSED", "KLA_LEARNED", "run_ablations"]

COLLAPSED = 10.0  # % at 1x at or below which a NoNorm model has collapsed
KLA_LEARNED = 90.0  # % at 1x KLA must reach on a seed for that seed to test a collapse


def _mode_table(rows: list[dict[str, Any]], config: AblationConfig, top: int) -> list[dict[str, Any]]:
    table = []
    for mode in config.modes:
        mine = [r for r in rows if r["mode"] == mode]
        label, computes = ABLATION_MODES[mode]
        table.append({"mode": mode, "paper label": label, "computes": computes, "seeds": len(mine),
                      "MQAR 1x (%)": cell([r["acc_1x"] for r in mine]),
                      f"MQAR {top}x (%)": cell([r[f"acc_{top}x"] for r in mine]),
                      "diverged": ", ".join(f"seed {r['seed']} at step {r['diverged_at']}" for r in mine
                                            if r["diverged_at"]) or "no",
                      "paper (test / 8x / PPL)": PAPER_ABLATIONS.get(mode, "-")})
    return table


def _cell_task(task: MQARConfig, lr: float, precision: str) -> MQARConfig:
    return dataclasses.replace(task, lr=lr, lr_grid=(), precision=precision)


def _cell_verdict(per_seed: dict[int, dict[str, dict[str, Any]]], claim: str, *, scale_note: str = "") -> Verdict:
    """One cell's collapse decision: NoNorm's 1x accuracy <= COLLAPSED over seeds where KLA learned."""
    spec = ClaimSpec(effect="NoNorm accuracy at 1x", unit="%", direction="less", threshold=COLLAPSED,
                     paper_effect=COLLAPSED, inclusive=True)
    return decide(spec, per_seed, effect=Difference(metric="acc_1x", a="no_norm"),
                  competence=[Gate.at_least("acc_1x", KLA_LEARNED, arms=("kla",))]).to_verdict(
        claim, scale_note=scale_note)


def _grid(config: AblationConfig, runs: Path) -> tuple[list[dict[str, Any]], list[Verdict]]:
    """Per (lr, precision) cell: KLA and NoNorm on every seed, the cell's table row and its decision."""
    rows, verdicts = [], []
    cells = [(lr, p) for lr in config.lrs for p in config.precisions]
    for lr, precision in progress(cells, desc="NoNorm grid cells"):
        task = _cell_task(config.task, lr, precision)
        got = {(m, s): mqar_seed_run(task, m, s, cache_dir=runs) for m in ("kla", "no_norm") for s in config.seeds}
        per_seed = {s: {m: got[(m, s)] for m in ("kla", "no_norm")} for s in config.seeds}
        v = _cell_verdict(per_seed, "cell")
        verdicts.append(v)
        rows.append({"lr": f"{lr:.3g}", "precision": precision, "seeds": len(config.seeds),
                     "KLA 1x (%)": cell([got[("kla", s)]["acc_1x"] for s in config.seeds]),
                     "NoNorm 1x (%)": cell([got[("no_norm", s)]["acc_1x"] for s in config.seeds]),
                     "NoNorm diverged": sum(bool(got[("no_norm", s)]["diverged_at"]) for s in config.seeds),
                     "NoNorm overflowed past 1x": sum("nonfinite_at" in got[("no_norm", s)] for s in config.seeds),
                     "collapse (NoNorm <= 10%, KLA >= 90%)": v.verdict, "NoNorm 1x interval": v.ours})
    return rows, verdicts


def _grid_verdict(cells: list[Verdict], config: AblationConfig) -> Verdict:
    """Reproduced: NoNorm collapsed in every decided cell; not reproduced: in none; else inconclusive."""
    decided = [v for v in cells if v.verdict in (REPRODUCED, NOT_REPRODUCED)]
    collapsed = sum(v.verdict == REPRODUCED for v in decided)
    if not decided:
        verdict = INCONCLUSIVE
    elif collapsed == len(decided):
        verdict = REPRODUCED
    else:
        verdict = NOT_REPRODUCED if collapsed == 0 else INCONCLUSIVE
    n = len(config.seeds)
    task = config.task
    return Verdict(claim="kla-ablation-nonorm", verdict=verdict,
                   ours=f"collapse in {collapsed} of {len(decided)} decided cells of {len(cells)} (n={n} per cell)",
                   rule=(f"per (lr, precision) cell: 95% t interval of NoNorm's 1x accuracy over seeds where KLA "
                         f"reached {KLA_LEARNED:g}%, wholly <= {COLLAPSED:g}% = collapse, wholly above = none; "
                         "reproduced if every decided cell collapses, not reproduced if none does, else "
                         "inconclusive (lr / precision dependent)"),
                   scale_note=f"MQAR {task.num_pairs} pairs, T={task.train_len}, lr {list(config.lrs)} x "
                              f"{list(config.precisions)}", n_run=n, n_kept=n)


def _legacy_verdict(rows: list[dict[str, Any]], task: MQARConfig) -> Verdict:
    """Without a grid (quick): one cell at the task's lr, reported under the same cell rule."""
    by = {(r["mode"], r["seed"]): r for r in rows}
    per_seed = {s: {m: by[(m, s)] for m in ("kla", "no_norm")} for m_, s in by if m_ == "kla"}
    return _cell_verdict(per_seed, "kla-ablation-nonorm",
                         scale_note=f"MQAR {task.num_pairs} pairs, T={task.train_len}, lr {task.lr:g}")


def run_ablations(config: AblationConfig, *, out_dir: Path) -> Result:
    """E5: every ablation mode at the task's lr (a table like the paper's), then the NoNorm grid if set."""
    task = config.task
    top = max(task.eval_factors)
    runs = shared_dir(out_dir, experiments=("mqar", "ablations"), name="mqar_runs")
    rows = [mqar_seed_run(task, mode, seed, cache_dir=runs)
            for mode, seed in progress([(m, s) for m in config.modes for s in config.seeds], desc="ablation runs")]
    tables: dict[str, list[dict[str, Any]]] = {"Ablations on MQAR": _mode_table(rows, config, top)}
    verdicts: list[Verdict] = []
    if config.lrs:
        grid_rows, cells = _grid(config, runs)
        tables["NoNorm collapse by lr and precision (MQAR 1x)"] = grid_rows
        verdicts.append(_grid_verdict(cells, config))
    elif {"kla", "no_norm"} <= set(config.modes):
        verdicts.append(_legacy_verdict(rows, task))
    notes = [f"{r['mode']} seed {r['seed']} diverged (loss NaN/inf at step {r['diverged_at']}); its accuracies "
             "count as 0." for r in rows if r["diverged_at"]]
    notes += [f"{r['mode']} seed {r['seed']}: activations overflowed (NaN/inf) when evaluated at "
              f"{', '.join(f'{f}x' for f in r['nonfinite_at'])}; scored 0 there." for r in rows if "nonfinite_at" in r]
    if config.lrs:
        notes.append("'NoNorm overflowed past 1x': seeds whose trained NoNorm model produced NaN/inf activations at "
                     "some longer evaluation length (scored 0 at that length; the collapse rule reads 1x only).")
    notes.append("PPL column of the paper's table is not re-measured per ablation (the perplexity experiment's "
                 "LMs cover its own modes).")
    fig = bar_plot({f"{f}x": {m: [r[f"acc_{f}x"] for r in rows if r["mode"] == m] for m in config.modes}
                    for f in (1, top)}, ylabel="MQAR accuracy (%)",
                   title=f"Ablations (MQAR, {task.num_pairs} pairs, trained at T={task.train_len})")
    figures = [Figure(file=save_figure(fig, out_dir, "ablations"),
                      caption=f"MQAR accuracy at 1x and {top}x per ablation mode (diverged runs count as 0)")]
    return Result(experiment="ablations", config=dataclasses.asdict(config),
                  rows=[{k: v for k, v in r.items() if k != "by_distance"} for r in rows],
                  tables=tables, figures=figures, verdicts=verdicts, notes=notes)
