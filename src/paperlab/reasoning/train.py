"""Train a small ``paperlab.models.LM`` (attention mixer) from scratch as a ProsQA reasoner with any method.

Uses the one training loop ``paperlab.train.train``; a curriculum method calls it once per stage with a fresh
AdamW when ``reset_optimizer`` is set (Coconut re-creates the optimizer), else once for all steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from paperlab._validate import check_bool, check_choice, check_int, check_positive
from paperlab.models import LM, LMConfig
from paperlab.reasoning.coconut import LATENT_METHODS, METHODS, Curriculum, make_batches, reasoning_loss
from paperlab.reasoning.prosqa import ProsQAExample
from paperlab.reasoning.recall import warm_up_recall
from paperlab.reasoning.tokenizer import WordTokenizer
from paperlab.train import train, warmup_cosine

__all__ = ["ReasonerConfig", "build_model", "train_reasoner", "warmed_up"]


@dataclass(frozen=True, kw_only=True)
class ReasonerConfig:
    """Model and optimisation of one run (our plan: d=96, 3 layers, 4 heads, AdamW 1e-3, wd 0.01, batch 32).

    ``final_steps`` are trained at the final stage after the curriculum; every method gets the same total
    ``curriculum.steps_per_stage * (max_stage + 1) + final_steps`` steps.
    """

    d_model: int = 96
    n_layers: int = 3
    n_heads: int = 4
    lr: float = 1e-3
    weight_decay: float = 0.01
    batch_size: int = 32
    grad_clip: float = 1.0
    final_steps: int = 300
    reset_optimizer: bool = True
    warmup: int = 0  # linear warm-up steps of each ``train`` call, then cosine decay (0: constant lr)
    short_first: int = 0  # first steps drawing only the shortest-path examples (difficulty curriculum)
    thought_entropy: float = 0.0  # lambda_H of ``reasoning_loss`` (X6 intervention on the Symbolic Index)
    # weight of the BFS-frontier supervision of the thoughts (``reasoning_loss``; 0 = Coconut's loss alone)
    frontier_weight: float = 0.0
    soft_tau: float | None = None  # feed soft thoughts at this temperature (``latent_forward``)
    # train on teacher-forced thoughts: each slot fed the mean embedding of its frontier (``latent_forward``)
    teacher_thoughts: bool = False
    # edge-recall warm-up steps before the method's training (``paperlab.reasoning.recall``; symbolic graphs only)
    recall_steps: int = 0
    recall_batch_size: int = 64
    # latent methods start at this curriculum stage: 1 for a model initialised from a trained CoT reasoner (stage 0
    # is CoT), as Coconut initialises its latent stages from its stage-0 checkpoint
    from_stage: int = 0
    curriculum: Curriculum = field(default_factory=Curriculum)

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "batch_size"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("final_steps", self.final_steps, minimum=0)
        check_int("warmup", self.warmup, minimum=0)
        check_int("short_first", self.short_first, minimum=0)
        check_int("recall_steps", self.recall_steps, minimum=0)
        check_int("recall_batch_size", self.recall_batch_size, minimum=1)
        check_int("from_stage", self.from_stage, minimum=0)
        if self.from_stage > self.curriculum.max_stage + 1:
            raise ValueError(f"from_stage={self.from_stage} is past the final stage {self.curriculum.max_stage + 1}")
        check_positive("lr", self.lr)
        check_positive("weight_decay", self.weight_decay, allow_zero=True)
        check_positive("grad_clip", self.grad_clip)
        if not isinstance(self.thought_entropy, (int, float)) or not abs(self.thought_entropy) < float("inf"):
            raise ValueError(f"thought_entropy must be a finite number, got {self.thought_entropy!r}")
        check_positive("frontier_weight", self.frontier_weight, allow_zero=True)
        if self.soft_tau is not None:
            check_positive("soft_tau", self.soft_tau)
        check_bool("teacher_thoughts", self.teacher_thoughts)

    @property
    def total_steps(self) -> int:
        return self.curriculum.steps_per_stage * (self.curriculum.max_stage + 1) + self.final_steps


def build_model(config: ReasonerConfig, vocab_size: int, *, seed: int):
    """A fresh attention ``LM`` initialised under ``torch.random.fork_rng`` with ``seed`` (no global effect)."""
    cfg = LMConfig(vocab_size=vocab_size, d_model=config.d_model, n_layers=config.n_layers,
                   n_heads=config.n_heads, mixer="attention", max_seq_len=1024)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LM(cfg)


def _segments(config: ReasonerConfig, method: str) -> list[tuple[int, int]]:
    """(start step, steps) of each ``train`` call: one per stage for curriculum methods with resets; a latent
    method skips the steps of the stages before ``from_stage``."""
    total, per = config.total_steps, config.curriculum.steps_per_stage
    first = config.from_stage * per if method in LATENT_METHODS else 0
    if method not in ("coconut", "no_thought", "pause") or not config.reset_optimizer:
        return [(first, total - first)]
    stages = range(config.from_stage, config.curriculum.max_stage + 1)
    starts = [s * per for s in stages] + [per * (config.curriculum.max_stage + 1)]
    return [(a, b - a) for a, b in zip(starts, [*starts[1:], total], strict=True) if b > a]


def warmed_up(examples: Sequence, tok: WordTokenizer, *, config: ReasonerConfig, seed: int,
              device: torch.device | str = "cpu"):
    """A fresh model (``build_model``) after ``config.recall_steps`` of edge-recall warm-up on ``examples``
    (``paperlab.reasoning.recall``) at the config's lr; unchanged when ``recall_steps`` is 0. Returns
    ``(model, history)``."""
    model = build_model(config, len(tok), seed=seed).to(device)
    if not config.recall_steps:
        return model, []
    history = warm_up_recall(model, examples, tok, steps=config.recall_steps, lr=config.lr,
                             batch_size=config.recall_batch_size, seed=seed, warmup=min(config.warmup or 100, 100),
                             weight_decay=config.weight_decay, grad_clip=config.grad_clip, device=device)
    return model, history


def train_reasoner(examples: Sequence[ProsQAExample], tok: WordTokenizer, *, method: str,
                   config: ReasonerConfig, seed: int, eval_fn: Callable[[Any], dict[str, float]] | None = None,
                   eval_every: int = 0, device: torch.device | str = "cpu",
                   init_state: dict[str, torch.Tensor] | None = None) -> tuple[Any, list[dict[str, float]]]:
    """Train a reasoner with ``method``; returns ``(model, history)`` (history: per-step loss records, with
    evaluations merged in at their steps, ``step`` counted over the whole run).

    The model starts from ``init_state`` (a state dict, e.g. of :func:`warmed_up`'s model, shared by the
    methods of a seed), else from :func:`warmed_up` itself (fresh weights plus ``config.recall_steps`` of
    edge-recall warm-up)."""
    check_choice("method", method, METHODS)
    check_int("seed", seed, minimum=0)
    if init_state is None:
        model, _ = warmed_up(examples, tok, config=config, seed=seed, device=device)
    else:
        model = build_model(config, len(tok), seed=seed).to(device)
        model.load_state_dict(init_state)
    pause_id = tok.id("<pause>")

    def loss_fn(m, batch):
        return reasoning_loss(m, batch, method=method, pause_id=pause_id, thought_entropy=config.thought_entropy,
                              frontier_weight=config.frontier_weight, soft_tau=config.soft_tau,
                              teacher_thoughts=config.teacher_thoughts)

    history: list[dict[str, float]] = []
    for start, steps in _segments(config, method):
        opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        batches = make_batches(examples, tok, method=method, curriculum=config.curriculum,
                               batch_size=config.batch_size, seed=seed, step_offset=start,
                               short_first=config.short_first, device=device)
        sched = warmup_cosine(opt, steps=steps, warmup=min(config.warmup, steps - 1)) if config.warmup else None
        res = train(model, loss_fn, batches, opt, steps=steps, scheduler=sched, grad_clip=config.grad_clip,
                    eval_fn=eval_fn, eval_every=eval_every, progress=False, desc=f"{method}@{start}")
        evals = {e["step"]: e for e in res.evals}
        for rec in res.history:
            extra = {k: v for k, v in evals.get(rec["step"], {}).items() if k != "step"}
            history.append({**rec, **extra, "step": rec["step"] + start})
    return model, history
