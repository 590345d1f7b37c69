"""Latent-CoT experiments on the thought chain of trained Coconut models (our X4 and X7): noise compounding
next to the Thm 4.8 bound (arXiv 2602.01148), and the spread / PCA of the thoughts across questions (Fig 5 analogue).

They reuse the reasoners of ``paperlab.experiments.latent_cot`` (same training config, same disk cache), so
after the main experiments they only cost evaluation. The configs live in ``configs``.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import torch

from paperlab._runtime import torch_threads
from paperlab.experiments.base import Result, Verdict
from paperlab.experiments.latent_cot import runs as R
from paperlab.experiments.latent_cot import suite as S
from paperlab.experiments.latent_cot.configs import SCALE, DynamicsConfig
from paperlab.experiments.protocol import NOT_TESTABLE
from paperlab.reasoning.dynamics import thought_chain, thought_dynamics, thought_spread
from paperlab.reasoning.probe import compounding_error_bound
from paperlab.tables import save_figure

__all__ = ["MIN_CONTRACTION_THOUGHTS", "run_error_accumulation", "run_thought_pca"]

MIN_CONTRACTION_THOUGHTS = 4  # fewer trained thoughts give one or two steps of spread ratio, not a trend


def _asdict(config: DynamicsConfig) -> dict[str, Any]:
    d = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name != "base"}
    return {**d, "base": R.asdict(config.base)}


def _examples(config: DynamicsConfig):
    b = config.base
    return S.datasets(b)["generated"][: config.n_examples]


def run_error_accumulation(config: DynamicsConfig, *, out_dir: Path) -> Result:
    """X4: E||x~_M - x*_M||^2 over M thoughts of each seed's Coconut model, next to Thm 4.8's bound with the
    largest finite-difference Lipschitz gain measured along the clean chain."""
    import matplotlib.pyplot as plt

    base, rows, effects = config.base, [], []
    with torch_threads(1), S.disk_cache(R.models_dir(out_dir)):
        for seed in base.seeds:
            model, _ = S.trained(base, "coconut", seed)
            dyn = thought_dynamics(model, _examples(config), S.tokenizer(base),
                                   curriculum=S.reasoner_config(base).curriculum, n_thoughts=config.n_thoughts,
                                   relative_sigma=config.relative_sigma, noise_seeds=base.noise_seeds)
            lip_max, lip_mean = float(dyn.lipschitz.max()), float(dyn.lipschitz.mean())
            for m in range(1, config.n_thoughts + 1):
                floor = dyn.dim * dyn.sigma ** 2  # E||xi||^2, the error of one noisy step
                bound = compounding_error_bound(lip_max, m, dyn.dim, dyn.sigma)
                err = float(dyn.sq_error[m - 1])
                rows.append({"seed": seed, "M": m, "sq_error / d sigma^2": err / floor,
                             "bound / d sigma^2": bound / floor, "bound_holds": float(err <= bound),
                             "L_max": lip_max, "L_mean": lip_mean, "sigma": dyn.sigma})
            effects.append(float(dyn.sq_error[-1] / dyn.sq_error[0]) - 1.0)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for seed in base.seeds:
        mine = [r for r in rows if r["seed"] == seed]
        ax.plot([r["M"] for r in mine], [r["sq_error / d sigma^2"] for r in mine], "o-", label=f"measured, seed {seed}")
        ax.plot([r["M"] for r in mine], [r["bound / d sigma^2"] for r in mine], "k:", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("thought M")
    ax.set_ylabel("E||x~_M - x*_M||^2 / (d sigma^2)")
    ax.legend(fontsize=7, title="dotted: Thm 4.8 bound with L_max", title_fontsize=7)
    figs = [R.figure(save_figure(fig, out_dir, "error_accumulation"), "Noise compounding over thoughts vs Thm 4.8")]
    held = sum(r["bound_holds"] for r in rows)
    verdicts = [R.gated("lcot-error-accumulation", base, effects, "x", "growth of the thought error from M = 1 to M",
                        methods=("coconut",))]
    table = [{"M": m, **{k: _mean(rows, m, k) for k in ("sq_error / d sigma^2", "bound / d sigma^2", "L_max")}}
             for m in range(1, config.n_thoughts + 1)]
    notes = [f"Error growth E||e_M||^2 / E||e_1||^2 - 1 at M = {config.n_thoughts} per seed: "
             f"{[round(e, 3) for e in effects]} (positive: errors compound).",
             f"Thm 4.8's bound (reconstructed statement) with the largest measured local gain held at {held:.0f} of "
             f"{len(rows)} (seed, M) points; the gain is measured with the KV cache held fixed, while noisy earlier "
             "thoughts also change the cache, so the bound is an estimate, not a guarantee here.",
             f"sigma = {config.relative_sigma} x the clean thoughts' RMS coordinate; chains run past the trained "
             f"{S.reasoner_config(base).curriculum.max_stage * base.c} thoughts up to M = {config.n_thoughts}."]
    return Result(experiment="error_accumulation", config=_asdict(config), rows=rows,
                  tables={"thought error vs M (mean over seeds)": table}, figures=figs, verdicts=verdicts,
                  notes=notes)


def _mean(rows: list[dict], m: int, key: str) -> float:
    vals = [r[key] for r in rows if r["M"] == m]
    return sum(vals) / len(vals)


def run_thought_pca(config: DynamicsConfig, *, out_dir: Path) -> Result:
    """X7: the trained thoughts of each seed's Coconut model across held-out questions: relative spread per
    thought and a 2-D PCA (Fig 5 analogue: the paper reports the thoughts contracting)."""
    import matplotlib.pyplot as plt

    base, effects = config.base, []
    rows: list[dict[str, Any]] = []
    cur = S.reasoner_config(base).curriculum
    k = cur.max_stage * base.c
    fig, axes = plt.subplots(1, len(base.seeds), figsize=(3.4 * len(base.seeds), 3.2), squeeze=False)
    with torch_threads(1), S.disk_cache(R.models_dir(out_dir)):
        for ax, seed in zip(axes[0], base.seeds, strict=True):
            model, _ = S.trained(base, "coconut", seed)
            th = thought_chain(model, _examples(config), S.tokenizer(base), curriculum=cur, n_thoughts=k)
            spread = thought_spread(th)
            rows.extend({"seed": seed, "thought": j + 1, "relative spread": float(s)} for j, s in enumerate(spread))
            effects.append(1.0 - float(spread[-1] / spread[0]) if k > 1 else math.nan)
            flat = th.reshape(-1, th.shape[-1]).double()
            _, _, v = torch.linalg.svd(flat - flat.mean(0), full_matrices=False)
            xy = ((th.double() - flat.mean(0)) @ v[:2].T).numpy()
            for j in range(k):
                ax.scatter(xy[:, j, 0], xy[:, j, 1], s=6, alpha=0.6, label=f"thought {j + 1}")
            ax.set_title(f"seed {seed}", fontsize=8)
            ax.set_xlabel("PC1")
    axes[0][0].set_ylabel("PC2")
    axes[0][0].legend(fontsize=7)
    figs = [R.figure(save_figure(fig, out_dir, "thought_pca"), "Continuous thoughts of held-out questions, 2-D PCA")]
    verdicts = [R.gated("lcot-thought-contraction", base, effects, "", "1 - spread(last thought) / spread(first)",
                        methods=("coconut",)) if k >= MIN_CONTRACTION_THOUGHTS else Verdict(
        claim="lcot-thought-contraction", verdict=NOT_TESTABLE, ours=f"{k} trained thoughts",
        rule=f"a contraction across thoughts needs >= {MIN_CONTRACTION_THOUGHTS} trained thoughts (Fig 5 shows "
             "six); with fewer the first-to-last spread ratio is one or two steps, not a trend", scale_note=SCALE)]
    notes = [f"1 - relative spread of the last trained thought over that of the first, per seed: "
             f"{[round(e, 3) for e in effects]} (positive: the thoughts contract across questions).",
             "Relative spread: E||x_j - mean_j||^2 / E||x_j||^2 over held-out questions (scale-free)."]
    return Result(experiment="thought_pca", config=_asdict(config), rows=rows,
                  tables={"relative spread per thought": [
                      {"thought": j + 1, "relative spread": sum(r["relative spread"] for r in rows
                                                                if r["thought"] == j + 1) / len(base.seeds)}
                      for j in range(k)]},
                  figures=figs, verdicts=verdicts, notes=notes)
