"""Run the registered experiments of selected papers and collect their results."""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import as_completed
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from paperlab._runtime import spawn_pool
from paperlab._validate import check_choice, check_int
from paperlab.data.registry import DatasetNotFoundError, present_files
from paperlab.experiments.base import SHOW_PROGRESS, Paper, Result
from paperlab.experiments.cache import cache_key, config_hash, json_codec, load_or_compute, usable
from paperlab.experiments.verdicts import quick_verdict

__all__ = ["PaperRun", "configure", "run_papers"]

# bump when what a saved result holds changes: older result.json files are then recomputed, with a warning
_RESULT_CODE = "result/1"
_RESULT = json_codec(encode=Result.to_dict, decode=Result.from_dict)


@dataclasses.dataclass
class PaperRun:
    """Results of one paper's experiments (errors are kept, not swallowed: the report shows them).

    ``skipped`` holds experiments that need a data file which is not on this machine (name -> message);
    ``not_run`` the experiments left out by ``only``.
    """

    paper: Paper
    results: list[Result]
    errors: dict[str, str]
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    not_run: list[str] = dataclasses.field(default_factory=list)


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
    only: Sequence[str] | None = None,
    resume: bool = False,
    progress: bool = True,
    jobs: int = 1,
    workers: int = 1,
) -> list[PaperRun]:
    """Run every experiment of ``papers``; figures go under ``out/<paper key>/<experiment>/<config hash>/``.

    Each finished experiment also writes ``result.json`` there (atomically, a ``paperlab.experiments.cache``
    entry). With ``resume``, an experiment whose folder already holds a usable one (its key pins the exact
    config, the package and result versions, and the sha256 of its content) is loaded instead of rerun, so an
    interrupted hours-long ``full`` run continues where it stopped; a damaged, stale or hand-edited one is
    rerun with a ``CacheWarning`` naming it. ``only`` restricts the run to the named experiments (the other
    experiments of those papers are left out of the returned runs).

    ``jobs > 1`` runs papers in that many worker processes (spawned, one torch thread each; a paper's
    experiments stay in one process, in order, since they share cached runs). Results are the same as with
    ``jobs=1``; only the per-experiment progress bars are hidden.

    ``workers > 1``: a paper with a ``prepare`` hook first trains the runs its experiments share in that many
    processes (only for the experiments that will compute, not those whose result.json is reused).
    """
    check_int("jobs", jobs, minimum=1)
    check_int("workers", workers, minimum=1)
    todo = [(p, e) for p in papers for e in p.experiments if only is None or e.name in only]
    if only is not None:
        valid = sorted({e.name for p in papers for e in p.experiments})
        unknown = sorted(set(only) - set(valid))
        if unknown:
            raise ValueError(f"only={unknown} names no experiment of the selected papers; choose from {valid}")
    runs = {p.id: PaperRun(paper=p, results=[], errors={},
                           not_run=[e.name for e in p.experiments if (p, e) not in todo]) for p in papers}
    bar = tqdm(total=len(todo), desc="experiments", disable=not progress, dynamic_ncols=True)
    token = SHOW_PROGRESS.set(progress and jobs == 1)
    try:
        if workers > 1:
            for paper in papers:
                _prepare(paper, [e for p, e in todo if p is paper], mode=mode, seeds=seeds, out=Path(out),
                         resume=resume, workers=workers, progress=progress)
        if jobs == 1:
            for paper, exp in todo:
                bar.set_postfix_str(f"{paper.key}/{exp.name}")
                _run_one(runs[paper.id], exp, _configure_dir(exp, mode, seeds, out, paper), out=Path(out),
                         resume=resume, quick=mode == "quick")
                bar.update(1)
        else:
            _run_parallel(runs, todo, jobs=jobs, mode=mode, seeds=seeds, out=Path(out), resume=resume, bar=bar)
    finally:
        SHOW_PROGRESS.reset(token)
        bar.close()
    for run in runs.values():  # on every assembly, --resume included: the cached result.json files stay as computed
        if run.paper.review is not None:
            run.paper.review(run.results)
    return list(runs.values())


