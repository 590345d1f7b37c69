"""Shared runs for the latent-CoT experiments: datasets, trained reasoners, accuracy and row summaries.

A trained reasoner is a ``paperlab.experiments.cache`` entry keyed by every training-relevant field of its
config (all fields but ``EVAL_ONLY_FIELDS``), its method, seed and lambda_H: memoised per process, so the
experiments of one ``paperlab reproduce`` train each (method, seed) once, and inside ``disk_cache`` also saved
to disk, so an interrupted ``full`` run keeps its finished models.

``config`` is a ``paperlab.experiments.latent_cot.LatentCoTConfig`` (or a dataclass with its fields).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import math
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from paperlab._validate import check_positive
from paperlab.data.registry import DatasetNotFoundError
from paperlab.experiments.base import mean_std
from paperlab.experiments.cache import CacheKey, cache_key, checkpoint_codec, load_or_compute
from paperlab.reasoning.arith import ArithConfig, arith_tokenizer, generate_arith
from paperlab.reasoning.coconut import LATENT_METHODS, Curriculum
from paperlab.reasoning.eval import answer_accuracy, cot_step_probes, latent_step_probes, switch_step_probes
from paperlab.reasoning.prosqa import load_prosqa
from paperlab.reasoning.prosqa_gen import GeneratorConfig, generate_prosqa
from paperlab.reasoning.symbolic import symbolic_tokenizer, to_symbolic
from paperlab.reasoning.tokenizer import WordTokenizer, prosqa_tokenizer
from paperlab.reasoning.train import ReasonerConfig, build_model, train_reasoner, warmed_up

__all__ = ["EVAL_ONLY_FIELDS", "GRAPH_IGNORES", "accuracy", "datasets", "dev_set", "disk_cache", "probes", "real_sets",
           "reasoner_config", "reasoner_key", "saved_path", "start_of", "summarize", "tokenizer", "trained",
           "warm_start"]

# The config fields that cannot change a trained reasoner, the only ones its cache key leaves out: which runs
# and evaluations a config asks for (each run's own method, seed and lambda_H join its key; the training set
# depends on ``data`` and ``n_train`` alone) and ``extra`` (where it runs, e.g. the device). Every other field,
# including any added later, is part of the key.
EVAL_ONLY_FIELDS = ("seeds", "methods", "n_test", "real_limit", "harder", "sigmas", "noise_seeds", "n_probe",
                    "extra")
GRAPH_IGNORES = ("arith_steps",)  # fields only the arith_chain task reads
# bump when training changes: saved reasoners (warm starts) are then retrained
_REASONER_CODE = "latent_cot.reasoner/2"
_WARM_CODE = "latent_cot.warm_start/1"


def reasoner_key(cfg, method: str, seed: int, *, thought_entropy: float = 0.0, soft_tau: float | None = None,
                 lr: float | None = None, teacher_thoughts: bool = False) -> CacheKey:
    """The cache key of the reasoner ``trained`` returns for these arguments (a graph reasoner's key leaves out
    the arith_chain fields, ``GRAPH_IGNORES``). ``method_lrs`` enters through the run's own lr alone (``lr``, else
    ``cfg.lr_for(method)``), so a tuning run and a recipe run at the same lr share one reasoner."""
    graph = getattr(cfg, "task", "graph") == "graph"
    names = {f.name for f in dataclasses.fields(cfg)}
    exclude = (EVAL_ONLY_FIELDS + tuple(n for n in GRAPH_IGNORES if graph and n in names)
               + tuple(n for n in ("method_lrs",) if n in names))
    extra: tuple[Any, ...] = (method, seed, float(thought_entropy), soft_tau)
    if teacher_thoughts:  # named only when set, so the keys saved reasoners were written under hold
        extra = (*extra, "teacher_thoughts")
    lr = _own_lr(cfg, method) if lr is None else lr
    if getattr(cfg, "latent_from_cot", False) and method in LATENT_METHODS and _own_lr(cfg, "cot") != cfg.lr:
        extra = (*extra, "cot_lr", _own_lr(cfg, "cot"))  # the CoT reasoner it starts from is not at cfg.lr
    if lr != cfg.lr:
        # the run's own lr in the config; its warm start (and by default its CoT start) stay at cfg.lr, which the
        # key then names too (at lr == cfg.lr the key is the one saved reasoners were written under)
        cfg, extra = dataclasses.replace(cfg, lr=float(lr)), (*extra, "base_lr", cfg.lr)
    return cache_key(cfg, *extra, code=_REASONER_CODE, exclude=exclude)


def _own_lr(cfg, method: str) -> float:
    """``cfg.lr_for(method)`` where the config has per-arm learning rates, else ``cfg.lr``."""
    return cfg.lr_for(method) if hasattr(cfg, "lr_for") else cfg.lr


def datasets(cfg) -> dict[str, list]:
    """Generated sets of ``cfg`` (its ``task``, ``data`` preset and ``format``) with fixed seeds: "train",
    "generated" (held out) and "harder+k" (k longer paths or chains)."""
    if getattr(cfg, "task", "graph") == "arith":
        return _arith_sets(cfg.n_train, cfg.n_test, cfg.harder, tuple(getattr(cfg, "arith_steps", (3, 6))))
    return _datasets(cfg.data, cfg.n_train, cfg.n_test, cfg.harder, getattr(cfg, "format", "english"))


def dev_set(cfg) -> list:
    """``cfg.n_test`` questions of the test sets' distribution, drawn apart from them (and from training): a
    learning rate tuned on these is not tuned on the questions the results report."""
    if getattr(cfg, "task", "graph") == "arith":
        lo, hi = tuple(getattr(cfg, "arith_steps", (3, 6)))
        return _dev_arith(cfg.n_test, lo, hi)
    return _dev_graph(cfg.data, cfg.n_test, getattr(cfg, "format", "english"))


@functools.lru_cache(maxsize=2)
def _dev_arith(n: int, lo: int, hi: int) -> list:
    return generate_arith(n, config=ArithConfig(min_steps=lo, max_steps=hi), seed=40_000)


@functools.lru_cache(maxsize=2)
def _dev_graph(data: str, n: int, fmt: str) -> list:
    examples = generate_prosqa(n, config=getattr(GeneratorConfig, data)(), seed=40_000)
    return _in_format(examples, fmt, seed=40 * 1_000_003)


@functools.lru_cache(maxsize=2)
def _arith_sets(n_train: int, n_test: int, harder: tuple[int, ...], steps: tuple[int, int]) -> dict[str, list]:
    base = ArithConfig(min_steps=steps[0], max_steps=steps[1])
    sets = {"train": generate_arith(n_train, config=base, seed=10_000),
            "generated": generate_arith(n_test, config=base, seed=20_000)}
    for k in harder:
        longer = dataclasses.replace(base, min_steps=base.min_steps + k, max_steps=base.max_steps + k)
        sets[f"harder+{k}"] = generate_arith(n_test, config=longer, seed=30_000 + k)
    return sets


@functools.lru_cache(maxsize=4)
def _datasets(data: str, n_train: int, n_test: int, harder: tuple[int, ...], fmt: str) -> dict[str, list]:
    gen = getattr(GeneratorConfig, data)()
    sets = {"train": generate_prosqa(n_train, config=gen, seed=10_000),
            "generated": generate_prosqa(n_test, config=gen, seed=20_000)}
    for k in harder:
        sets[f"harder+{k}"] = generate_prosqa(n_test, config=gen.harder(k), seed=30_000 + k)
    return {name: _in_format(exs, fmt, seed=i * 1_000_003) for i, (name, exs) in enumerate(sets.items())}


def _in_format(examples: list, fmt: str, *, seed: int) -> list:
    """``examples`` as they are (English) or converted to the symbolic format (a fresh node naming each)."""
    if fmt == "english":
        return examples
    return [to_symbolic(e, seed=seed + i) for i, e in enumerate(examples)]


def tokenizer(cfg) -> WordTokenizer:
    """The tokenizer of ``cfg``: arith_chain's, else the ProsQA word tokenizer or the symbolic one."""
    if getattr(cfg, "task", "graph") == "arith":
        return arith_tokenizer()
    return prosqa_tokenizer() if getattr(cfg, "format", "english") == "english" else symbolic_tokenizer()


