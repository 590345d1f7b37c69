"""Run the registered experiments of selected papers and collect their results."""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from paperlab._validate import check_choice, check_int
from paperlab.data.registry import DatasetNotFoundError
from paperlab.experiments.base import Paper, Result, config_hash

__all__ = ["PaperRun", "configure", "run_papers"]


@dataclasses.dataclass
class PaperRun:
    """Results of one paper's experiments (errors are kept, not swallowed: the report shows them).

    ``skipped`` holds experiments that need a data file which is not on this machine (name -> message).
    """

    paper: Paper
    results: list[Result]
    errors: dict[str, str]
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)


def configure(experiment, mode: str, seeds: int | None) -> Any:
    """Build the experiment's ``quick()`` or ``full()`` config, overriding its seeds if asked."""
    check_choice("mode", mode, ("quick", "full"))
    config = experiment.quick() if mode == "quick" else experiment.full()
    if seeds is not None:
        check_int("seeds", seeds, minimum=1)
        fields = {f.name for f in dataclasses.fields(config)}
        if "seeds" in fields:
            config = dataclasses.replace(config, seeds=tuple(range(seeds)))
    return config


def run_papers(
    papers: Sequence[Paper],
    *,
    mode: str = "quick",
    out: Path,
    seeds: int | None = None,
    progress: bool = True,
) -> list[PaperRun]:
    """Run every experiment of ``papers``; figures go under ``out/<paper key>/<config hash>/``."""
    runs = []
    jobs = [(p, e) for p in papers for e in p.experiments]
    bar = tqdm(total=len(jobs), desc="experiments", disable=not progress, dynamic_ncols=True)
    for paper in papers:
        run = PaperRun(paper=paper, results=[], errors={})
        for exp in paper.experiments:
            bar.set_postfix_str(f"{paper.key}/{exp.name}")
            config = configure(exp, mode, seeds)
            exp_dir = Path(out) / paper.key / exp.name / config_hash(config)
            exp_dir.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            try:
                result = exp.run(config, out_dir=exp_dir)
            except DatasetNotFoundError as exc:  # no fallback exists for this data: say so, do not fail
                run.skipped[exp.name] = str(exc)
            except Exception:  # one failing experiment must not hide the others; the report shows it
                run.errors[exp.name] = traceback.format_exc(limit=8)
            else:
                result.seconds = time.perf_counter() - start
                result.figures = [dataclasses.replace(f, file=str((exp_dir / f.file).relative_to(out)))
                                  for f in result.figures]
                run.results.append(result)
            bar.update(1)
        runs.append(run)
    bar.close()
    return runs
