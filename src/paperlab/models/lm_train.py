"""Training an ``LM`` on a token stream through the one loop (``paperlab.train``).

AdamW (betas 0.9/0.95, weight decay on matrices only; A_log/dt_bias never decayed, as in the authors' code)
with linear warm-up and cosine decay, gradient clipping, periodic validation perplexity, checkpoints and
exact resume (batches are a pure function of the step). Under torchrun every rank trains on its slice of the
same global batch and DDP averages gradients (see ``paperlab.distributed``).

A run folder holds ``config.json`` (model + training config), ``tokenizer.json``, ``checkpoint.pt``,
``history.json`` and ``loss.png``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from paperlab._validate import check_choice, check_int, check_positive, check_probability
from paperlab.checkpoint import load_checkpoint
from paperlab.data.text import TextBatches
from paperlab.distributed import rank_world, unwrap, wrap_ddp
from paperlab.io import atomic_write_json
from paperlab.models.lm import LM, LMConfig
from paperlab.models.lm_eval import evaluate_ppl
from paperlab.train import TrainResult, train, warmup_cosine

__all__ = ["CONFIG_FILE", "LMTrainConfig", "build_optimizer", "init_lm", "lm_loss", "load_run",
           "save_loss_curve", "save_run_config", "train_lm"]

CONFIG_FILE = "config.json"
OPTIMIZERS = ("adamw", "nora", "rmnp", "muon")


@dataclass(frozen=True, kw_only=True)
class LMTrainConfig:
    """How to train (defaults: the recipe of our KLA experiment E3).

    Args:
        steps: optimizer steps.
        batch_size: global windows per step (split across ranks).
        seq_len: training context.
        lr, weight_decay, betas: AdamW settings (``lr`` is the peak of warm-up + cosine to ``min_lr_ratio``).
        warmup: linear warm-up steps (capped at steps - 1).
        grad_clip: global gradient-norm clip (None: off).
        optimizer: "adamw", or a ``paperlab.optim.make_optimizer`` name (hidden matrices; AdamW elsewhere).
        eval_every: validation every this many steps (0: only at the end).
        eval_tokens: validation tokens scored by the periodic evaluation.
        checkpoint_every: checkpoint every this many steps (0: only at the end).
        seed: model init and batch order.
    """

    steps: int = 1500
    batch_size: int = 16
    seq_len: int = 128
    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float | None = 1.0
    optimizer: str = "adamw"
    eval_every: int = 100
    eval_tokens: int = 16384
    checkpoint_every: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("steps", self.steps, minimum=1)
        check_int("batch_size", self.batch_size, minimum=1)
        check_int("seq_len", self.seq_len, minimum=1)
        check_positive("lr", self.lr)
        check_probability("min_lr_ratio", self.min_lr_ratio)
        check_int("warmup", self.warmup, minimum=0)
        check_positive("weight_decay", self.weight_decay, allow_zero=True)
        if len(self.betas) != 2:
            raise ValueError(f"betas must be a pair, got {self.betas!r}")
        object.__setattr__(self, "betas", tuple(check_probability("betas", b) for b in self.betas))
        if self.grad_clip is not None:
            check_positive("grad_clip", self.grad_clip)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_int("eval_every", self.eval_every, minimum=0)
        check_int("eval_tokens", self.eval_tokens, minimum=1)
        check_int("checkpoint_every", self.checkpoint_every, minimum=0)
        check_int("seed", self.seed, minimum=0)


def init_lm(config: LMConfig, *, seed: int) -> LM:
    """``LM(config)`` initialised from ``seed`` without touching the global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LM(config)


def _no_decay(name: str, param: nn.Parameter) -> bool:
    return param.dim() < 2 or getattr(param, "_no_weight_decay", False)


def build_optimizer(model: nn.Module, config: LMTrainConfig) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices (embedding included) and none on vectors, A_log, dt_bias."""
    if config.optimizer != "adamw":
        from paperlab.optim import make_optimizer

        return make_optimizer(model, config.optimizer, lr=config.lr, weight_decay=config.weight_decay,
                              adamw_lr=config.lr, adamw_weight_decay=config.weight_decay,
                              adamw_betas=config.betas)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if _no_decay(name, p) else decay).append(p)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=config.betas)


def lm_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean next-token cross-entropy of ``batch = (inputs [B, T], targets [B, T])``."""
    inputs, targets = batch
    device = next(model.parameters()).device
    logits, _ = model(inputs.to(device))
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.to(device).flatten())


