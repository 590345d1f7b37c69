"""Per-method learning-rate tuning for the latent-CoT experiments: the evidence protocol compares arms only at their
own tuned learning rates. Each method of the base config (on graphs; the trade-off's CoT and Coconut also on
arith_chain) trains on the config's first seed at every lr of a grid (which grows past an edge that holds the best,
``lr_search.tune_lr``), scored by exact-match accuracy on dev questions drawn apart from the test sets
(``suite.dev_set``). CoT is tuned first; a latent method's runs start from the seed's CoT reasoner at ``base.lr``,
so its lr is tuned given the recipe's CoT start.

Every other latent-CoT experiment trains each method at ``base.lr``. This experiment says, per method, whether that
lr is the tuned optimum with a tried neighbour on each side; where it is not, the comparisons involving that method
are not at tuned learning rates, and the notes say so.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

from paperlab._runtime import torch_threads
from paperlab.experiments.base import Result
from paperlab.experiments.latent_cot import runs as R
from paperlab.experiments.latent_cot import suite as S
from paperlab.experiments.latent_cot.configs import TuningConfig
from paperlab.experiments.lr_search import LRChoice, tune_lr
from paperlab.tables import save_figure

__all__ = ["run_lr_tuning", "tuned_lrs"]


def _dev_accuracy(cfg, method: str, lr: float) -> float:
    model, _ = S.trained(cfg, method, cfg.seeds[0], lr=lr)
    return S.accuracy(cfg, model, method, S.dev_set(cfg)).accuracy


def tuned_lrs(config: TuningConfig) -> dict[tuple[str, str], LRChoice]:
    """Each method of ``config.base`` on graphs and of ``config.arith_methods`` on arith_chain (CoT first in each)
    tuned on the first seed: (task, method) -> :class:`LRChoice` (dev exact-match accuracy, higher is better).
    Models are trained through ``suite.trained``, so inside ``suite.disk_cache`` the runs at ``base.lr`` are the
    ones the other experiments use."""
    tasks = {"graph": (config.base, config.base.methods)}
    if config.arith_methods:
        tasks["arith"] = (dataclasses.replace(config.base, task="arith"), config.arith_methods)
    return {(task, m): tune_lr(functools.partial(_dev_accuracy, cfg, m), config.lr_grid, minimize=False,
                               max_extensions=config.max_extensions)
            for task, (cfg, methods) in tasks.items() for m in sorted(methods, key=lambda m: m != "cot")}


def run_lr_tuning(config: TuningConfig, *, out_dir: Path) -> Result:
    """Dev accuracy per method and learning rate on the first seed; which methods sit at a tuned lr."""
    base = config.base
    with torch_threads(1), S.disk_cache(R.models_dir(out_dir)):
        choices = tuned_lrs(config)
    rows: list[dict[str, Any]] = [
        {"task": t, "method": m, "seed": base.seeds[0], "lr": lr, "dev_accuracy": score, "chosen": lr == c.lr}
        for (t, m), c in choices.items() for lr, score in c.tried]
    table = [{"task": r["task"], "method": r["method"], "lr": f"{r['lr']:.3g}",
              "dev accuracy": round(r["dev_accuracy"], 3),
              "chosen": choices[r["task"], r["method"]].cell() if r["chosen"] else ""} for r in rows]
    tuned = [f"{t}/{m}" for (t, m), c in choices.items() if c.interior and c.lr == base.lr]
    off = [f"{t}/{m}" for t, m in choices if f"{t}/{m}" not in tuned]
    notes = [f"Tuned on seed {base.seeds[0]}: exact-match accuracy on {base.n_test} dev questions per task drawn "
             f"apart from the test sets; CoT first, the latent methods starting from the seed's CoT reasoner at lr "
             f"{base.lr:g}. Soft-thought fine-tunes (the intervention) run at Coconut's lr and are not tuned.",
             "Best lr: " + "; ".join(f"{t}/{m} {c.cell()} (dev {c.score:.3f})" for (t, m), c in choices.items())
             + "."]
    if off:
        notes.append(f"The lr every other experiment trains at, {base.lr:g}, is NOT the tuned interior optimum of "
                     f"{off}: comparisons involving them are not at tuned learning rates.")
    else:
        notes.append(f"The lr every other experiment trains at, {base.lr:g}, is the tuned interior optimum of "
                     f"every method tuned ({tuned}).")
    return Result(experiment="lr_tuning", config={"base": R.asdict(base), "arith_methods": list(config.arith_methods),
                                                  "lr_grid": list(config.lr_grid),
                                                  "max_extensions": config.max_extensions},
                  rows=rows, tables={f"learning-rate tuning (dev accuracy, seed {base.seeds[0]})": table},
                  figures=[_figure(choices, base.lr, out_dir)], notes=notes)


def _figure(choices: dict[tuple[str, str], LRChoice], lr: float, out_dir: Path):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(5, 3.2))
    ax = fig.gca()
    for (task, method), c in choices.items():
        ax.plot([x for x, _ in c.tried], [y for _, y in c.tried], "o-" if task == "graph" else "s--",
                label=f"{task}/{method}")
    ax.axvline(lr, color="k", ls=":", lw=1, label=f"recipe lr {lr:g}")
    ax.set_xscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("dev exact-match accuracy (first seed)")
    ax.legend(fontsize=7)
    return R.figure(save_figure(fig, out_dir, "lr_tuning"), "Dev accuracy per method and learning rate")
