"""The ``memorization`` experiment: measured vs predicted exponents on the Zipf memorisation task (our P2).

Predictions [reconstruction], each tested by an equivalence verdict over seeds
(:func:`~paperlab.experiments.verdicts.verdict_within`): the coverage exponent (alpha-1)/alpha (parameter-free);
the capacity exponent alpha-1 under the strict capacity assumption gamma = 1 (one pattern per parameter; the
gamma the data imply, k_eff ~ N^gamma with k_eff read off the error through the Zipf tail, is reported); the
optimisation exponent (alpha-1)/(alpha opt_bias) at opt_bias = 1 (signal proportional to frequency), for SGD
and Adam, with the implied opt_bias reported. A missed prediction names the assumption the data reject.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from paperlab._runtime import torch_threads
from paperlab.experiments.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Figure, Result, Verdict, mean_std
from paperlab.experiments.protocol import TOO_FEW_SEEDS
from paperlab.experiments.verdicts import verdict_within
from paperlab.scaling.memorization import sweep
from paperlab.tables import save_figure

__all__ = ["exponent_verdict", "run"]

_SCALE = "MLPs with <= 10^5 parameters on K <= 2^14 keys; theory is our reconstruction"


def exponent_verdict(per_exponent: list[Verdict], *, claim: str, tolerance: float) -> Verdict:
    """The claim from one equivalence verdict per (zipf_alpha, resource) exponent: reproduced if every exponent
    agrees with its prediction, not reproduced if any is decided outside it, else inconclusive."""
    n = len(per_exponent)
    agree = sum(v.verdict == REPRODUCED for v in per_exponent)
    miss = [v.claim for v in per_exponent if v.verdict == NOT_REPRODUCED]
    if not per_exponent or any(v.verdict == TOO_FEW_SEEDS for v in per_exponent):
        verdict = TOO_FEW_SEEDS
    elif miss:
        verdict = NOT_REPRODUCED
    else:
        verdict = REPRODUCED if agree == n else INCONCLUSIVE
    seeds = min((v.n_kept or 0) for v in per_exponent) if per_exponent else 0
    ours = f"{agree} of {n} exponents agree (n={seeds} seeds each)" + (f"; missed: {', '.join(miss)}" if miss else "")
    return Verdict(claim=claim, verdict=verdict, ours=ours,
                   rule=f"per exponent: 95% t interval over seeds wholly within prediction +- {tolerance:g} agrees, "
                        "wholly outside misses; the claim needs every exponent to agree (predictions: N at gamma = 1, "
                        "D parameter-free, T at opt_bias = 1)",
                   scale_note=_SCALE, n_run=seeds, n_kept=seeds)


def _plot(per_alpha: dict[float, list[dict[str, Any]]], out_dir: Path) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))

    def guide(ax, x, y0, slope, label):  # the predicted power law through the first point
        x = np.asarray(x, dtype=float)
        ax.loglog(x, y0 * (x / x[0]) ** slope, ":", color="gray", label=label)

    for a, runs in per_alpha.items():
        r = runs[0]
        axes[0].loglog(r["N"], r["error_N"], "o-", label=f"alpha={a}")
        guide(axes[0], r["N"], r["error_N"][0], -(a - 1), f"theory gamma=1: -{a - 1:.2f}")
        axes[1].loglog(r["D"], r["error_D"], "o-", label=f"alpha={a}")
        guide(axes[1], r["D"], r["error_D"][0], -(a - 1) / a, f"theory: -{(a - 1) / a:.2f}")
        axes[2].loglog(r["T"], r["error_T_sgd"], "o-", label=f"SGD alpha={a}")
        axes[2].loglog(r["T"], r["error_T_adam"], "s--", label=f"Adam alpha={a}")
        guide(axes[2], r["T"], r["error_T_sgd"][0], -(a - 1) / a, f"theory opt_bias=1: -{(a - 1) / a:.2f}")
    for ax, x in zip(axes, ("N (parameters)", "D (draws)", "T (full-batch steps)"), strict=True):
        ax.set(xlabel=x, ylabel="Zipf-weighted error")
        ax.legend(fontsize=7)
    return Figure(file=save_figure(fig, out_dir, "memorization_curves"),
                  caption="Zipf memorisation: error vs N, D and T (seed 0); dotted: predicted slopes")


def run(config: Any, *, out_dir: Path) -> Result:
    """Run the sweeps for every zipf_alpha and seed; table of measured vs predicted exponents."""
    start = time.process_time()
    per_alpha: dict[float, list[dict[str, Any]]] = {}
    with torch_threads(1):
        for a in config.zipf_alphas:
            per_alpha[a] = [sweep(zipf_alpha=a, K=config.K, widths=config.widths, cap_steps=config.cap_steps,
                                  D_values=config.D_values, cov_width=config.cov_width, cov_steps=config.cov_steps,
                                  opt_width=config.opt_width, opt_record=config.opt_record, lr_adam=config.lr_adam,
                                  lr_sgd=config.lr_sgd, seed=s) for s in config.seeds]
    table: list[dict[str, Any]] = []
    checks: list[Verdict] = []
    rows: list[dict[str, Any]] = []
    for a, runs in per_alpha.items():
        gam = mean_std([r["gamma"] for r in runs])[0]
        bias = {o: mean_std([(a - 1) / (a * r[f"exp_T_{o}"]) for r in runs])[0] for o in ("sgd", "adam")}
        entries = [("N (capacity)", "exp_N", a - 1, f"gamma = 1 (measured gamma {gam:.3f})"),
                   ("D (coverage)", "exp_D", (a - 1) / a, "parameter-free"),
                   ("T (SGD)", "exp_T_sgd", (a - 1) / a, f"opt_bias = 1 (implied {bias['sgd']:.3f})"),
                   ("T (Adam)", "exp_T_adam", (a - 1) / a, f"opt_bias = 1 (implied {bias['adam']:.3f})")]
        for name, key, pred, note in entries:
            v = verdict_within(f"{name} a={a}", [r[key] for r in runs], target=pred, tolerance=config.tolerance)
            checks.append(v)
            table.append({"zipf_alpha": a, "resource": name, "measured [95% CI]": v.ours, "predicted": pred,
                          "assumption": note, "agrees": v.verdict})
        rows.extend({"zipf_alpha": a, "seed": s, **{k: v for k, v in r.items() if not isinstance(v, list)}}
                    for s, r in zip(config.seeds, runs, strict=True))
    worst = max(r["max_frontier"] for runs in per_alpha.values() for r in runs)
    verdict = exponent_verdict(checks, claim="ef-exponents", tolerance=config.tolerance)
    notes = [f"largest effective frontier reached: {worst:.0f} of K={config.K} keys "
             f"({'within' if worst <= config.K / 10 else 'beyond'} the K/10 range free of finite-K bias)",
             f"CPU time {time.process_time() - start:.1f} s"]
    notes += [f"alpha={t['zipf_alpha']}: {t['resource']} exponent {t['measured [95% CI]']} (predicted "
              f"{t['predicted']:.3f}, {t['assumption']}): {t['agrees']}" for t in table]
    return Result(experiment="memorization", config=asdict(config), rows=rows,
                  tables={"measured vs predicted exponents (error ~ R^-e)": table},
                  figures=[_plot(per_alpha, out_dir)], verdicts=[verdict], notes=notes)
