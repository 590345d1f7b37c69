"""Train the reasoners the latent-CoT experiments share in parallel worker processes, before the experiments
evaluate them (``paperlab reproduce latent_cot --full --workers 2``).

Each experiment trains a reasoner on first use, one after another in one process. The models of a run are
independent but for their starts (a seed's warm start before its language models, its CoT reasoner before its
latent ones, a Coconut before its soft-thought fine-tunes), so :func:`plan` lists them as jobs with those
dependencies and :func:`pretrain` runs the ready ones in ``workers`` processes. A job calls ``suite.warm_start`` /
``suite.trained`` inside ``suite.disk_cache`` on the experiments' shared folder, which writes every model
atomically under its key: the experiments then load them, and an interrupted pretraining resumes where it
stopped (a finished model is loaded, not retrained). :func:`prepare` adds the CPU seconds of each model it trains
to ``train_seconds.json`` in that folder, so the cost of a run resumed over several sessions adds up.
"""

from __future__ import annotations

import dataclasses
import json
import time
import warnings
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tqdm.auto import tqdm

from paperlab._runtime import spawn_pool, torch_threads
from paperlab._validate import check_int
from paperlab.experiments.latent_cot import suite as S
from paperlab.experiments.latent_cot.configs import InterventionConfig, LatentCoTConfig, TuningConfig
from paperlab.experiments.latent_cot.lr_tuning import tuning_tasks
from paperlab.experiments.latent_cot.tradeoff import METHODS as ARITH_METHODS
from paperlab.io import atomic_write_json
from paperlab.reasoning.coconut import LATENT_METHODS as _LATENT

__all__ = ["TIMES_FILE", "JobTime", "ModelJob", "plan", "plan_for", "prepare", "pretrain", "record_times",
           "recorded_times"]

TIMES_FILE = "train_seconds.json"  # beside the models: CPU seconds of each model trained (see ``record_times``)


@dataclass(frozen=True)
class ModelJob:
    """One model to train: the seed's warm start (``method`` None) or ``suite.trained(config, method, seed,
    soft_tau=, lr=, teacher_thoughts=)``; ``deps``: names of the jobs whose models it starts from."""

    name: str
    config: LatentCoTConfig
    method: str | None
    seed: int
    soft_tau: float | None = None
    lr: float | None = None
    teacher_thoughts: bool = False
    deps: tuple[str, ...] = ()


def plan(config: LatentCoTConfig, *, arith_methods: tuple[str, ...] = (),
         intervention: InterventionConfig | None = None, tuning: TuningConfig | None = None) -> list[ModelJob]:
    """The models of ``config``'s methods on graphs and of ``arith_methods`` on arith_chain at every seed,
    ``intervention``'s soft-thought Coconuts on both tasks, and ``tuning``'s grid points on its base's first seed
    (extensions past an edge depend on the scores: the tuning trains those itself), each after the models it
    starts from."""
    tasks = {"graph": (config, config.methods),
             "arith": (dataclasses.replace(config, task="arith"), arith_methods)}
    jobs: dict[str, ModelJob] = {}

    def add(cfg: LatentCoTConfig, method: str | None, seed: int, *, tau: float | None = None,
            lr: float | None = None, teacher: bool = False) -> str:
        name = _name(cfg, method, seed, tau, lr, teacher)
        if name not in jobs:
            jobs[name] = ModelJob(name=name, config=cfg, method=method, seed=seed, soft_tau=tau, lr=lr,
                                  teacher_thoughts=teacher, deps=_deps(cfg, method, seed, tau, teacher, add))
        return name

    for cfg, methods in tasks.values():  # language methods first: the latent ones start from CoT
        for seed in config.seeds:
            for method in sorted(methods, key=lambda m: m in _LATENT):
                add(cfg, method, seed)
    soft = sorted(set(intervention.soft_models().values())) if intervention is not None else []
    for cfg, _ in tasks.values():
        for seed in config.seeds:
            for tau, teacher in soft:
                add(cfg, "coconut", seed, tau=tau, teacher=teacher)
    if tuning is not None:
        base = tuning.base
        for cfg, methods in tuning_tasks(tuning).values():
            for method in sorted(methods, key=lambda m: m in _LATENT):
                for lr in tuning.grid(cfg, method):
                    add(cfg, method, base.seeds[0], lr=None if lr == cfg.lr_for(method) else lr)
    return list(jobs.values())


def _name(cfg: LatentCoTConfig, method: str | None, seed: int, tau: float | None, lr: float | None,
          teacher: bool) -> str:
    parts = [cfg.task, method or "warm", f"s{seed}"]
    parts += [f"tau{tau:g}"] if tau is not None else []
    parts += [f"lr{lr:.3g}"] if lr is not None else []
    parts += ["teacher"] if teacher else []
    return "/".join(parts)


def _deps(cfg: LatentCoTConfig, method: str | None, seed: int, tau: float | None, teacher: bool,
          add: Any) -> tuple[str, ...]:
    """The job of the model ``suite.trained`` starts this one from (added to the plan first), if any."""
    start = None if method is None else S.start_of(cfg, method, soft_tau=tau, teacher_thoughts=teacher)
    if start is None:
        return ()
    return (add(cfg, {"hard": method, "cot": "cot", "warm": None}[start], seed),)


