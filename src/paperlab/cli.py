"""``paperlab <command>``: argparse -> config -> library call. ``--help`` works on every command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["ArgumentParser", "build_parser", "main"]


class ArgumentParser(argparse.ArgumentParser):
    """argparse that lists the valid options when it rejects an unknown one."""

    def error(self, message: str) -> None:  # type: ignore[override]
        if "unrecognized arguments" in message:
            valid = sorted(o for a in self._actions for o in a.option_strings)
            message += f"\nvalid options for '{self.prog}': {', '.join(valid)}"
        super().error(message)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from paperlab.experiments import PAPERS, get_paper
    from paperlab.experiments.runner import run_papers
    from paperlab.report import write_report

    if args.list:
        for paper in PAPERS.values():
            for claim in paper.claims:
                state = "experiment" if any(e.name == claim.experiment for e in paper.experiments) else "no experiment"
                print(f"{paper.id}\t{paper.key}\t{claim.id}\t{claim.text} [paper: {claim.paper_value}] ({state})")
        return 0
    papers = [get_paper(p) for p in args.papers] if args.papers else list(PAPERS.values())
    mode = "full" if args.full else "quick"
    only = [name for name in args.only.split(",") if name] if args.only else None
    runs = run_papers(papers, mode=mode, out=args.out, seeds=args.seeds, only=only, resume=args.resume,
                      progress=not args.no_progress)
    report = write_report(runs, args.out, mode=mode)
    print(f"report: {report}")
    if args.update_readme is not None:
        from paperlab.report import update_readme

        keys = update_readme(args.update_readme, args.out / "results.json")
        print(f"updated result blocks in {args.update_readme}: {keys}")
    skipped = [f"{r.paper.key}/{name}" for r in runs for name in r.skipped]
    if skipped:
        print(f"skipped for missing data (see `paperlab data list`): {skipped}", file=sys.stderr)
    failed = [f"{r.paper.key}/{name}" for r in runs for name in r.errors]
    if failed:
        print(f"experiments that failed (see the report): {failed}", file=sys.stderr)
        return 1
    return 0


def _cmd_data(args: argparse.Namespace) -> int:
    from paperlab.data import DATASETS, DatasetNotFoundError, download, path

    if args.data_command == "list":
        for name, ds in DATASETS.items():
            for role in ds.files:
                try:
                    where = str(path(name, role))
                except DatasetNotFoundError:
                    where = "MISSING"
                print(f"{name:18s} {role:7s} {where}")
        return 0
    for name in args.names:
        for written in download(name, root=args.dir, base_url=args.base_url):
            print(f"{name}: {written}")
    return 0


def _cmd_readme(args: argparse.Namespace) -> int:
    from paperlab.report import update_readme, update_readme_benchmarks

    for results in args.results:
        print(f"{args.readme}: result blocks {update_readme(args.readme, results)} from {results}")
    if args.benchmarks is not None:
        names = update_readme_benchmarks(args.readme, args.benchmarks)
        print(f"{args.readme}: benchmark blocks {names} from {args.benchmarks}")
    return 0


def _add_readme(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("readme", help="rewrite README blocks from measured results",
                       description="Rewrite the <!-- results:KEY --> blocks from results.json files (later files "
                                   "win) and the <!-- bench:NAME --> blocks from benchmark JSON files.")
    p.add_argument("readme", type=Path, help="the Markdown file to rewrite (atomically)")
    p.add_argument("--results", type=Path, action="append", default=[], metavar="RESULTS_JSON",
                   help="a results.json written by `paperlab reproduce` (repeatable)")
    p.add_argument("--benchmarks", type=Path, default=None, metavar="DIR",
                   help="folder of <name>.json written by `python benchmarks/<name>.py --out`")
    p.set_defaults(func=_cmd_readme, _parser=p)


def _add_reproduce(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="run paper experiments and write a report",
                       description="Run the registered experiments and write report.md, results.json, PNGs.")
    p.add_argument("papers", nargs="*", help="arXiv ids or keys (kla, nora, smi, latent_cot, scaling, frele)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="minutes on 2 cores (default)")
    mode.add_argument("--full", action="store_true", help="the spec's small-scale plan (hours)")
    p.add_argument("--out", type=Path, default=Path("runs/report"), help="output folder")
    p.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    p.add_argument("--only", default=None, metavar="EXP[,EXP]",
                   help="run only these experiments of the selected papers (names as in the report)")
    p.add_argument("--resume", action="store_true",
                   help="reuse each experiment's result.json under --out when its config is unchanged")
    p.add_argument("--list", action="store_true", help="print every registered claim and exit")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument("--update-readme", type=Path, default=None, metavar="README",
                   help="rewrite the <!-- results:KEY --> blocks of this file with the measured tables")
    p.set_defaults(func=_cmd_reproduce, _parser=p)


def _add_data(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="list or download datasets", description="Dataset registry.")
    dsub = p.add_subparsers(dest="data_command", required=True, parser_class=ArgumentParser)
    dsub.add_parser("list", help="where each dataset was found, or MISSING")
    d = dsub.add_parser("download", help="download, verify sha256, write atomically")
    d.add_argument("names", nargs="+", help="dataset names (see `paperlab data list`)")
    d.add_argument("--dir", type=Path, default=None, help="destination root (default: user cache)")
    d.add_argument("--base-url", default=None, help="mirror replacing the canonical URLs")
    d.set_defaults(_parser=d)
    p.set_defaults(func=_cmd_data)


def _subcommands() -> dict[str, Callable[[argparse._SubParsersAction], None]]:
    # Each method's CLI module registers its own subcommand; they import heavy code only when run.
    return {"reproduce": _add_reproduce, "readme": _add_readme, "data": _add_data,
            "lm": __import__("paperlab.cli_lm").cli_lm.add_parser,
            "forecast": __import__("paperlab.cli_forecast").cli_forecast.add_parser,
            "scaling": __import__("paperlab.cli_scaling").cli_scaling.add_parser}


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="paperlab", description="Six ML papers as tested software; claims checked by code.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=ArgumentParser)
    for add in _subcommands().values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # report against the innermost subcommand so the message lists *its* valid options
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
