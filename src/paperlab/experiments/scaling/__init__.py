"""Effective Frontiers (arXiv 2602.02593): scaling laws from Zipfian coverage; claims and experiments.

The paper's body was unavailable: every theory formula used here is our reconstruction from the abstract and the
paper gives no numbers to compare with. Experiments: ``theory`` (simulator vs closed forms, regimes),
``chinchilla`` (refits of Epoch's digitised points), ``memorization`` (MLPs learning a Zipf task on CPU),
``isoflop`` (the allocation exponent predicted from measured bottlenecks vs an isoFLOP sweep, in two regimes).
Heavy imports (numpy, scipy, torch, matplotlib) happen inside the run functions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from paperlab.experiments.base import Claim, Experiment, Figure, Paper, Result
from paperlab.experiments.verdicts import ConsistencyCheck, consistency_rows
from paperlab.tables import save_figure

__all__ = ["PAPER", "ChinchillaConfig", "IsoFlopConfig", "MemorizationConfig", "TheoryConfig"]

_SCALE = "theory is our reconstruction; CPU-scale MLPs and digitised Chinchilla points only"


# ----------------------------------------------------------------------------------------------- theory
@dataclass(frozen=True, kw_only=True)
class TheoryConfig:
    """Simulator exponent table and the Kaplan->Chinchilla regime switch (our P1)."""

    zipf_alphas: tuple[float, ...] = (1.3, 1.5, 1.7, 2.1)
    opt_biases: tuple[float, ...] = (0.5, 1.0)
    n_points: int = 5
    regime_alpha: float = 1.5
    regime_opt_bias: float = 0.25
    tolerance: float = 0.05
    seeds: tuple[int, ...] = (0,)

    @classmethod
    def quick(cls) -> TheoryConfig:
        return cls(zipf_alphas=(1.5, 2.1), n_points=4)

    @classmethod
    def full(cls) -> TheoryConfig:
        return cls(n_points=9)


def _run_theory(config: TheoryConfig, *, out_dir: Path) -> Result:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from paperlab.experiments.scaling import study

    table = study.exponent_table(config.zipf_alphas, config.opt_biases, n_points=config.n_points)
    worst = max(abs(r[f"{k} closed"] - r[f"{k} sim"]) for r in table for k in ("N", "D", "T"))
    law = study.regime_law(zipf_alpha=config.regime_alpha, opt_bias=config.regime_opt_bias)
    budgets = np.geomspace(1e6, 1e16, 11)
    prof = study.regime_profile(law, budgets)
    a, b = config.regime_alpha, config.regime_opt_bias
    low, high = prof[0]["local N_opt exponent"], prof[-1]["local N_opt exponent"]
    kap = study.kaplan_reference()
    switch = abs(low - 1 / (1 + a * b)) <= config.tolerance and abs(high - 1 / (1 + a)) <= config.tolerance
    bracket = kap["L(N,D) capacity-coverage"] <= kap["reported"] <= kap["L(N,S) capacity-optimisation"]
    # Both halves cannot fail the paper: the first compares the reconstruction's numerics with its own closed form,
    # the second brackets Kaplan's published 0.73 by two other published constants. So: consistency checks.
    checks = [ConsistencyCheck.within("simulated N_opt exponent, optimisation-bound end vs 1/(1+alpha opt_bias)",
                                      measured=low, expected=1 / (1 + a * b), tolerance=config.tolerance),
              ConsistencyCheck.within("simulated N_opt exponent, coverage-bound end vs 1/(1+alpha)",
                                      measured=high, expected=1 / (1 + a), tolerance=config.tolerance),
              ConsistencyCheck(name="Kaplan's 0.73 between the equilibria of Kaplan's L(N,D) and L(N,S) fits",
                               measured=kap["reported"], expected=kap["L(N,D) capacity-coverage"],
                               passed=bool(bracket), note=f"interval [{kap['L(N,D) capacity-coverage']:.3f}, "
                                                          f"{kap['L(N,S) capacity-optimisation']:.3f}]")]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    Ns, Ds = np.geomspace(1, 1e7, 80), np.geomspace(1e2, 1e10, 80)
    NN, DD = np.meshgrid(Ns, Ds)
    fr = law.frontiers(NN, DD, DD / 1e3)
    binding = np.argmin(np.stack([fr["capacity"], fr["coverage"], fr["optimization"]]), axis=0)
    ax.contourf(NN, DD, binding, levels=[-0.5, 0.5, 1.5, 2.5], colors=["#d8e2f0", "#f6dcc0", "#d9ecd0"])
    ax.plot([r["N_opt"] for r in prof], [r["D_opt"] for r in prof], "k.-", label="compute-optimal (N, D)")
    ax.set(xscale="log", yscale="log", xlabel="N", ylabel="D (tokens; T = D/1e3)",
           title="binding bottleneck: capacity (blue), coverage (orange), optimisation (green)")
    ax.legend(fontsize=7)
    figs = [Figure(file=save_figure(fig, out_dir, "regimes"),
                   caption="Regimes of the reconstructed frontier law with the N_opt(C) path [reconstruction]")]
    # The claim itself is decided by the isoflop experiment; these checks cannot fail the paper.
    notes = [f"consistency checks (no verdict) all hold: {'yes' if switch and bracket else 'NO'}",
             f"simulator slopes match the closed forms within {worst:.4f} (tolerance 0.02 in the tests)",
             f"one law, opt_bias={b}: N_opt ~ C^{low:.3f} while optimisation binds, C^{high:.3f} once coverage "
             "binds; sum vs max (p-norm) leaves exponents unchanged (tested to 1e-6)",
             f"Kaplan's fits imply {kap['L(N,D) capacity-coverage']:.3f} from L(N,D) and "
             f"{kap['L(N,S) capacity-optimisation']:.3f} from the step-limited L(N,S); 0.73 needs alpha*opt_bias "
             f"~0.37 under the reconstruction"]
    return Result(experiment="theory", config=asdict(config), rows=table,
                  tables={"closed-form vs simulated exponents (dL ~ R^-e)": table,
                          "regime profile (hard-min frontier law)": prof,
                          "consistency checks": consistency_rows(checks)},
                  figures=figs, notes=notes)


# ----------------------------------------------------------------------------------------------- chinchilla
@dataclass(frozen=True, kw_only=True)
class ChinchillaConfig:
    """Refits on Epoch's points (5 highest-loss runs dropped, and all 245) and the Kyo subset (our P3, P4)."""

    n_starts: int | None = 32
    n_bootstrap: int = 20
    budgets: tuple[float, ...] = (1e20, 1e22, 1e24)
    strict_tolerance: float = 0.05
    seeds: tuple[int, ...] = (0,)

    @classmethod
    def quick(cls) -> ChinchillaConfig:
        return cls(n_starts=6, n_bootstrap=20)

    @classmethod
    def full(cls) -> ChinchillaConfig:
        # 32 starts, not all: from every start (640-6,912 per law, 18-320 CPU-s a fit, 24 fits here) the best-
        # scoring start alone reached the full grid's optimum in all 14 fits measured (fit.DEFAULT_STARTS)
        return cls(n_starts=32, n_bootstrap=1000)