def plan_for(configs: Mapping[str, Any]) -> list[ModelJob]:
    """The jobs of the experiments about to run (name -> config, as the runner builds them): the union of each
    experiment's models."""
    jobs: dict[str, ModelJob] = {}
    for name, cfg in configs.items():
        if isinstance(cfg, TuningConfig):
            found = plan(dataclasses.replace(cfg.base, seeds=cfg.base.seeds[:1], methods=()), tuning=cfg)
        elif isinstance(cfg, InterventionConfig):
            found = plan(dataclasses.replace(cfg.base, methods=()), intervention=cfg)
        else:  # a LatentCoTConfig, or a DynamicsConfig's base (Coconut's models)
            found = plan(getattr(cfg, "base", cfg), arith_methods=ARITH_METHODS if name == "tradeoff" else ())
        jobs.update((j.name, j) for j in found if j.name not in jobs)
    return _ordered(list(jobs.values()))


def _ordered(jobs: list[ModelJob]) -> list[ModelJob]:
    """Jobs in an order where each follows its dependencies, keeping the given order otherwise."""
    out: list[ModelJob] = []
    by_name, seen = {j.name: j for j in jobs}, set()

    def visit(job: ModelJob) -> None:
        if job.name in seen:
            return
        seen.add(job.name)
        for dep in job.deps:
            visit(by_name[dep])
        out.append(job)

    for job in jobs:
        visit(job)
    return out


class JobTime(NamedTuple):
    """What one job cost: the CPU seconds of its worker process and whether it trained its model (False: the
    model was already saved, and the seconds are its load time)."""

    cpu_seconds: float
    trained: bool


def pretrain(jobs: list[ModelJob], *, cache_dir: str | Path, workers: int = 2,
             progress: bool = True) -> dict[str, JobTime]:
    """Train ``jobs`` in ``workers`` spawned processes (one torch thread each), each once its dependencies are
    done, saving into ``cache_dir`` (the experiments' ``runs.models_dir``) and adding each trained model's CPU
    seconds to its record (:func:`record_times`) as it finishes. Returns job name -> :class:`JobTime`. A failing
    job stops the scheduling and raises once the running ones finish (their models are kept)."""
    check_int("workers", workers, minimum=1)
    names = {j.name for j in jobs}
    missing = sorted({d for j in jobs for d in j.deps} - names)
    if missing:
        raise ValueError(f"jobs depend on {missing}, which are not among the jobs")
    done: dict[str, JobTime] = {}
    pending, running = list(jobs), dict[Future, ModelJob]()
    bar = tqdm(total=len(jobs), desc="models", disable=not progress, dynamic_ncols=True)
    with spawn_pool(workers) as pool:
        while pending or running:
            for job in [j for j in pending if all(d in done for d in j.deps)][:workers - len(running)]:
                pending.remove(job)
                running[pool.submit(_train, job, str(cache_dir))] = job
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                job = running.pop(future)
                done[job.name] = _result(future, job)
                record_times(cache_dir, {job.name: done[job.name]})  # at once: a run cut short keeps its record
                bar.set_postfix_str(job.name)
                bar.update(1)
    bar.close()
    return done


def _result(future: Future, job: ModelJob) -> JobTime:
    try:
        return future.result()
    except Exception as exc:
        raise RuntimeError(f"training {job.name} failed: {exc}") from exc


def _train(job: ModelJob, cache_dir: str) -> JobTime:
    start = time.process_time()  # CPU time: the budget's unit, and blind to other processes on the machine
    with torch_threads(1), S.disk_cache(cache_dir):
        path = S.saved_path(job.config, job.method, job.seed, soft_tau=job.soft_tau, lr=job.lr,
                            teacher_thoughts=job.teacher_thoughts)
        fresh = path is None or not path.exists()
        if job.method is None:
            S.warm_start(job.config, job.seed)
        else:
            S.trained(job.config, job.method, job.seed, soft_tau=job.soft_tau, lr=job.lr,
                      teacher_thoughts=job.teacher_thoughts)
    return JobTime(time.process_time() - start, fresh)


def record_times(cache_dir: str | Path, times: Mapping[str, JobTime]) -> dict[str, float]:
    """Add the CPU seconds of the jobs in ``times`` that trained their model to ``cache_dir/TIMES_FILE`` (job name
    -> seconds, written atomically; a file that cannot be read is started afresh) and return the whole record,
    so the cost of a run resumed over several sessions adds up."""
    record = recorded_times(cache_dir)
    new = {name: t.cpu_seconds for name, t in times.items() if t.trained}
    if new:
        record.update(new)
        atomic_write_json(Path(cache_dir) / TIMES_FILE, dict(sorted(record.items())))
    return record


def recorded_times(cache_dir: str | Path) -> dict[str, float]:
    """The record :func:`record_times` keeps in ``cache_dir`` (job name -> CPU seconds); empty when there is none
    or it cannot be read (with a warning)."""
    path = Path(cache_dir) / TIMES_FILE
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        warnings.warn(f"{path} is damaged ({exc}); starting its record afresh", stacklevel=3)
        return {}


def prepare(configs: Mapping[str, Any], *, out: Path, workers: int, progress: bool = True) -> None:
    """The paper's ``prepare`` hook: :func:`pretrain` the models of the experiments in ``configs`` into the
    folder the experiments of the runner's output ``out`` share (``runs.models_dir``)."""
    cache_dir = Path(out) / "latent_cot" / "reasoners"
    times = pretrain(plan_for(configs), cache_dir=cache_dir, workers=workers, progress=progress)
    record = recorded_times(cache_dir)
    now = [t.cpu_seconds for t in times.values() if t.trained]
    if progress and now:
        tqdm.write(f"trained {len(now)} models in {sum(now) / 3600:.2f} CPU-hours; {len(record)} models recorded "
                   f"in {cache_dir / TIMES_FILE}: {sum(record.values()) / 3600:.2f} CPU-hours")