def real_sets(cfg) -> dict[str, list]:
    """The real ProsQA files in ``cfg.format`` (first ``cfg.real_limit`` validation records, or valid + test);
    {} if absent."""
    fmt, limit = getattr(cfg, "format", "english"), cfg.real_limit
    if getattr(cfg, "task", "graph") == "arith":
        return {}
    try:
        if limit is not None:
            sets = {"prosqa_valid (OOD)": load_prosqa("valid", limit=limit)}
        else:
            sets = {"prosqa_valid (OOD)": load_prosqa("valid"), "prosqa_test (OOD)": load_prosqa("test")}
    except DatasetNotFoundError:
        return {}
    return {name: _in_format(exs, fmt, seed=50_000 * (i + 1)) for i, (name, exs) in enumerate(sets.items())}


def reasoner_config(cfg, *, thought_entropy: float = 0.0, soft_tau: float | None = None, from_stage: int = 0,
                    teacher_thoughts: bool = False):
    """The ``ReasonerConfig`` (with its ``Curriculum``) described by an experiment config (and lambda_H, soft
    thoughts' temperature, the stage latent methods start at, teacher-forced thoughts)."""
    cur = Curriculum(c=cfg.c, max_stage=cfg.max_stage, steps_per_stage=cfg.steps_per_stage)
    graph = getattr(cfg, "task", "graph") == "graph"  # arith_chain has no edges to recall
    return ReasonerConfig(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, lr=cfg.lr,
                          warmup=getattr(cfg, "warmup", 0), short_first=getattr(cfg, "short_first", 0),
                          batch_size=cfg.batch_size, final_steps=cfg.final_steps, thought_entropy=thought_entropy,
                          frontier_weight=getattr(cfg, "frontier_weight", 0.0), soft_tau=soft_tau,
                          recall_steps=getattr(cfg, "recall_steps", 0) if graph else 0,
                          recall_batch_size=getattr(cfg, "recall_batch_size", 64), from_stage=from_stage,
                          teacher_thoughts=teacher_thoughts, curriculum=cur)