def _configure_dir(exp: Any, mode: str, seeds: int | None, out: Path, paper: Paper) -> tuple[Any, Path]:
    config = configure(exp, mode, seeds)
    exp_dir = Path(out) / paper.key / exp.name / config_hash(config)
    exp_dir.mkdir(parents=True, exist_ok=True)
    return config, exp_dir


def _paper_worker(paper: Paper, names: list[str], mode: str, seeds: int | None, out: Path,
                  resume: bool) -> PaperRun:
    """One paper's selected experiments, in a worker process (one torch thread, no progress bars)."""
    torch.set_num_threads(1)
    SHOW_PROGRESS.set(False)
    run = PaperRun(paper=paper, results=[], errors={})
    for exp in (e for e in paper.experiments if e.name in names):
        _run_one(run, exp, _configure_dir(exp, mode, seeds, out, paper), out=out, resume=resume,
                 quick=mode == "quick")
    return run


def _run_parallel(runs: dict[str, PaperRun], todo: list[tuple[Paper, Any]], *, jobs: int, mode: str,
                  seeds: int | None, out: Path, resume: bool, bar: Any) -> None:
    by_paper: dict[str, list[str]] = {}
    for paper, exp in todo:
        by_paper.setdefault(paper.id, []).append(exp.name)
    # the papers with the most experiments first (a proxy for the longest), so the last to start are short
    order = sorted(by_paper, key=lambda pid: -len(by_paper[pid]))
    with spawn_pool(jobs) as pool:
        futures = {pool.submit(_paper_worker, runs[pid].paper, by_paper[pid], mode, seeds, out, resume): pid
                   for pid in order}
        for future in as_completed(futures):
            pid = futures[future]
            done = future.result()
            runs[pid].results, runs[pid].errors, runs[pid].skipped = done.results, done.errors, done.skipped
            bar.set_postfix_str(f"{runs[pid].paper.key} done")
            bar.update(len(by_paper[pid]))


def _result_key(paper: Paper, exp: Any, config: Any):
    # the data files in view are part of the key: a result computed on a built-in stand-in corpus (data missing)
    # must not be reused once the real file is there
    return cache_key(config, paper.key, exp.name, present_files(), code=f"{_RESULT_CODE}/v{exp.version}")


def _prepare(paper: Paper, exps: list[Any], *, mode: str, seeds: int | None, out: Path, resume: bool,
             workers: int, progress: bool) -> None:
    """Call ``paper.prepare`` with the configs of the experiments in ``exps`` that will compute."""
    if paper.prepare is None:
        return
    configs = {}
    for exp in exps:
        config, exp_dir = _configure_dir(exp, mode, seeds, out, paper)
        if not (resume and usable(exp_dir / "result.json", _result_key(paper, exp, config), codec=_RESULT)):
            configs[exp.name] = config
    if configs:
        paper.prepare(configs, out=out, workers=workers, progress=progress)


def _run_one(run: PaperRun, exp: Any, where: tuple[Any, Path], *, out: Path, resume: bool, quick: bool) -> None:
    config, exp_dir = where
    def compute() -> Result:
        start = time.perf_counter()
        result = exp.run(config, out_dir=exp_dir)
        result.seconds = time.perf_counter() - start
        return result  # saved with figure files relative to exp_dir, as run() returned them

    key = _result_key(run.paper, exp, config)
    try:
        result = load_or_compute(exp_dir / "result.json", key, compute, codec=_RESULT, reuse=resume)
    except DatasetNotFoundError as exc:  # no fallback exists for this data: say so, do not fail
        run.skipped[exp.name] = str(exc)
        return
    except Exception:  # one failing experiment must not hide the others; the report shows it
        run.errors[exp.name] = traceback.format_exc(limit=8)
        return
    result.figures = [dataclasses.replace(f, file=str((exp_dir / f.file).relative_to(out))) for f in result.figures]
    if quick:  # a pipeline check: numbers, and no verdict that rests on fewer than 3 kept seeds
        result.verdicts = [quick_verdict(v) for v in result.verdicts]
    run.results.append(result)
