"""Per-method learning-rate tuning for the latent-CoT experiments: the evidence protocol compares arms only at their
own tuned learning rates. Each method of the base config (on graphs; the trade-off's CoT and Coconut also on
arith_chain) trains on the config's first seed at every lr of a grid around its own recipe lr
(``TuningConfig.grid``, which grows past an edge that holds the best, ``lr_search.tune_lr``), scored by exact-match
accuracy on dev questions drawn apart from the test sets (``suite.dev_set``). CoT is tuned first; a latent method's
runs start from the seed's CoT reasoner at CoT's recipe lr, so its lr is tuned given the recipe's CoT start.

Every other latent-CoT experiment trains each method at its recipe lr (``base.lr_for(method)``). This experiment
gives each arm a status (rows' ``status``, on every row of the arm): "tuned" (the recipe lr is the best, with a tried
neighbour on each side), "tied" (the best is interior and the recipe lr scores within ``TIE_SES`` paired standard
errors of it on the same dev questions: these questions cannot tell the two apart), "ceiling" (the recipe lr
scores dev exact match 1.0, which no lr can beat, as arith_chain's CoT does at every lr up to 1e-3) or "off". A
tie on the first seed is decided on every seed of the base config (``TuningConfig.confirm_ties``: both lrs train on
the other seeds and the dev hits are pooled), since one seed cannot tell a one-s.e. gap from noise.
:func:`review.review_verdicts` (the paper's review hook) then leaves a decided verdict decided only when every arm its
claim compares (``CLAIM_ARMS``) is tuned, tied or at the ceiling.
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
from paperlab.experiments.latent_cot.review import OK_STATUS
from paperlab.experiments.lr_search import LRChoice, tune_lr
from paperlab.tables import save_figure

__all__ = ["TIE_SES", "arm_status", "run_lr_tuning", "tuned_lrs", "tuning_tasks"]

TIE_SES = 2.0  # a recipe lr within this many paired s.e. of the best lr's dev score is tied with it


def _dev_accuracy(cfg, method: str, lr: float) -> float:
    return _dev_stats(cfg, method, cfg.seeds[0], lr).accuracy


def tuned_lrs(config: TuningConfig) -> dict[tuple[str, str], LRChoice]:
    """Each method of ``config.base`` on graphs and of ``config.arith_methods`` on arith_chain (CoT first in each)
    tuned on the first seed: (task, method) -> :class:`LRChoice` (dev exact-match accuracy, higher is better).
    Models are trained through ``suite.trained``, so inside ``suite.disk_cache`` the runs at each method's recipe
    lr are the ones the other experiments use."""
    return {(task, m): tune_lr(functools.partial(_dev_accuracy, cfg, m), config.grid(cfg, m), minimize=False,
                               max_extensions=config.max_extensions)
            for task, (cfg, methods) in tuning_tasks(config).items()
            for m in sorted(methods, key=lambda m: m != "cot")}


def tuning_tasks(config: TuningConfig) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """task -> (its config, the methods tuned on it): ``base.methods`` on graphs, ``arith_methods`` on
    arith_chain (left out when empty)."""
    tasks = {"graph": (config.base, config.base.methods)}
    if config.arith_methods:
        tasks["arith"] = (_task_config(config.base, "arith"), config.arith_methods)
    return tasks


def run_lr_tuning(config: TuningConfig, *, out_dir: Path) -> Result:
    """Dev accuracy per method and learning rate on the first seed; which methods sit at a tuned lr."""
    base = config.base
    with torch_threads(1), S.disk_cache(R.models_dir(out_dir)):
        choices = tuned_lrs(config)
        recipe = {(t, m): _task_config(base, t).lr_for(m) for t, m in choices}
        confirm = base.seeds[1:] if config.confirm_ties else ()
        status = {(t, m): arm_status(_task_config(base, t), m, c, recipe[t, m], confirm_seeds=confirm)
                  for (t, m), c in choices.items()}
    rows: list[dict[str, Any]] = [
        {"task": t, "method": m, "seed": seed, "lr": lr, "dev_accuracy": score,
         "chosen": lr == c.lr and seed == base.seeds[0], "recipe": lr == recipe[t, m], "status": status[t, m][0],
         "paired_se": status[t, m][1]}
        for (t, m), c in choices.items()
        for seed, lr, score in [(base.seeds[0], lr, score) for lr, score in c.tried] + status[t, m][2]]
    table = [{"task": r["task"], "method": r["method"], "seed": r["seed"], "lr": f"{r['lr']:.3g}",
              "dev accuracy": round(r["dev_accuracy"], 3),
              "chosen": choices[r["task"], r["method"]].cell() if r["chosen"] else "",
              "recipe lr": _status_cell(r) if r["recipe"] else ""} for r in rows]
    named = {k: [f"{t}/{m}" for (t, m), (st, *_) in status.items() if st == k] for k in (*OK_STATUS, "off")}
    tuned, ceiling = named["tuned"], named["ceiling"]
    off = [f"{t}/{m} (recipe {recipe[t, m]:.3g})" for (t, m), (st, *_) in status.items() if st == "off"]
    confirmed = [f"{t}/{m}" for (t, m), (_, _, extra) in status.items() if extra]
    notes = [f"Tuned on seed {base.seeds[0]}: exact-match accuracy on {base.n_test} dev questions per task drawn "
             f"apart from the test sets, at {', '.join(f'{f:.3g}' for f in config.lr_factors)} times each "
             "method's recipe lr; CoT first, the latent methods starting from the seed's CoT reasoner at CoT's "
             "recipe lr. The intervention's soft-thought Coconuts train at Coconut's lr and are not tuned.",
             "Recipe lr: " + "; ".join(f"{t}/{m} {lr:.3g}" for (t, m), lr in recipe.items()) + ". Best lr: "
             + "; ".join(f"{t}/{m} {c.cell()} (dev {c.score:.3f})" for (t, m), c in choices.items()) + "."]
    notes.append(f"The recipe lr every other experiment trains at is the tuned interior optimum of {tuned or 'none'}"
                 + (f" and scores the ceiling (dev exact match 1.0, which no lr can beat) for {ceiling}" if ceiling
                    else "") + ".")
    if named["tied"]:
        notes.append(f"The recipe lr of {named['tied']} is not the best on the grid but scores within {TIE_SES:g} "
                     "paired standard errors of the best (column 'recipe lr'): on these dev questions the two are "
                     "tied, so the comparisons count them as tuned.")
    if confirmed:
        notes.append(f"A tie on seed {base.seeds[0]} is checked on seeds {list(base.seeds[1:])} (both lrs trained "
                     f"there; {confirmed}): the status and s.e. pool the dev hits of all the seeds.")
    if off:
        notes.append(f"It is NOT the tuned optimum of {off}: comparisons involving them are not at tuned learning "
                     "rates, and their verdicts stay undecided.")
    return Result(experiment="lr_tuning", config={"base": R.asdict(base), "arith_methods": list(config.arith_methods),
                                                  "lr_factors": list(config.lr_factors),
                                                  "max_extensions": config.max_extensions},
                  rows=rows, tables={f"learning-rate tuning (dev accuracy, seed {base.seeds[0]})": table},
                  figures=[_figure(choices, recipe, out_dir)], notes=notes)


def arm_status(cfg, method: str, choice: LRChoice, recipe_lr: float, *,
               confirm_seeds: tuple[int, ...] = ()) -> tuple[str, float | None, list[tuple[int, float, float]]]:
    """(status, paired s.e., extra runs) of ``method``'s recipe lr on ``cfg``'s task given its tuning ``choice``
    on the first seed (see the module docstring). The s.e. is of the best lr's dev accuracy minus the recipe lr's
    over the same dev questions (None where not needed). A tie on the first seed is checked on ``confirm_seeds``
    too (one seed cannot tell a one-s.e. gap from noise): both lrs train there, the hits of all the seeds are
    pooled, and the status is "tied" or "off" by the pooled difference; the extra runs are (seed, lr, dev
    accuracy). Inside ``suite.disk_cache`` trained models are loaded, not retrained."""
    scores = dict(choice.tried)
    if choice.interior and choice.lr == recipe_lr:
        return "tuned", None, []
    if scores[recipe_lr] >= 1.0:  # exact match 1.0 is the best any lr can score, whatever the grid's edges hold
        return "ceiling", None, []
    if not choice.interior:
        return "off", None, []
    best, recipe = _dev_hits(cfg, method, cfg.seeds[0], choice.lr), _dev_hits(cfg, method, cfg.seeds[0], recipe_lr)
    tied, se = _tied(best, recipe)
    if not tied or not confirm_seeds:
        return ("tied" if tied else "off"), se, []
    extra = []
    for seed in confirm_seeds:
        more = {lr: _dev_hits(cfg, method, seed, lr) for lr in (choice.lr, recipe_lr)}
        best, recipe = best + more[choice.lr], recipe + more[recipe_lr]
        extra += [(seed, lr, sum(h) / len(h)) for lr, h in more.items()]
    tied, se = _tied(best, recipe)
    return ("tied" if tied else "off"), se, extra


def _dev_stats(cfg, method: str, seed: int, lr: float):
    """``suite.accuracy`` on the dev questions of ``method`` trained at ``seed`` and ``lr`` (memoised there)."""
    return S.accuracy(cfg, S.trained(cfg, method, seed, lr=lr)[0], method, S.dev_set(cfg))


def _dev_hits(cfg, method: str, seed: int, lr: float) -> tuple[bool, ...]:
    return _dev_stats(cfg, method, seed, lr).correct


def _tied(best: tuple[bool, ...], recipe: tuple[bool, ...]) -> tuple[bool, float]:
    """Whether the recipe's hits are within ``TIE_SES`` paired s.e. of the best's (or better), and that s.e."""
    se = R.paired_se(best, recipe)
    return (sum(best) - sum(recipe)) / len(best) <= TIE_SES * se, se


def _status_cell(row: dict[str, Any]) -> str:
    se = row["paired_se"]
    return row["status"] + ("" if se is None else f" (paired s.e. {se:.3f})")


def _task_config(base, task: str):
    return base if task == "graph" else dataclasses.replace(base, task=task)


def _figure(choices: dict[tuple[str, str], LRChoice], recipe: dict[tuple[str, str], float], out_dir: Path):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(5, 3.2))
    ax = fig.gca()
    for (task, method), c in choices.items():
        line, = ax.plot([x for x, _ in c.tried], [y for _, y in c.tried], "o-" if task == "graph" else "s--",
                        label=f"{task}/{method}")
        ax.plot([recipe[task, method]], [dict(c.tried)[recipe[task, method]]], "*", ms=12, color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("dev exact-match accuracy (first seed)")
    ax.legend(fontsize=7)
    return R.figure(save_figure(fig, out_dir, "lr_tuning"), "Dev accuracy per method and learning rate (star: the "
                    "method's recipe lr)")