# per model (dropped with it): accuracy results by (example list, method, sigma, noise seed)
_ACCURACY: weakref.WeakKeyDictionary[Any, dict[tuple, Any]] = weakref.WeakKeyDictionary()
_CACHE_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar("reasoner_cache_dir", default=None)


@contextlib.contextmanager
def disk_cache(path: str | Path | None) -> Iterator[None]:
    """Inside the block, ``trained`` also loads finished reasoners from ``path`` and saves new ones there
    (atomically; one file per training config, method and seed). ``None`` turns the disk cache off."""
    token = _CACHE_DIR.set(None if path is None else Path(path))
    try:
        yield
    finally:
        _CACHE_DIR.reset(token)


def start_of(cfg, method: str, *, soft_tau: float | None = None, teacher_thoughts: bool = False) -> str | None:
    """The model ``trained`` starts ``method`` from at a seed: "hard" (that seed's hard-thought reasoner of the
    method, which soft thoughts fine-tune for ``cfg.soft_steps``), "cot" (its CoT reasoner; teacher-forced soft
    thoughts train the whole curriculum from there), "warm" (its edge-recall warm start) or None (a fresh
    model)."""
    if getattr(cfg, "latent_from_cot", False) and method in LATENT_METHODS:
        fine_tune = soft_tau is not None and getattr(cfg, "soft_steps", 0) > 0 and not teacher_thoughts
        return "hard" if fine_tune else "cot"
    graph = getattr(cfg, "task", "graph") == "graph"  # arith_chain has no edges to recall
    return "warm" if graph and getattr(cfg, "recall_steps", 0) else None


def trained(cfg, method: str, seed: int, *, thought_entropy: float = 0.0, soft_tau: float | None = None,
            lr: float | None = None, teacher_thoughts: bool = False):
    """(model, history) for one method and seed (and entropy weight lambda_H, see ``reasoning_loss``; soft
    thoughts at ``soft_tau``, trained on teacher-forced thoughts if ``teacher_thoughts``: see
    ``ReasonerConfig``), trained once per process and ``reasoner_key``; inside ``disk_cache``, loaded
    from and saved to its folder. ``lr`` (a tuning run's) replaces the method's own lr (``cfg.lr_for(method)``)
    for this method's own training only: the warm start stays at ``cfg.lr`` and the CoT reasoner a latent method
    starts from at CoT's own lr."""
    lr = _own_lr(cfg, method) if lr is None else check_positive("lr", lr)
    key = reasoner_key(cfg, method, seed, thought_entropy=thought_entropy, soft_tau=soft_tau, lr=lr,
                       teacher_thoughts=teacher_thoughts)
    tok, device = tokenizer(cfg), cfg.extra.get("device", "cpu")
    start = start_of(cfg, method, soft_tau=soft_tau, teacher_thoughts=teacher_thoughts)
    rcfg = reasoner_config(dataclasses.replace(cfg, lr=lr), thought_entropy=thought_entropy, soft_tau=soft_tau,
                           from_stage=int(start in ("cot", "hard")), teacher_thoughts=teacher_thoughts)
    if start == "hard":  # the final stage alone, for soft_steps
        rcfg = dataclasses.replace(rcfg, from_stage=cfg.max_stage + 1, final_steps=cfg.soft_steps)

    def compute():
        data = datasets(cfg)["train"]
        if start == "hard":  # soft thoughts fine-tune this seed's trained (hard-thought) reasoner of the method
            init = trained(cfg, method, seed, thought_entropy=thought_entropy, lr=lr)[0].state_dict()
        elif start == "cot":  # Coconut's stage 0 is CoT: start from this seed's CoT reasoner
            init = trained(cfg, "cot", seed)[0].state_dict()
        else:
            init = warm_start(cfg, seed).state_dict() if start == "warm" else None
        return train_reasoner(data, tok, method=method, config=rcfg, seed=seed, device=device, init_state=init)

    codec = checkpoint_codec(lambda: build_model(rcfg, len(tok), seed=seed), step=rcfg.total_steps)
    model, history = load_or_compute(_file(key, seed, method), key, compute, codec=codec, memo=True)
    return model.to(device), history


