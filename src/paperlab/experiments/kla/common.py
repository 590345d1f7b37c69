"""Shared pieces of the KLA experiments: seeded model building, token-task training (with the LM recipe's
optimizer, ``paperlab.models.lm_train.build_optimizer``) and evaluation (MQAR, S-NIAH), state sizes, table cells
and plots.

Heavy module (imports torch): ``paperlab.experiments.kla`` imports it lazily inside the run functions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from paperlab.data.mqar import IGNORE_INDEX
from paperlab.experiments.base import mean_std
from paperlab.models import LM, LMConfig
from paperlab.models.lm_train import build_optimizer, init_lm
from paperlab.train import EarlyStopping, train, warmup_cosine

__all__ = ["bar_plot", "build_lm", "cell", "line_plot", "query_predictions", "state_nbytes", "train_token_task"]


def build_lm(mode: str, *, vocab_size: int, d_model: int, n_layers: int, n_heads: int, mlp_ratio: float,
             max_seq_len: int, seed: int) -> LM:
    """An ``LM`` with mixer ``mode``, initialised from ``seed`` without touching the global RNG (``init_lm``)."""
    return init_lm(LMConfig(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads, mixer=mode,
                            mlp_ratio=mlp_ratio, max_seq_len=max_seq_len), seed=seed)


def _query_loss(model: LM, batch: tuple[torch.Tensor, torch.Tensor]):
    """Cross-entropy and accuracy at query positions only (logits are computed only there)."""
    inputs, labels = batch
    h, _ = model.hidden_states(inputs)
    mask = labels != IGNORE_INDEX
    logits = model.logits(h[mask])
    target = labels[mask]
    loss = F.cross_entropy(logits, target)
    return loss, {"acc": float((logits.argmax(-1) == target).float().mean())}


@torch.no_grad()
def query_predictions(model: LM, inputs: torch.Tensor, labels: torch.Tensor, *,
                      batch_size: int = 32) -> torch.Tensor:
    """Correctness of the argmax prediction at every query position.

    Args:
        inputs, labels: ``[N, T]``; labels are ``IGNORE_INDEX`` off query positions.

    Returns:
        ``[N, T]`` bool, True where the position is a query and the prediction equals the label.
    """
    was_training = model.training
    model.eval()
    out = torch.zeros_like(labels, dtype=torch.bool)
    for start in range(0, inputs.shape[0], batch_size):
        x, y = inputs[start:start + batch_size], labels[start:start + batch_size]
        h, _ = model.hidden_states(x)
        mask = y != IGNORE_INDEX
        pred = model.logits(h[mask]).argmax(-1)
        block = torch.zeros_like(mask)
        block[mask] = pred == y[mask]
        out[start:start + batch_size] = block
    model.train(was_training)
    return out


def _autocast(loss_fn):
    def wrapped(model: LM, batch: tuple[torch.Tensor, torch.Tensor]):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return loss_fn(model, batch)
    return wrapped


def train_token_task(model: LM, train_data: Any, val_data: Any, *, steps: int, batch_size: int, lr: float,
                     weight_decay: float, grad_clip: float, eval_every: int, patience: int, seed: int,
                     desc: str, schedule: str = "constant", warmup_frac: float = 0.1,
                     target_acc: float | None = None, precision: str = "fp32") -> dict[str, float]:
    """Train on query positions of ``train_data`` (``.inputs``/``.labels [N, T]``), keep the best validation
    accuracy's weights (early stopping on ``val_acc``); return steps, best accuracy and seconds.

    ``schedule="warmup_cosine"`` warms the lr up over ``warmup_frac`` of ``steps`` and decays it by cosine;
    ``target_acc`` stops the run as soon as validation accuracy reaches it (``steps`` is then a cap).
    ``precision="bf16"`` runs the forward and loss under CPU autocast (weights and optimizer state stay fp32).

    A run whose loss becomes NaN/inf returns ``diverged_at`` (the failing step) and NaN metrics; otherwise
    ``diverged_at`` is 0.
    """
    n = len(train_data)
    epochs = math.ceil(steps * batch_size / n) + 1
    gen = torch.Generator().manual_seed(seed)
    order = torch.cat([torch.randperm(n, generator=gen) for _ in range(epochs)])

    def batches(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = order[step * batch_size:(step + 1) * batch_size]
        return train_data.inputs[idx], train_data.labels[idx]

    def eval_fn(m: LM) -> dict[str, float]:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            correct = query_predictions(m, val_data.inputs, val_data.labels)
        return {"val_acc": float(correct.sum()) / max(1, int((val_data.labels != IGNORE_INDEX).sum()))}

    optimizer = build_optimizer(model, lr=lr, weight_decay=weight_decay)
    scheduler = None if schedule == "constant" else warmup_cosine(
        optimizer, steps=steps, warmup=max(1, int(warmup_frac * steps)))
    stop = EarlyStopping(metric="val_acc", mode="max", patience=patience, stopping_threshold=target_acc)
    start = time.perf_counter()
    done = [0]
    try:
        loss_fn = _query_loss if precision == "fp32" else _autocast(_query_loss)
        result = train(model, loss_fn, batches, optimizer, steps=steps, scheduler=scheduler, grad_clip=grad_clip,
                       eval_fn=eval_fn, eval_every=eval_every, early_stopping=stop, progress=False, desc=desc,
                       on_step=lambda step, _m: done.__setitem__(0, step))
    except FloatingPointError:  # the loss became NaN/inf: report the divergence instead of a number
        return {"steps": done[0], "best_step": 0, "val_acc": float("nan"), "final_loss": float("nan"),
                "train_seconds": time.perf_counter() - start, "diverged_at": done[0] + 1}
    best = result.best or {}
    best_acc = float(best.get("val_acc", float("nan")))
    best_step = next((int(e["step"]) for e in result.evals if e["val_acc"] == best_acc), result.steps_done)
    return {"steps": result.steps_done, "best_step": best_step, "val_acc": best_acc,
            "final_loss": result.history[-1]["loss"], "diverged_at": 0,
            "train_seconds": time.perf_counter() - start}


def state_nbytes(state: Any) -> int:
    """Bytes held by every tensor inside a (nested) state: lists, tuples, dicts, dataclasses."""
    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, (list, tuple)):
        return sum(state_nbytes(s) for s in state)
    if isinstance(state, dict):
        return sum(state_nbytes(s) for s in state.values())
    if hasattr(state, "__dataclass_fields__"):
        return sum(state_nbytes(getattr(state, f)) for f in state.__dataclass_fields__)
    if hasattr(state, "__dict__"):
        return sum(state_nbytes(v) for v in vars(state).values() if isinstance(v, (torch.Tensor, list, tuple)))
    return 0


def cell(values: Sequence[float], *, digits: int = 1) -> str:
    """``mean ± sd`` (or the single value) as a table cell; NaNs (nothing measured) are left out, ``-`` if all."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "-"
    m, sd = mean_std(values)
    return f"{m:.{digits}f}" if len(values) == 1 else f"{m:.{digits}f} ± {sd:.{digits}f}"


