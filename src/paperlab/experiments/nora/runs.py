"""Nora experiments' shared machinery: one training run, its cache, the per-optimizer lr / weight-decay sweep and
its summary table, curves and per-seed arms (the paper's module imports it when an experiment runs).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from paperlab.experiments.base import mean_std, shared_dir
from paperlab.experiments.cache import cache_key, load_or_compute
from paperlab.experiments.lr_search import LRChoice, tune_lr
from paperlab.experiments.nora.stability import run_measures
from paperlab.optim import OPTIMIZERS, make_optimizer
from paperlab.optim.trace import RowTracer
from paperlab.tables import save_figure
from paperlab.train import train, warmup_cosine

__all__ = ["cached", "curves_figure", "fit", "per_seed", "row_wise", "summary", "sweep", "tune"]


def row_wise(names) -> list[str]:
    """The names among ``names`` of row-wise optimizers (Nora, RMNP: row-norm traces apply), registry order."""
    return [n for n, entry in OPTIMIZERS.items() if entry.row_wise and n in names]


def fit(model, loss_fn, batches, eval_fn, *, name: str, lr: float, wd: float, cfg, head=(),
         trace=()) -> dict[str, Any]:
    """Train with ``make_optimizer(model, name)`` + warmup-cosine; return final metrics, curve and the stability
    measures of ``trace`` (one matrix whose row norms and angles are recorded every step, for every optimizer,
    so they can be compared). JSON-ready, so a run can be cached.

    ``name`` is a registered optimizer, optionally with ``_<preset>`` (``nora_official``).
    """
    base, _, preset = name.partition("_")
    whole_model = OPTIMIZERS[base].routes == "all"  # AdamW: one lr for every parameter
    opt = make_optimizer(model, base, lr=lr, weight_decay=wd, head=head,
                         adamw_lr=None if whole_model else cfg.adamw_lr,
                         options={"preset": preset} if preset else None)
    sched = warmup_cosine(opt, steps=cfg.steps, warmup=max(1, int(cfg.warmup_frac * cfg.steps)))
    tracer = RowTracer(list(trace))
    start = time.process_time()
    res = train(model, loss_fn, batches, opt, steps=cfg.steps, scheduler=sched, eval_fn=eval_fn,
                eval_every=max(1, cfg.steps // 10), progress=False, on_step=tracer)
    lrs = [h["lr"] for h in res.history]
    return {"final": res.evals[-1], "curve": [(e["step"], e["val_loss"]) for e in res.evals],
            "cpu_s": time.process_time() - start,
            "trace": run_measures(tracer, lrs, row_wise=bool(row_wise([base])), weight_decay=wd)}


def cached(make_run, config, *, out_dir: Path, experiment: str):
    """``make_run`` with each (optimizer, lr, seed, weight decay) run saved as a checked cache entry under the
    paper's ``nora_runs`` folder, so an interrupted ``--full`` run keeps its finished runs (``--resume``)."""
    runs = shared_dir(out_dir, experiments=("digits", "lm"), name="nora_runs")

    def run(name: str, lr: float, seed: int, wd: float) -> dict[str, Any]:
        key = cache_key(config, name, float(lr), seed, float(wd), code=f"nora.{experiment}/2",
                        exclude=("seeds", "lr_grid", "wd_grid", "weight_decay"))
        return load_or_compute(runs / f"{experiment}-{key.short}-{name}-s{seed}.json", key,
                               lambda: make_run(name, lr, seed, wd))

    return run


def tune(make_run, name: str, lrs: tuple[float, ...], seed: int, wd: float) -> tuple[LRChoice, dict[float, dict]]:
    """Tune one optimizer's lr on ``seed`` (:func:`tune_lr`, grid extended until the best is interior); a grid of
    fewer than 3 values (shrunk test configs) is evaluated as is and counts as a grid edge."""
    runs: dict[float, dict[str, Any]] = {}

    def score(lr: float) -> float:
        runs[lr] = make_run(name, lr, seed, wd)
        return float(runs[lr]["final"]["val_loss"])

    if len(lrs) >= 3:
        return tune_lr(score, lrs), runs
    scores = {lr: score(lr) for lr in lrs}
    best = min(scores, key=lambda lr: scores[lr] if math.isfinite(scores[lr]) else math.inf)
    return LRChoice(lr=best, score=scores[best], tried=tuple(sorted(scores.items())), interior=False,
                    extensions=0), runs


