"""Helpers of the latent-CoT experiments (``paperlab.experiments.latent_cot``): gated verdicts, small row
lookups, the noise figure."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from paperlab.experiments.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Figure, Verdict, shared_dir
from paperlab.experiments.latent_cot import suite as S
from paperlab.experiments.latent_cot.configs import SCALE
from paperlab.experiments.protocol import DID_NOT_LEARN, MECHANISM_ABSENT, TOO_FEW_SEEDS
from paperlab.experiments.verdicts import verdict_from_effect
from paperlab.reasoning.eval import THOUGHT_ABLATIONS
from paperlab.reasoning.probe import fit_noise_ratio, noise_curve
from paperlab.tables import save_figure

__all__ = ["ABLATION_DROP", "EXPERIMENTS", "LATENT", "TRAINED", "ablation_accuracies", "ablation_table", "acc",
           "accuracy_by_hops", "asdict", "chance_note", "crossing_effect", "effect_verdict", "figure", "gated",
           "kept_verdict", "models_dir", "noise_figure", "paired_se", "ratio", "thoughts_used", "trained_enough"]

# every latent-CoT experiment name: they share trained reasoners on disk (``models_dir``)
EXPERIMENTS = ("accuracy", "symbolic_index", "noise", "exploration", "tradeoff", "curriculum",
               "error_accumulation", "intervention", "thought_pca", "lr_tuning")


def models_dir(out_dir: Path) -> Path:
    """Trained reasoners on disk, shared by the experiments of one output folder (see ``shared_dir``)."""
    return shared_dir(out_dir, experiments=EXPERIMENTS, name="reasoners")


def effect_verdict(claim: str, effects: list[float], unit: str, what: str) -> Verdict:
    effects = [e for e in effects if not math.isnan(e)]
    if not effects:
        return Verdict(claim=claim, verdict=TOO_FEW_SEEDS, ours="undefined (n=0: no seed gave a usable value)",
                       rule=f"claimed positive {what}", scale_note=SCALE, n_kept=0)
    return verdict_from_effect(claim, effects, unit=unit, scale_note=SCALE)


TRAINED = 0.6  # choice accuracy (two options, chance 0.5) that counts as "learned the task"


def trained_enough(config, seed: int, methods: tuple[str, ...], need: str) -> bool:
    """Whether ``all``/``any`` of ``methods`` reach choice accuracy >= ``TRAINED`` on held-out questions."""
    examples = S.datasets(config)["generated"]
    hits = [S.accuracy(config, S.trained(config, m, seed)[0], m, examples).choice_accuracy >= TRAINED
            for m in methods]
    return all(hits) if need == "all" else any(hits)


ABLATION_DROP = 0.10  # accuracy every thought ablation must cost a latent model for its thoughts to count as used
LATENT = ("coconut", "no_curriculum", "pause")  # methods with continuous thoughts in the answer's computation


def ablation_accuracies(config, seed: int, method: str) -> dict[str, float]:
    """Held-out exact-match accuracy of one latent model with its thoughts intact, zeroed, shuffled across
    questions and replaced by the pause embedding."""
    examples = S.datasets(config)["generated"]
    model = S.trained(config, method, seed)[0]
    return {mode: S.accuracy(config, model, method, examples, thoughts=mode).accuracy for mode in THOUGHT_ABLATIONS}


def thoughts_used(config, seed: int, method: str) -> bool:
    """The thought-ablation gate: every ablation costs >= ``ABLATION_DROP`` accuracy at this seed."""
    accs = ablation_accuracies(config, seed, method)
    return all(accs["intact"] - accs[m] >= ABLATION_DROP for m in THOUGHT_ABLATIONS if m != "intact")


def ablation_table(config) -> list[dict[str, Any]]:
    """The 'thought ablation' table: ``method | intact | zeroed | shuffled | pause`` (means over seeds) and the
    seeds whose thoughts passed the gate."""
    rows = []
    for method in (m for m in config.methods if m in LATENT):
        per_seed = [ablation_accuracies(config, s, method) for s in config.seeds]
        row: dict[str, Any] = {"method": method}
        row.update({m: sum(a[m] for a in per_seed) / len(per_seed) for m in THOUGHT_ABLATIONS})
        used = [s for s, a in zip(config.seeds, per_seed, strict=True)
                if all(a["intact"] - a[m] >= ABLATION_DROP for m in THOUGHT_ABLATIONS if m != "intact")]
        row["seeds using thoughts"] = f"{len(used)} of {len(config.seeds)}"
        rows.append(row)
    return rows


def accuracy_by_hops(config, examples: list) -> list[dict[str, Any]]:
    """Exact-match accuracy of every method on ``examples`` split by hop count (reasoning steps), mean over
    seeds, with the number of questions per hop count."""
    hops = sorted({len(ex.steps) for ex in examples})
    rows = []
    for method in config.methods:
        hits = [S.accuracy(config, S.trained(config, method, s)[0], method, examples).correct for s in config.seeds]
        row: dict[str, Any] = {"method": method}
        for k in hops:
            idx = [i for i, ex in enumerate(examples) if len(ex.steps) == k]
            row[f"{k} hops (n={len(idx)})"] = sum(sum(h[i] for i in idx) / len(idx) for h in hits) / len(hits)
        rows.append(row)
    return rows


def crossing_effect(gain_graph: float, gain_arith: float) -> float:
    """min(gain_graph, -gain_arith): > 0 iff something helps the graph task and hurts arith_chain, and then the
    smaller of the two margins. (The difference gain_graph - gain_arith would be positive when both gain, or
    both lose, in the right order: a check that a crossing cannot fail.)"""
    return min(gain_graph, -gain_arith)


def paired_se(a: tuple[bool, ...], b: tuple[bool, ...]) -> float:
    """Standard error of mean(a) - mean(b) over the same questions (per-question hits of two models)."""
    d = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    if len(d) < 2:
        return math.nan
    m = sum(d) / len(d)
    return math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1) / len(d))


def gated(claim: str, config, effects: list[float], unit: str, what: str, *,
          methods: tuple[str, ...] = ("cot", "coconut"), need: str = "all",
          item_se: list[float] | None = None) -> Verdict:
    """``effect_verdict`` over the seeds whose models learned the task (``need`` of ``methods`` above
    ``TRAINED``) and whose latent models among ``methods`` use their thoughts (``thoughts_used``, the
    thought-ablation gate); "did not learn" / "mechanism absent" when no seed passes.

    ``item_se`` (one per seed): the test-set sampling error of each seed's effect (``paired_se``); a decided
    verdict becomes inconclusive when the mean effect is within 2 such standard errors (with one seed the
    seed-to-seed error is unknown, so this is the only error bar)."""
    learned = [i for i, s in enumerate(config.seeds) if trained_enough(config, s, methods, need)]
    latent = [m for m in methods if m == "coconut"]  # the latent claims are about Coconut's thoughts
    used = [i for i in learned if all(thoughts_used(config, config.seeds[i], m) for m in latent)]
    v = kept_verdict(claim, effects, learned, used, unit=unit, what=what,
                     learn_rule=f"{need} of {list(methods)} reach choice accuracy >= {TRAINED}",
                     use_rule=f"zeroing, shuffling and pause-replacing the thoughts of {latent} each cost >= "
                              f"{ABLATION_DROP:.0%} accuracy (table 'thought ablation')")
    if item_se is None or v.verdict not in (REPRODUCED, NOT_REPRODUCED):
        return v
    se = math.sqrt(sum(item_se[i] ** 2 for i in used)) / len(used)
    m = sum(effects[i] for i in used) / len(used)
    if abs(m) <= 2 * se:
        return Verdict(claim=claim, verdict=INCONCLUSIVE, ours=f"{v.ours}, test-set s.e. {se:.3f}",
                       rule=f"claimed positive {what}; |effect| within 2 test-set standard errors ({se:.3f}, paired "
                            "over the same questions)", scale_note=SCALE)
    return v


def kept_verdict(claim: str, effects: list[float], learned: list[int], used: list[int], *, unit: str, what: str,
                 learn_rule: str, use_rule: str) -> Verdict:
    """``effect_verdict`` over the seeds (indices into ``effects``) in ``used``, which must be among
    ``learned``: "did not learn" when no seed learned, "mechanism absent" when none of those passed the
    mechanism gate (a claim about what thoughts do says nothing about thoughts the answer does not use)."""
    n = len(effects)
    if not learned:
        return Verdict(claim=claim, verdict=DID_NOT_LEARN,
                       ours=f"{[round(e, 3) for e in effects]} (n=0 of {n} run: untrained models)",
                       rule=f"claimed positive {what}; counts only seeds where {learn_rule}; none did",
                       scale_note=SCALE, n_run=n, n_kept=0)
    if not used:
        return Verdict(claim=claim, verdict=MECHANISM_ABSENT,
                       ours=f"{[round(e, 3) for e in effects]} (n=0 of {len(learned)} trained seeds: thoughts unused)",
                       rule=f"claimed positive {what}; counts only seeds where {use_rule}; none did",
                       scale_note=SCALE, n_run=n, n_kept=0)
    return effect_verdict(claim, [effects[i] for i in used], unit, what)


def chance_note(rows: list[dict]) -> str | None:
    best = max(r["choice_accuracy"] for r in rows)
    if best < 0.65:
        return (f"every model is near or below the 50% two-option chance level (best choice accuracy {best:.2f}): "
                "at this scale the numbers are not meaningful accuracy claims, only a check that the pipeline runs")
    return None


def acc(rows, method, seed, name) -> float:
    vals = [r["accuracy"] for r in rows if r["method"] == method and r["seed"] == seed and r["set"] == name]
    return vals[0] if vals else math.nan


def figure(file: str, caption: str):
    return Figure(file=file, caption=caption)


def asdict(config) -> dict[str, Any]:
    d = dataclasses.asdict(config)
    d.pop("extra")
    return d


def noise_figure(rows: list[dict], grid: list[float], out_dir: Path):
    import matplotlib.pyplot as plt

    fits, fig = [], plt.figure(figsize=(5, 3.2))
    ax = fig.gca()
    fine = [grid[0] * (grid[-1] / grid[0]) ** (i / 40) for i in range(41)]
    for method in ("cot", "cot (input)", "coconut"):
        mean = S.summarize([r for r in rows if r["method"] == method], ("sigma",), ("ratio", "predicted"))
        xs, ys = [r["sigma"] for r in mean], [r["ratio"] for r in mean]
        ax.plot([x if x > 0 else grid[0] / 2 for x in xs], ys, "o", label=f"{method} measured")
        if method == "cot" and not all(math.isnan(r["predicted"]) for r in mean):
            ax.plot([x if x > 0 else grid[0] / 2 for x in xs], [r["predicted"] for r in mean], "k:",
                    label="cot per-example prediction")
        ok = [(x, y) for x, y in zip(xs, ys, strict=True) if not math.isnan(y)]
        if sum(x > 0 for x, _ in ok) >= 2:
            r, r2 = fit_noise_ratio([x for x, _ in ok], [y for _, y in ok])
            fits.append({"method": method, "r = margin/sqrt(C)": r, "R^2": r2})
            ax.plot(fine, noise_curve(fine, margin=r).tolist(), "-", label=f"{method} Phi(r/sigma), r={r:.2g}")
    ax.set_xscale("log")
    ax.set_xlabel("sigma (relative to state RMS)")
    ax.set_ylabel("Acc(sigma) / Acc(0)")
    ax.legend(fontsize=7)
    return [figure(save_figure(fig, out_dir, "noise"), "Noise injection with the predicted curves")], fits


def ratio(rows, method, seed, sigma) -> float:
    vals = [r["ratio"] for r in rows if r["method"] == method and r["seed"] == seed and r["sigma"] == sigma]
    return vals[0] if vals else math.nan