def _run_chinchilla(config: ChinchillaConfig, *, out_dir: Path) -> Result:
    from paperlab.experiments.scaling import chinchilla as chinchilla_report

    return chinchilla_report.run(config, out_dir=out_dir)


# ----------------------------------------------------------------------------------------------- memorization
@dataclass(frozen=True, kw_only=True)
class MemorizationConfig:
    """Zipf memorisation by MLPs 64 -> W -> W -> 64 (our P2); errors are Zipf-weighted over all K keys."""

    zipf_alphas: tuple[float, ...] = (1.5,)
    K: int = 2**13
    widths: tuple[int, ...] = (8, 16, 32)
    cap_steps: int = 1500
    D_values: tuple[int, ...] = (300, 1000, 3000, 10000)
    cov_width: int = 64
    cov_steps: int = 300
    opt_width: int = 32
    opt_record: tuple[int, ...] = (30, 60, 120, 250, 500)
    lr_adam: float = 1e-2
    lr_sgd: float = 0.1
    alpha_resolution: float = 0.1  # an exponent agrees if the alpha it implies is within this of the task's
    seeds: tuple[int, ...] = (0,)

    @classmethod
    def quick(cls) -> MemorizationConfig:
        return cls(seeds=(0, 1))

    @classmethod
    def full(cls) -> MemorizationConfig:
        # W up to 512 and 10^4 steps over 2^14 keys (our first plan) is ~2.6 CPU-hours per (alpha, seed) here; this
        # grid takes ~3 CPU-minutes per (alpha, seed) (2^13 keys let alpha = 1.3's frontier pass K/4)
        return cls(zipf_alphas=(1.3, 1.5, 2.0), K=2**14, widths=(8, 16, 32, 64), cap_steps=2000,
                   D_values=(300, 1000, 3000, 10000, 30000, 100000), cov_width=64, cov_steps=1000,
                   opt_width=32, opt_record=(30, 100, 300, 1000, 3000), seeds=(0, 1, 2))