def saved_path(cfg, method: str | None, seed: int, *, thought_entropy: float = 0.0, soft_tau: float | None = None,
               lr: float | None = None, teacher_thoughts: bool = False) -> Path | None:
    """The file inside ``disk_cache`` where ``trained`` (or ``warm_start``, for ``method`` None) keeps that model,
    whether or not it exists yet; None outside ``disk_cache``."""
    if method is None:
        return _file(_warm_key(cfg, seed), seed)
    return _file(reasoner_key(cfg, method, seed, thought_entropy=thought_entropy, soft_tau=soft_tau, lr=lr,
                              teacher_thoughts=teacher_thoughts), seed, method)


def _file(key: CacheKey, seed: int, method: str | None = None) -> Path | None:
    """A reasoner's file (a warm start's for ``method`` None) in the ``disk_cache`` folder; None outside it."""
    folder = _CACHE_DIR.get()
    if folder is None:
        return None
    return folder / (f"warm-{key.short}-s{seed}.pt" if method is None else f"reasoner-{key.short}-{method}-s{seed}.pt")


# the fields a warm start depends on: the training graphs, the model's shape and the warm-up's own schedule
_WARM_FIELDS = ("data", "format", "n_train", "d_model", "n_layers", "n_heads", "lr", "warmup", "recall_steps",
                "recall_batch_size")


def warm_start(cfg, seed: int):
    """The model after ``cfg.recall_steps`` of edge-recall warm-up at ``seed`` (``warmed_up``), shared by every
    method of that seed: memoised, and inside ``disk_cache`` saved beside the reasoners."""
    key = _warm_key(cfg, seed)
    tok, device, rcfg = tokenizer(cfg), cfg.extra.get("device", "cpu"), reasoner_config(cfg)

    def compute():
        return warmed_up(datasets(cfg)["train"], tok, config=rcfg, seed=seed, device=device)

    codec = checkpoint_codec(lambda: build_model(rcfg, len(tok), seed=seed), step=rcfg.recall_steps)
    model, _ = load_or_compute(_file(key, seed), key, compute, codec=codec, memo=True)
    return model.to(device)


def _warm_key(cfg, seed: int) -> CacheKey:
    fields = {f.name for f in dataclasses.fields(cfg)}
    return cache_key(cfg, seed, code=_WARM_CODE, exclude=tuple(sorted(fields - set(_WARM_FIELDS))))


def accuracy(cfg, model, method, examples, *, sigma=0.0, seed=0, thoughts="intact", soft_tau=None,
             noise_at="head"):
    """``answer_accuracy`` at the final curriculum stage (noise ``sigma`` with noise seed ``seed`` at
    ``noise_at``, or a thought ablation; soft thoughts at ``soft_tau`` for a model trained so); memoised per
    (model, example list, method, sigma, seed, thoughts, soft_tau, site) since several experiments read the same
    numbers."""
    mine = _ACCURACY.setdefault(model, {})
    key = (id(examples), len(examples), method, float(sigma), seed, thoughts, soft_tau, noise_at)
    if key not in mine:
        mine[key] = answer_accuracy(model, examples, tokenizer(cfg), method=method,
                                    curriculum=reasoner_config(cfg).curriculum, sigma=sigma, seed=seed,
                                    thoughts=thoughts, soft_tau=soft_tau, noise_at=noise_at)
    return mine[key]


def summarize(rows: list[dict], by: tuple[str, ...], values: tuple[str, ...]) -> list[dict]:
    """Group ``rows`` by the ``by`` keys; mean and sd of each of ``values`` (NaNs dropped) and the count."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    out = []
    for key, rs in groups.items():
        row = dict(zip(by, key, strict=True))
        for v in values:
            vals = [r[v] for r in rs if not math.isnan(r[v])]
            m, s = mean_std(vals) if vals else (math.nan, 0.0)
            row[v] = m
            row[f"{v}_sd"] = s
        row["n"] = len(rs)
        out.append(row)
    return out


def probes(config, seed: int) -> dict[str, list]:
    """Step probes on the first ``n_probe`` held-out questions: CoT, Coconut logit lens, Coconut language switch."""
    tok, cur = tokenizer(config), reasoner_config(config).curriculum
    examples = datasets(config)["generated"][: config.n_probe]
    out = {"cot": cot_step_probes(trained(config, "cot", seed)[0], examples, tok)}
    latent = trained(config, "coconut", seed)[0]
    out["coconut"] = latent_step_probes(latent, examples, tok, method="coconut", curriculum=cur)
    if getattr(config, "format", "english") == "english":  # the switch probe forces an English word
        out["coconut (switch)"] = switch_step_probes(latent, examples, tok, method="coconut", curriculum=cur)
    return out
