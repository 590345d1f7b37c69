"""``paperlab reproduce``: run the registered paper experiments and write the report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_parser"]


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from paperlab.experiments import PAPERS, get_paper

    if args.list:
        for paper in PAPERS.values():
            for claim in paper.claims:
                state = "experiment" if any(e.name == claim.experiment for e in paper.experiments) else "no experiment"
                print(f"{paper.id}\t{paper.key}\t{claim.id}\t{claim.text} [paper: {claim.paper_value}] ({state})")
        return 0
    # the runner and the report load torch: imported only for a run, so `--list` stays torch-free
    from paperlab.data.registry import DATASETS, present_files
    from paperlab.experiments.runner import run_papers
    from paperlab.report import update_readme, write_report

    papers = [get_paper(p) for p in args.papers] if args.papers else list(PAPERS.values())
    mode = "full" if args.full else "quick"
    n_files = sum(len(ds.files) for ds in DATASETS.values())
    missing = n_files - len(present_files())
    if missing:  # said before hours of work, not only in the report's notes
        print(f"paperlab: warning: {missing} of {n_files} registered data files are not "
              "found (set PAPERLAB_DATA; `paperlab data list`): experiments needing them run on built-in "
              "stand-ins or are skipped", file=sys.stderr)
    only = [name for name in args.only.split(",") if name] if args.only else None
    runs = run_papers(papers, mode=mode, out=args.out, seeds=args.seeds, only=only, resume=args.resume,
                      progress=not args.no_progress, jobs=args.jobs, workers=args.workers)
    report = write_report(runs, args.out, mode=mode)
    print(f"report: {report}")
    if args.update_readme is not None:
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


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="run paper experiments and write a report",
                       description="Run the registered experiments and write report.md, results.json, PNGs.")
    p.add_argument("papers", nargs="*", help="arXiv ids or keys (kla, nora, smi, latent_cot, scaling, frele)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="minutes on 2 cores (default)")
    mode.add_argument("--full", action="store_true", help="our small-scale plan (hours)")
    p.add_argument("--out", type=Path, default=Path("runs/report"), help="output folder")
    p.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    p.add_argument("--only", default=None, metavar="EXP[,EXP]",
                   help="run only these experiments of the selected papers (names as in the report)")
    p.add_argument("--resume", action="store_true",
                   help="reuse each experiment's result.json under --out when its config is unchanged")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="run papers in N worker processes (one torch thread each; a paper's experiments stay "
                        "in one process)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="first train the models a paper's experiments share in N processes (papers that support "
                        "it: latent_cot); models already saved under --out are loaded, not retrained")
    p.add_argument("--list", action="store_true", help="print every registered claim and exit")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument("--update-readme", type=Path, default=None, metavar="README",
                   help="rewrite the <!-- results:KEY --> blocks of this file with the measured tables")
    p.set_defaults(func=_cmd_reproduce, _parser=p)