def line_plot(series: Mapping[str, tuple[Sequence[float], Sequence[Sequence[float]]]], *, xlabel: str, ylabel: str,
              title: str, logx: bool = True):
    """A matplotlib Figure (no pyplot state): one line per series, mean with min-max band over seeds.

    ``series[name] = (xs, per_x_values)`` where ``per_x_values[i]`` lists the seeds' values at ``xs[i]``.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.add_subplot()
    for name, (xs, vals) in series.items():
        means = [mean_std(v)[0] for v in vals]
        ax.plot(xs, means, marker="o", label=name)
        if any(len(v) > 1 for v in vals):
            ax.fill_between(xs, [min(v) for v in vals], [max(v) for v in vals], alpha=0.2)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def bar_plot(groups: dict[str, dict[str, Sequence[float]]], *, ylabel: str, title: str):
    """A grouped bar chart (no pyplot state): ``groups[series][category]`` lists the seeds' values; bars show
    the mean, whiskers the min-max range."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.6))
    ax = fig.add_subplot()
    categories = list(dict.fromkeys(c for g in groups.values() for c in g))
    width = 0.8 / max(1, len(groups))
    for i, (name, values) in enumerate(groups.items()):
        xs = [j + i * width for j, c in enumerate(categories) if c in values]
        vals = [values[c] for c in categories if c in values]
        means = [mean_std(v)[0] for v in vals]
        err = [[m - min(v) for m, v in zip(means, vals, strict=True)],
               [max(v) - m for m, v in zip(means, vals, strict=True)]]
        ax.bar(xs, means, width=width, yerr=err, label=name, capsize=3)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(categories))], categories, rotation=20)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")
    if len(groups) > 1:
        ax.legend()
    return fig
