"""``paperlab readme``: rewrite README result and benchmark blocks from measured JSON."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_parser"]


def _cmd_readme(args: argparse.Namespace) -> int:
    from paperlab.report import update_readme, update_readme_benchmarks

    for results in args.results:
        print(f"{args.readme}: result blocks {update_readme(args.readme, results)} from {results}")
    if args.benchmarks is not None:
        names = update_readme_benchmarks(args.readme, args.benchmarks)
        print(f"{args.readme}: benchmark blocks {names} from {args.benchmarks}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("readme", help="rewrite README blocks from measured results",
                       description="Rewrite the <!-- results:KEY --> blocks from results.json files (later files "
                                   "win) and the <!-- bench:NAME --> blocks from benchmark JSON files.")
    p.add_argument("readme", type=Path, help="the Markdown file to rewrite (atomically)")
    p.add_argument("--results", type=Path, action="append", default=[], metavar="RESULTS_JSON",
                   help="a results.json written by `paperlab reproduce` (repeatable)")
    p.add_argument("--benchmarks", type=Path, default=None, metavar="DIR",
                   help="folder of <name>.json written by `python benchmarks/<name>.py --out`")
    p.set_defaults(func=_cmd_readme, _parser=p)
