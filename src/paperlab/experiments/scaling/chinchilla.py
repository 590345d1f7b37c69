"""The ``chinchilla`` experiment: refit Epoch's points, compare laws, allocate, plot every law against the data.

Reference (Besiroglu et al. 2024, Epoch AI): E = 1.82, A = 482, B = 2085, alpha = 0.348, beta = 0.366 after
dropping the five highest-loss runs; with them beta moves to about 0.45.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from paperlab.experiments.base import NOT_REPRODUCED, REPRODUCED, Figure, Result, Verdict
from paperlab.experiments.scaling import plots, study
from paperlab.scaling import zipf
from paperlab.scaling.allocate import optimal_allocation
from paperlab.scaling.data import load_epoch, load_kyo
from paperlab.scaling.isoflop import fit_isoflop
from paperlab.tables import save_figure

__all__ = ["EPOCH_PUBLISHED", "run"]

EPOCH_PUBLISHED = {"E": 1.817, "A": 482.0, "B": 2085.4, "alpha": 0.348, "beta": 0.366}


def _epoch_rows(fits: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [{"fit": "Epoch published (245 - 5 points)", **EPOCH_PUBLISHED,
             "a": EPOCH_PUBLISHED["beta"] / (EPOCH_PUBLISHED["alpha"] + EPOCH_PUBLISHED["beta"])}]
    labels = (("epoch-5/chinchilla", "ours, 5 highest-loss dropped"), ("epoch-all/chinchilla", "ours, all 245"),
              ("kyo/chinchilla", "ours, Kyo 234-row subset"))
    for key, label in labels:
        r = fits[key]
        rows.append({"fit": label, **{k: r.params[k] for k in EPOCH_PUBLISHED}, "a": r.n_exponent})
    return rows


def _ci_rows(res: Any) -> list[dict[str, Any]]:
    return [{"parameter": k, "estimate": res.params.get(k, res.n_exponent), "2.5%": lo, "97.5%": hi}
            for k, (lo, hi) in res.ci.items()]


def _allocation_rows(fits: dict[str, Any], budgets: tuple[float, ...]) -> list[dict[str, Any]]:
    rows = []
    for key in ("epoch-5/chinchilla", "epoch-5/kaplan", "epoch-5/frontier", "epoch-5/frontier strict"):
        law = fits[key].make_law()
        for C in budgets:
            al = optimal_allocation(law, C)
            rows.append({"law": key.split("/")[1], "C": C, "N_opt": al.N, "D_opt": al.D, "tokens/param": al.D / al.N,
                         "loss": al.loss, "active bottleneck": al.bottleneck})
    return rows


def _plots(datasets, fits, out_dir: Path) -> list[Figure]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = datasets["epoch-5"]
    names = ("chinchilla", "kaplan", "frontier", "frontier strict")
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.6), sharey=True)
    for ax, name in zip(axes, names, strict=True):
        pred = fits[f"epoch-5/{name}"].make_law()(d.N, d.D)
        sc = plots.observed_vs_fitted(ax, d.loss, pred, np.log10(d.C), title=name)
    axes[0].set_ylabel("fitted loss")
    fig.colorbar(sc, ax=axes, label="log10 C")
    figs = [Figure(file=save_figure(fig, out_dir, "laws_vs_data"),
                   caption="Every fitted law against Epoch's points (5 highest-loss dropped); colour = log10 FLOP")]
    fig, ax = plt.subplots(figsize=(7.5, 4))
    plots.isoflop_bins(ax, d.N, d.C, d.loss, fits["epoch-5/chinchilla"].make_law())
    ax.set_title("approx. isoFLOP bins with the Chinchilla fit")
    figs.append(Figure(file=save_figure(fig, out_dir, "isoflop_bins"),
                       caption="Epoch's points in log-C bins (approximate isoFLOP curves) with the fitted law"))
    return figs


def run(config: Any, *, out_dir: Path) -> Result:
    """Fit every law on every dataset, compare with Epoch, allocate, and judge the strict-capacity prediction."""
    seed = config.seeds[0]
    datasets = {"epoch-5": load_epoch(drop_highest=5), "epoch-all": load_epoch(), "kyo": load_kyo()}
    fit_rows, fits = study.fit_table(datasets, n_starts=config.n_starts, n_bootstrap=config.n_bootstrap, seed=seed)
    main = fits["epoch-5/chinchilla"]
    a_N, b_D = main.params["alpha"], main.params["beta"]
    al, gam = zipf.inverse_map(a_N, b_D)
    strict_pred = a_N / (1 + a_N)
    ok = abs(b_D - strict_pred) <= config.strict_tolerance
    verdict = Verdict(
        claim="ef-llm-data", verdict=REPRODUCED if ok else NOT_REPRODUCED,
        ours=f"beta_D {b_D:.3f} vs strict prediction {strict_pred:.3f}; AIC strict "
             f"{fits['epoch-5/frontier strict'].aic:.1f} vs free gamma_N {fits['epoch-5/frontier'].aic:.1f}",
        rule=f"|beta_D - alpha_N/(1+alpha_N)| <= {config.strict_tolerance} on Epoch's points (5 dropped)",
        scale_note="digitised points (245 of ~400 runs), D inferred from C = 6ND; prediction is our reconstruction")
    iso = fit_isoflop(flops=datasets["epoch-5"].C, params=datasets["epoch-5"].N, loss=datasets["epoch-5"].loss,
                      bins=12, n_bootstrap=max(config.n_bootstrap, 20), seed=seed)
    lo, hi = iso.ci["n_exponent"]
    a_lo, a_hi = main.ci.get("n_exponent", (float("nan"), float("nan")))
    inv = [{"source": "Epoch refit (ours)", "alpha_N": a_N, "beta_D": b_D, "zipf_alpha": al, "gamma": gam},
           {"source": "Kaplan 2020", "alpha_N": 0.076, "beta_D": 0.095, "zipf_alpha": zipf.inverse_map(0.076, 0.095)[0],
            "gamma": zipf.inverse_map(0.076, 0.095)[1]}]
    notes = [
        f"Epoch refit (5 dropped): alpha={a_N:.4f}, beta={b_D:.4f}, E={main.params['E']:.4f}, "
        f"A={main.params['A']:.1f}, B={main.params['B']:.1f}; "
        "Epoch published alpha=0.348, beta=0.366, E=1.817, A=482, B=2085",
        f"all 245 points: beta={fits['epoch-all/chinchilla'].params['beta']:.3f}, "
        f"E={fits['epoch-all/chinchilla'].params['E']:.3f} (the five high-loss runs move beta by "
        f"{fits['epoch-all/chinchilla'].params['beta'] - b_D:+.3f})",
        f"compute-optimal N_opt ~ C^{main.n_exponent:.3f} (bootstrap 95% CI {a_lo:.3f}..{a_hi:.3f});"
        f" approach 2 on 12 log-C bins (approximate, digitised budgets): C^{iso.n_exponent:.3f} "
        f"[{lo:.3f}, {hi:.3f}]",
        f"inverse map (coverage-limited data): zipf_alpha={al:.3f}, gamma={gam:.3f}; strict gamma=1 predicts "
        f"beta_D={strict_pred:.3f} vs fitted {b_D:.3f}",
        "the tied frontier law with a fitted soft-min sharpness is a reparametrisation of the Kaplan p-norm law "
        "(same optimum, same AIC); only the strict gamma_N = 1 form is a stronger claim",
    ]
    return Result(
        experiment="chinchilla", config={k: getattr(config, k) for k in config.__dataclass_fields__},
        rows=fit_rows,
        tables={"Chinchilla approach 3 vs Epoch's published fit": _epoch_rows(fits),
                "every law on every dataset (held-out: fit on C <= 1e21, RMSE of log L on C > 1e21)": fit_rows,
                "bootstrap CIs, Epoch (5 dropped), Chinchilla law": _ci_rows(main),
                "inverse-mapped theory parameters [reconstruction]": inv,
                "compute-optimal allocation": _allocation_rows(fits, config.budgets)},
        figures=_plots(datasets, fits, out_dir), verdicts=[verdict], notes=notes)