@dataclass(frozen=True, kw_only=True)
class IsoFlopConfig:
    """Budgets are in parameter-steps (optimisation regime, C = N T) and parameter-draws (coverage, C = N D)."""

    zipf_alpha: float = 2.0
    K: int = 2**12
    widths: tuple[int, ...] = (8, 16, 32, 64)
    lr: float = 1e-2
    opt_steps: int = 1000
    opt_fit_steps: tuple[int, ...] = (10, 20, 40, 80, 160)  # where the widest model fits gamma_T
    opt_budgets: tuple[float, ...] = (3e5, 6e5, 1.2e6, 2.4e6)
    cov_steps: int = 1000
    cov_D: tuple[int, ...] = (300, 1000, 3000, 10000, 30000)  # the widest model's gamma_D axis
    cov_D_ample: int = 1_000_000  # draws at which every width is capacity-bound (its gamma_N axis)
    cov_budgets: tuple[float, ...] = (5e7, 1.5e8, 4.5e8)
    min_runs: int = 3  # widths needed on an isoFLOP curve
    tolerance: float = 0.05
    n_bootstrap: int = 200
    seeds: tuple[int, ...] = (0,)

    @classmethod
    def quick(cls) -> IsoFlopConfig:  # a pipeline check: 3 widths leave one interior width per curve
        return cls(K=2**11, widths=(8, 16, 32), opt_steps=500, opt_budgets=(1.5e5, 3e5, 6e5), cov_steps=500,
                   cov_D=(300, 1000, 3000, 10000), cov_D_ample=300_000, cov_budgets=(3e7, 1e8, 3e8))

    @classmethod
    def full(cls) -> IsoFlopConfig:
        # 10-25 CPU-minutes per seed on this CPU (more on a loaded machine), most of it in the 8 full-batch runs
        # over 2^14 keys
        return cls(K=2**14, widths=(8, 11, 16, 23, 32, 45, 64, 90), opt_steps=3000,
                   opt_fit_steps=(10, 20, 40, 80, 160, 320), opt_budgets=(3e5, 6e5, 1.2e6, 2.5e6, 5e6, 1e7),
                   cov_steps=2000, cov_D=(300, 1000, 3000, 10000, 30000, 100000, 300000), cov_D_ample=10_000_000,
                   cov_budgets=(3e7, 1e8, 3e8, 1e9, 3e9, 1e10), seeds=(0, 1, 2))


def _run_isoflop(config: IsoFlopConfig, *, out_dir: Path) -> Result:
    from paperlab.experiments.scaling import isoflop

    return isoflop.run(config, out_dir=out_dir)


def _run_memorization(config: MemorizationConfig, *, out_dir: Path) -> Result:
    from paperlab.experiments.scaling import memorization as memo_report

    return memo_report.run(config, out_dir=out_dir)


PAPER = Paper(
    id="2602.02593",
    name="Effective Frontiers: a unification of neural scaling laws",
    key="scaling",
    claims=(
        Claim(id="ef-exponents", text="precise scaling laws for N, D and C from capacity, coverage and "
              "optimization bottlenecks (exponents set by the Zipf exponent)",
              paper_value="no numbers available; closed forms are our reconstruction", experiment="memorization"),
        Claim(id="ef-equilibria", text="Kaplan and Chinchilla are equilibria of one constrained problem under "
              "different active bottlenecks", paper_value="qualitative", experiment="isoflop"),
        Claim(id="ef-llm-data", text="the frontier law describes LLM scaling data: strict capacity form "
              "(one pattern per parameter) predicts beta_D = alpha_N/(1+alpha_N) on Chinchilla's runs",
              paper_value="no numbers; the prediction is our reconstruction", experiment="chinchilla"),
    ),
    experiments=(
        Experiment(name="theory", title="Simulator vs closed forms; Kaplan->Chinchilla regime switch",
                   quick=TheoryConfig.quick, full=TheoryConfig.full, run=_run_theory),
        Experiment(name="chinchilla", title="Refits of Epoch's Chinchilla points; law comparison; allocation",
                   quick=ChinchillaConfig.quick, full=ChinchillaConfig.full, run=_run_chinchilla),
        Experiment(name="memorization", title="Predicted vs measured exponents on a Zipf memorisation task",
                   quick=MemorizationConfig.quick, full=MemorizationConfig.full, run=_run_memorization),
        Experiment(name="isoflop", title="IsoFLOP test of the Max-Bottleneck allocation in two regimes",
                   quick=IsoFlopConfig.quick, full=IsoFlopConfig.full, run=_run_isoflop),
    ),
    scale_note=f"Scale: {_SCALE}.",
)