def _unused_parameters(model: nn.Module, seq_len: int) -> bool:
    """Whether a forward/backward leaves some parameter without gradient (DDP must then search for them)."""
    device = next(model.parameters()).device
    ids = torch.zeros(1, min(seq_len, 4), dtype=torch.long, device=device)
    logits, _ = model(ids)
    logits.float().sum().backward()
    unused = any(p.grad is None for p in model.parameters() if p.requires_grad)
    model.zero_grad(set_to_none=True)
    return unused


def train_lm(model: LM, config: LMTrainConfig, *, train_tokens: torch.Tensor, val_tokens: torch.Tensor,
             out_dir: str | os.PathLike | None = None, resume: bool = False, progress: bool = True,
             on_step: Callable[[int, nn.Module], None] | None = None) -> TrainResult:
    """Train ``model`` in place on ``train_tokens`` ``[N]``; validate on ``val_tokens`` ``[M]``.

    Periodic evaluation reports ``val_loss``/``val_ppl``/``val_bits_per_token`` on the first
    ``config.eval_tokens`` validation tokens at the training context. With ``out_dir`` checkpoints go to
    ``out_dir/checkpoint.pt`` and ``resume=True`` continues from there. Under torchrun (initialised process
    group) every rank must call this with the same arguments. ``on_step(step, model)`` runs after each step.
    """
    rank, world = rank_world()
    batches = TextBatches(train_tokens, batch_size=config.batch_size, seq_len=config.seq_len, seed=config.seed,
                          rank=rank, world_size=world)
    optimizer = build_optimizer(model, config)
    scheduler = warmup_cosine(optimizer, steps=config.steps, warmup=min(config.warmup, config.steps - 1),
                              min_ratio=config.min_lr_ratio)
    eval_stream = val_tokens[: config.eval_tokens + 1]

    def eval_fn(m: nn.Module) -> dict[str, float]:
        r = evaluate_ppl(unwrap(m), eval_stream, context=min(config.seq_len, eval_stream.numel() - 1))
        return {"val_loss": r["loss"], "val_ppl": r["ppl"], "val_bits_per_token": r["bits_per_token"]}

    wrapped = wrap_ddp(model, find_unused_parameters=world > 1 and _unused_parameters(model, config.seq_len))
    return train(wrapped, lm_loss, batches, optimizer, steps=config.steps, scheduler=scheduler,
                 grad_clip=config.grad_clip, eval_fn=eval_fn, eval_every=config.eval_every,
                 checkpoint_dir=out_dir, checkpoint_every=config.checkpoint_every if out_dir else 0,
                 resume=resume, progress=progress and rank == 0, desc=f"lm {model.config.mixer}",
                 on_step=on_step)


def save_run_config(out_dir: str | os.PathLike, model_config: LMConfig, train_config: LMTrainConfig,
                    **extra: Any) -> Path:
    """Write ``config.json`` = ``{"model": ..., "train": ..., **extra}`` (e.g. data name, tokenizer kind)."""
    return atomic_write_json(Path(out_dir) / CONFIG_FILE, {
        "model": model_config.to_dict(), "train": dataclasses.asdict(train_config), **extra})


def load_run(out_dir: str | os.PathLike) -> tuple[LM, dict[str, Any]]:
    """The trained model of a run folder (weights from ``checkpoint.pt``) and its parsed ``config.json``."""
    out_dir = Path(out_dir)
    cfg_path = out_dir / CONFIG_FILE
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{out_dir} holds no {CONFIG_FILE}; is it a `paperlab lm train` folder?")
    meta = json.loads(cfg_path.read_text(encoding="utf-8"))
    model = LM(LMConfig.from_dict(meta["model"]))
    payload = load_checkpoint(out_dir / "checkpoint.pt")
    model.load_state_dict(payload["model"])
    meta["step"] = payload["step"]
    meta["history"] = payload["extra"].get("history", [])
    meta["evals"] = payload["extra"].get("evals", [])
    return model.eval(), meta


def save_loss_curve(history: list[dict[str, float]], evals: list[dict[str, float]],
                    path: str | os.PathLike, *, title: str = "") -> Path:
    """Plot training loss (and its 20-step running mean) and validation loss against the step into a PNG."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=110)
    ax = fig.add_subplot()
    steps = [h["step"] for h in history]
    losses = [h["loss"] for h in history]
    if losses:
        ax.plot(steps, losses, color="tab:blue", alpha=0.3, lw=0.8, label="train (per step)")
        window = [sum(losses[max(0, i - 19) : i + 1]) / len(losses[max(0, i - 19) : i + 1])
                  for i in range(len(losses))]
        ax.plot(steps, window, color="tab:blue", lw=1.5, label="train (20-step mean)")
    if evals:
        ax.plot([e["step"] for e in evals], [e["val_loss"] for e in evals], "o-", color="tab:red", label="val")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
