"""The exploration-execution trade-off as a crossing: CoT and Coconut trained with the same recipe on the graph
task (ProsQA-style questions: several branches to keep open) and on arith_chain (one exact value per step). The
paper's trade-off predicts latent > CoT on graphs and latent < CoT on arithmetic, so the claim's effect per
seed is ``runs.crossing_effect``: the smaller of (Coconut - CoT on graphs) and (CoT - Coconut on arith_chain),
positive only when both signs hold.

Gates per seed: CoT learned both tasks and Coconut the graph task (choice accuracy >= ``runs.TRAINED``), and
Coconut's graph thoughts pass the thought-ablation gate. Coconut on arith_chain is not gated: failing there is
the predicted effect.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from paperlab._runtime import torch_threads
from paperlab.experiments.base import Result
from paperlab.experiments.latent_cot import runs as R
from paperlab.experiments.latent_cot import suite as S
from paperlab.experiments.latent_cot.configs import LatentCoTConfig

__all__ = ["run_tradeoff"]

METHODS = ("cot", "coconut")


def run_tradeoff(config: LatentCoTConfig, *, out_dir: Path) -> Result:
    """Held-out accuracy of CoT and Coconut on both tasks per seed; the crossing verdict."""
    tasks = {"graph": config, "arith": dataclasses.replace(config, task="arith")}
    rows = []
    with torch_threads(1), S.disk_cache(R.models_dir(out_dir)):
        for seed in config.seeds:
            for task, cfg in tasks.items():
                examples = S.datasets(cfg)["generated"]
                for method in METHODS:
                    acc = S.accuracy(cfg, S.trained(cfg, method, seed)[0], method, examples)
                    rows.append({"task": task, "method": method, "seed": seed, "accuracy": acc.accuracy,
                                 "choice_accuracy": acc.choice_accuracy})
        get = {(r["task"], r["method"], r["seed"]): r for r in rows}
        gap = {(t, s): get[t, "coconut", s]["accuracy"] - get[t, "cot", s]["accuracy"] for t in tasks
               for s in config.seeds}
        effects = [R.crossing_effect(gap["graph", s], gap["arith", s]) for s in config.seeds]
        competent = [(t, m) for t in tasks for m in METHODS if (t, m) != ("arith", "coconut")]
        learned = [i for i, s in enumerate(config.seeds)
                   if all(get[t, m, s]["choice_accuracy"] >= R.TRAINED for t, m in competent)]
        used = [i for i in learned if R.thoughts_used(config, config.seeds[i], "coconut")]
    verdict = R.kept_verdict(
        "lcot-tradeoff", effects, learned, used, unit=" acc",
        what="min(Coconut - CoT on graphs, CoT - Coconut on arith_chain), > 0 only for a crossing",
        learn_rule=f"CoT on both tasks and Coconut on graphs reach choice accuracy >= {R.TRAINED}",
        use_rule=f"zeroing, shuffling and pause-replacing Coconut's graph thoughts each cost >= "
                 f"{R.ABLATION_DROP:.0%} accuracy")
    notes = [f"Coconut minus CoT per seed, graphs: {[round(gap['graph', s], 3) for s in config.seeds]}; "
             f"arith_chain: {[round(gap['arith', s], 3) for s in config.seeds]} (the paper predicts positive on "
             "graphs and negative on arithmetic).",
             "Coconut on arith_chain is not gated for competence: failing there is the predicted effect."]
    table = S.summarize(rows, ("task", "method"), ("accuracy", "choice_accuracy"))
    return Result(experiment="tradeoff", config=R.asdict(config), rows=rows,
                  tables={"exploration-execution crossing (mean over seeds)": table}, verdicts=[verdict], notes=notes)
