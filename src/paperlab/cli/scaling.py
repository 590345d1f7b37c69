"""``paperlab scaling fit|isoflop|allocate``: fit scaling laws to a CSV of runs, approach 2, compute allocation."""

from __future__ import annotations

import argparse
from pathlib import Path

from paperlab.cli._argparse import ArgumentParser

__all__ = ["add_parser"]

_REFERENCE = "published fits: chinchilla = Epoch's refit, kaplan = Kaplan 2020 L(N,D)"


def _columns(spec: str | None) -> dict[str, str] | None:
    """``N=Model Size,C=Training FLOP,loss=loss`` -> {"N": "Model Size", ...}."""
    if not spec:
        return None
    out = {}
    for part in spec.split(","):
        if "=" not in part:
            raise ValueError(f"--columns entries must look like ROLE=header, got {part!r} in {spec!r}")
        role, header = part.split("=", 1)
        out[role.strip()] = header.strip()
    return out


def _table(rows: list[dict]) -> str:
    from paperlab.bench import format_table

    return format_table(rows)


def _save_fit_plot(data, law, out: Path, name: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from paperlab.experiments.scaling.plots import observed_vs_fitted
    from paperlab.tables import save_figure

    fig, ax = plt.subplots(figsize=(4.5, 4))
    sc = observed_vs_fitted(ax, data.loss, law(data.N, data.D), np.log10(data.C), title=name)
    ax.set_ylabel("fitted loss")
    fig.colorbar(sc, label="log10 C")
    return out / save_figure(fig, out, name)


def _n_starts(starts: int | None) -> int | None:
    """``--starts``: unset -> the library default (one number, in ``paperlab.scaling.fit``); 0 -> every start."""
    from paperlab.scaling.fit import DEFAULT_STARTS  # here, not at the top: the CLI starts without scipy

    if starts is None:
        return DEFAULT_STARTS
    return starts or None


def _cmd_fit(args: argparse.Namespace) -> int:
    from paperlab.scaling.data import load_csv
    from paperlab.scaling.fit import fit_law

    data = load_csv(args.file, columns=_columns(args.columns))
    res = fit_law(args.law, N=data.N, D=data.D, loss=data.loss, n_starts=_n_starts(args.starts),
                  n_bootstrap=args.bootstrap, seed=args.seed)
    rows = [{"parameter": k, "value": f"{v:.6g}",
             "95% CI": f"[{res.ci[k][0]:.4g}, {res.ci[k][1]:.4g}]" if k in res.ci else ""}
            for k, v in res.params.items()]
    a_ci = res.ci.get("n_exponent")
    rows.append({"parameter": "a (N_opt ~ C^a)", "value": f"{res.n_exponent:.4f}",
                 "95% CI": f"[{a_ci[0]:.4g}, {a_ci[1]:.4g}]" if a_ci else ""})
    print(_table(rows))
    print(f"n={res.n_points} objective={res.objective:.6g} AIC={res.aic:.1f} BIC={res.bic:.1f}")
    print(f"plot: {_save_fit_plot(data, res.make_law(), args.out, f'fit_{args.law}')}")
    return 0


def _cmd_isoflop(args: argparse.Namespace) -> int:
    from paperlab.scaling.data import load_csv
    from paperlab.scaling.isoflop import fit_isoflop

    data = load_csv(args.file, columns=_columns(args.columns))
    res = fit_isoflop(flops=data.C, params=data.N, loss=data.loss, bins=args.bins, n_bootstrap=args.bootstrap,
                      seed=args.seed)
    print(_table([{"C": f"{c:.3g}", "N_opt": f"{n:.4g}", "loss": f"{lv:.4f}"}
                  for c, n, lv in zip(res.budgets, res.n_opt, res.loss_opt, strict=True)]))
    ci = res.ci.get("n_exponent")
    print(f"N_opt ~ C^{res.n_exponent:.4f}" + (f" (95% CI {ci[0]:.4f}..{ci[1]:.4f})" if ci else "")
          + f"; D_opt ~ C^{res.d_exponent:.4f}" + ("  [approximate: log-C bins]" if res.approximate else ""))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from paperlab.tables import save_figure

    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.loglog(res.budgets, res.n_opt, "o", label="per-budget N_opt")
    ax.loglog(res.budgets, [res.n_coef * c**res.n_exponent for c in res.budgets], "-", label=f"C^{res.n_exponent:.3f}")
    ax.set(xlabel="C (FLOP)", ylabel="N_opt")
    ax.legend()
    print(f"plot: {args.out / save_figure(fig, args.out, 'isoflop')}")
    return 0


def _reference_law(name: str):
    from paperlab.scaling.laws import ChinchillaLaw, KaplanLaw

    if name == "chinchilla":
        return ChinchillaLaw(E=1.817, A=482.0, B=2085.4, alpha=0.348, beta=0.366)
    if name == "kaplan":
        return KaplanLaw.from_kaplan()
    raise ValueError("--law frontier has no published constants: pass --data FILE.csv to fit it first")


def _cmd_allocate(args: argparse.Namespace) -> int:
    from paperlab.scaling.allocate import optimal_allocation

    if args.data is not None:
        from paperlab.scaling.data import load_csv
        from paperlab.scaling.fit import fit_law

        data = load_csv(args.data, columns=_columns(args.columns))
        law = fit_law(args.law, N=data.N, D=data.D, loss=data.loss, n_starts=_n_starts(args.starts)).make_law()
        print(f"law {args.law} fitted on {args.data}")
    else:
        law = _reference_law(args.law)
        print(f"law {args.law}: {_REFERENCE}")
    rows = []
    for C in args.compute:
        al = optimal_allocation(law, C, flops_per_param_token=args.flops_per_param_token)
        rows.append({"C": f"{al.C:.3g}", "N_opt": f"{al.N:.4g}", "D_opt": f"{al.D:.4g}",
                     "tokens/param": f"{al.D / al.N:.1f}", "loss": f"{al.loss:.4f}", "bottleneck": al.bottleneck})
    print(_table(rows))
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--columns", default=None,
                   help="ROLE=header pairs for roles N, D, C, loss (default: N,D,C,loss or Epoch's headers)")
    p.add_argument("--bootstrap", type=int, default=100, help="bootstrap resamples for CIs")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resamples")
    p.add_argument("--out", type=Path, default=Path("runs/scaling_cli"), help="folder for plots")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``paperlab scaling`` with its three subcommands."""
    p = sub.add_parser("scaling", help="fit scaling laws, isoFLOP approach 2, compute-optimal allocation",
                       description="Scaling laws (Effective Frontiers, arXiv 2602.02593; theory is a reconstruction).")
    ssub = p.add_subparsers(dest="scaling_command", required=True, parser_class=ArgumentParser)
    f = ssub.add_parser("fit", help="fit a law to a CSV of runs (Huber on log loss, grid + L-BFGS)")
    f.add_argument("file", type=Path, help="CSV with one run per row")
    f.add_argument("--law", choices=("chinchilla", "kaplan", "frontier"), default="chinchilla", help="law to fit")
    f.add_argument("--starts", type=int, default=None,
                   help="L-BFGS runs from the best this many grid starts (default: the library's "
                        "DEFAULT_STARTS, which reaches the full grid's optimum on the public points; 0: every start)")
    _common(f)
    f.set_defaults(func=_cmd_fit, _parser=f)
    i = ssub.add_parser("isoflop", help="approach 2: parabola per budget, then N_opt ~ C^a")
    i.add_argument("file", type=Path, help="CSV with one run per row")
    i.add_argument("--bins", type=int, default=None, help="group by log-C bins (approximate) instead of exact C")
    _common(i)
    i.set_defaults(func=_cmd_isoflop, _parser=i)
    a = ssub.add_parser("allocate", help="N_opt, D_opt, loss and active bottleneck at given budgets")
    a.add_argument("--compute", type=float, nargs="+", required=True, help="budgets in FLOP, e.g. 1e21 1e23")
    a.add_argument("--law", choices=("chinchilla", "kaplan", "frontier"), default="chinchilla", help="law")
    a.add_argument("--data", type=Path, default=None, help="fit the law on this CSV first (else published fits)")
    a.add_argument("--columns", default=None, help="as for fit")
    a.add_argument("--starts", type=int, default=None, help="as for fit")
    a.add_argument("--flops-per-param-token", type=float, default=6.0, help="k in C = k N D")
    a.set_defaults(func=_cmd_allocate, _parser=a)
    p.set_defaults(_parser=p)