def sweep(make_run, cfg) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Per optimizer: lr tuned on the first seed at ``cfg.weight_decay``; then, if ``cfg.wd_grid`` is set, each
    weight decay of it at that lr on the first seed (the best kept); then the other seeds at the tuned (lr, wd).
    Returns rows and, per optimizer, ``{"lr", "wd", "choice", "wd_tried", "runs"}`` (runs in seed order)."""
    rows, best = [], {}
    seed0 = cfg.seeds[0]
    for name, lrs in cfg.lr_grid:
        choice, first = tune(make_run, name, lrs, seed0, cfg.weight_decay)
        for lr, run in sorted(first.items()):
            rows.append({"optimizer": name, "lr": lr, "wd": cfg.weight_decay, "seed": seed0, **run["final"],
                         "cpu_s": run["cpu_s"]})
        by_wd = {cfg.weight_decay: first[choice.lr]}
        for wd in cfg.wd_grid:
            if wd not in by_wd:
                by_wd[wd] = make_run(name, choice.lr, seed0, wd)
                rows.append({"optimizer": name, "lr": choice.lr, "wd": wd, "seed": seed0, **by_wd[wd]["final"],
                             "cpu_s": by_wd[wd]["cpu_s"]})
        loss = {wd: float(r["final"]["val_loss"]) for wd, r in by_wd.items()}
        wd = min(loss, key=lambda w: loss[w] if math.isfinite(loss[w]) else math.inf)
        runs = [by_wd[wd]] + [make_run(name, choice.lr, s, wd) for s in cfg.seeds[1:]]
        for s, run in zip(cfg.seeds[1:], runs[1:], strict=True):
            rows.append({"optimizer": name, "lr": choice.lr, "wd": wd, "seed": s, **run["final"],
                         "cpu_s": run["cpu_s"]})
        best[name] = {"lr": choice.lr, "wd": wd, "choice": choice, "wd_tried": sorted(loss.items()), "runs": runs}
    return rows, best


def summary(best: dict[str, dict[str, Any]], metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """One table row per optimizer of :func:`sweep`'s ``best``: tuned lr, lrs tried, weight decay, each metric's
    mean ± sd over seeds and CPU seconds per run."""
    out = []
    for name, b in best.items():
        tried = ", ".join(f"{lr:.3g}" for lr, _ in b["choice"].tried)
        row: dict[str, Any] = {"optimizer": name, "best lr": b["choice"].cell(), "lrs tried": tried,
                               "weight decay": b["wd"], "seeds": len(b["runs"])}
        if len(b["wd_tried"]) > 1:  # the wd stage ran: what each weight decay scored at the tuned lr (seed 0)
            row["wd tried (val loss)"] = ", ".join(f"{w:g}: {v:.4f}" for w, v in b["wd_tried"])
        for m in metrics:
            mu, sd = mean_std([r["final"][m] for r in b["runs"]])
            row[m] = f"{mu:.4f} ± {sd:.3f}"
        row["cpu s/run"] = round(mean_std([r["cpu_s"] for r in b["runs"]])[0], 2)
        out.append(row)
    return out


def curves_figure(best, out_dir: Path, name: str, title: str) -> str:
    """Validation loss against step of each optimizer's first seed at its tuned lr; returns the figure's file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for opt_name, b in best.items():
        steps, losses = zip(*b["runs"][0]["curve"], strict=True)
        ax.plot(steps, losses, marker="o", ms=3, label=f"{opt_name} (lr {b['lr']:g})")
    ax.set(xlabel="step", ylabel="validation loss", title=title)
    ax.legend()
    return save_figure(fig, out_dir, name)


def per_seed(best: dict[str, dict[str, Any]]):
    """``{seed index: {optimizer: {metric: value}}}`` for :func:`decide` (optimizers paired by seed; copies, so
    a caller may add metrics)."""
    n = min(len(b["runs"]) for b in best.values())
    return {i: {name: dict(b["runs"][i]["final"]) for name, b in best.items()} for i in range(n)}
