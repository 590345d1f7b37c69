"""The one training loop: model, loss, data and optimizer are injected; nothing task-specific lives here.

``loss_fn(model, batch)`` returns a scalar loss tensor or ``(loss, metrics_dict)`` (numbers as values).
``batches`` is either a callable ``step -> batch`` (preferred: resuming is then exact because the batch
depends only on the step) or an iterable (on resume, already-consumed batches are skipped).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn
from tqdm.auto import tqdm

from paperlab._validate import check_bool, check_choice, check_in_range, check_int, check_positive
from paperlab.checkpoint import restore_checkpoint, save_checkpoint

__all__ = ["EarlyStopping", "TrainResult", "train", "warmup_cosine"]

CHECKPOINT_NAME = "checkpoint.pt"
_Model = TypeVar("_Model", bound=nn.Module)  # loss_fn, eval_fn and on_step receive the model passed in


@dataclass(frozen=True, kw_only=True)
class EarlyStopping:
    """Stop when ``metric`` (from ``eval_fn``) has not improved for ``patience`` evaluations, or, with
    ``stopping_threshold`` (Lightning's name), as soon as it reaches that value (``>=`` in ``"max"`` mode,
    ``<=`` in ``"min"``): "train until 97% validation accuracy or the step cap". ``metric`` is a non-empty
    name, ``restore_best`` a bool. A NaN value of the metric is never an improvement (it counts towards the
    patience and is never kept as the best)."""

    metric: str
    patience: int = 3
    mode: str = "min"
    restore_best: bool = True
    stopping_threshold: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.metric, str):
            raise TypeError(f"metric must be the name (a str) of an eval_fn metric, got {type(self.metric).__name__} "
                            f"{self.metric!r}")
        if not self.metric:
            raise ValueError("metric must be the name of an eval_fn metric, got the empty string ''")
        check_int("patience", self.patience, minimum=1)
        check_choice("mode", self.mode, ("min", "max"))
        check_bool("restore_best", self.restore_best)
        if self.stopping_threshold is not None:
            try:
                finite = math.isfinite(self.stopping_threshold)
            except TypeError:
                raise TypeError(f"stopping_threshold must be a number or None, got "
                                f"{type(self.stopping_threshold).__name__} {self.stopping_threshold!r}") from None
            if not finite:
                raise ValueError(f"stopping_threshold must be finite or None, got {self.stopping_threshold}")


@dataclass
class TrainResult:
    """What ``train`` returns: per-step history, evaluations, and where it stopped."""

    history: list[dict[str, float]] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)
    steps_done: int = 0
    stopped_early: bool = False
    best: dict[str, float] | None = None


def warmup_cosine(
    optimizer: torch.optim.Optimizer, *, steps: int, warmup: int = 0, min_ratio: float = 0.1
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up for ``warmup`` steps, then cosine decay to ``min_ratio`` (a number in [0, 1]) x the base lr."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    check_int("steps", steps, minimum=1)
    check_int("warmup", warmup, minimum=0)
    check_in_range("min_ratio", min_ratio, 0.0, 1.0)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, steps - warmup))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train(
    model: _Model,
    loss_fn: Callable[[_Model, Any], Any],
    batches: Callable[[int], Any] | Iterable[Any],
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    scheduler: Any = None,
    grad_clip: float | None = None,
    eval_fn: Callable[[_Model], dict[str, float]] | None = None,
    eval_every: int = 0,
    early_stopping: EarlyStopping | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    checkpoint_every: int = 0,
    resume: bool = False,
    progress: bool = True,
    desc: str = "train",
    on_step: Callable[[int, _Model], None] | None = None,
) -> TrainResult:
    """Run ``steps`` optimizer steps; return the metric history.

    Args:
        model: trained in place.
        loss_fn: ``(model, batch) -> loss`` or ``(loss, {name: value})``.
        batches: ``step -> batch`` callable, or an iterable of batches.
        optimizer: any ``torch.optim.Optimizer``.
        steps: total number of steps (a resumed run continues up to the same total).
        scheduler: stepped once per optimizer step.
        grad_clip: clip the global gradient norm to this value (the pre-clip norm is logged).
        eval_fn: ``model -> metrics``; run every ``eval_every`` steps and after the last step.
        early_stopping: stop on a plateau of one ``eval_fn`` metric, optionally restoring the best weights
            (the step it stops at is checkpointed; resuming a stopped run trains no further).
        checkpoint_dir: where ``checkpoint.pt`` is written every ``checkpoint_every`` steps and at the end.
        resume: continue from ``checkpoint_dir/checkpoint.pt`` if it exists, with its history, evaluations and
            early-stopping state (best value, patience count, best weights): the result equals an uninterrupted run.
        on_step: called as ``on_step(step, model)`` after each optimizer step (tracing, probes).
    """
    _check_loop_objects(model, batches, optimizer, scheduler, eval_fn)
    check_int("steps", steps, minimum=0)
    check_int("eval_every", eval_every, minimum=0)
    check_int("checkpoint_every", checkpoint_every, minimum=0)
    if grad_clip is not None:
        check_positive("grad_clip", grad_clip)
    if early_stopping is not None and eval_fn is None:
        raise ValueError("early_stopping needs an eval_fn that returns the monitored metric")
    ckpt = Path(checkpoint_dir) / CHECKPOINT_NAME if checkpoint_dir is not None else None
    result = TrainResult()
    tracker = _EarlyStopTracker(early_stopping, model) if early_stopping else None
    start = 0
    if resume and ckpt is not None and ckpt.exists():
        start = _resume(ckpt, model, optimizer, scheduler, result, tracker)
    batch_at = _batch_source(batches, start, steps)
    model.train()
    end = start if result.stopped_early else steps  # a run that stopped early stays stopped
    bar = tqdm(range(start, end), desc=desc, disable=not progress, leave=False, dynamic_ncols=True)
    for step in bar:
        record = _one_step(model, loss_fn, batch_at(step), optimizer, scheduler, grad_clip)
        record["step"] = step + 1
        result.history.append(record)
        if on_step is not None:
            on_step(step + 1, model)
        bar.set_postfix(loss=f"{record['loss']:.4f}")
        last = step + 1 == steps
        if eval_fn is not None and ((eval_every and (step + 1) % eval_every == 0) or last):
            metrics = _evaluate(model, eval_fn)
            result.evals.append({"step": step + 1, **metrics})
            if tracker is not None and tracker.update(metrics):
                result.stopped_early = True
        if ckpt is not None and ((checkpoint_every and (step + 1) % checkpoint_every == 0) or last
                                 or result.stopped_early):
            _save(ckpt, model, optimizer, scheduler, step + 1, result, tracker)
        result.steps_done = step + 1
        if result.stopped_early:
            break
    bar.close()
    if tracker is not None:
        result.best = tracker.finish()
    return result


def _check_loop_objects(model: Any, batches: Any, optimizer: Any, scheduler: Any, eval_fn: Any) -> None:
    """TypeError naming the argument when ``train``'s objects are not of the kind it calls."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not (callable(batches) or hasattr(batches, "__iter__") or hasattr(batches, "__getitem__")):
        raise TypeError(f"batches must be a callable step -> batch or an iterable of batches, got "
                        f"{type(batches).__name__} {batches!r}"[:300])
    if not all(callable(getattr(optimizer, a, None)) for a in ("zero_grad", "step")) or not hasattr(
            optimizer, "param_groups"):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer (zero_grad, step, param_groups), got "
                        f"{type(optimizer).__name__}")
    if scheduler is not None and not callable(getattr(scheduler, "step", None)):
        raise TypeError(f"scheduler must be an LR scheduler (with step()) or None, got {type(scheduler).__name__}")
    if eval_fn is not None and not callable(eval_fn):
        raise TypeError(f"eval_fn must be a callable model -> metrics or None, got {type(eval_fn).__name__}")


def _numbers(source: str, metrics: Any) -> dict[str, float]:
    """``metrics`` (a mapping name -> number, from ``source``) as floats; TypeError naming the bad entry."""
    if not isinstance(metrics, Mapping):
        raise TypeError(f"{source} must give its metrics as a dict {{name: number}}, got {type(metrics).__name__} "
                        f"{metrics!r}"[:300])
    out = {}
    for k, v in metrics.items():
        try:
            out[k] = float(v)
        except (TypeError, ValueError):
            raise TypeError(f"{source} metric {k!r} must be a number, got {type(v).__name__} {v!r}"[:300]) from None
    return out


def _one_step(model, loss_fn, batch, optimizer, scheduler, grad_clip) -> dict[str, float]:
    optimizer.zero_grad(set_to_none=True)
    out = loss_fn(model, batch)
    if isinstance(out, tuple) and len(out) != 2:
        raise TypeError(f"loss_fn must return the loss or (loss, metrics), got a tuple of {len(out)} items")
    loss, metrics = out if isinstance(out, tuple) else (out, {})
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"loss_fn must return the loss as a scalar torch.Tensor (or (loss, metrics)), got "
                        f"{type(loss).__name__} {loss!r}"[:300])
    if loss.numel() != 1:
        raise ValueError(f"loss_fn must return the loss as a scalar tensor (one element), got shape "
                         f"{tuple(loss.shape)}; reduce it (e.g. .mean())")
    if not torch.isfinite(loss):
        raise FloatingPointError(f"loss became {loss.item()}; lower the learning rate or enable grad_clip")
    loss.backward()
    record = {"loss": float(loss.detach()), "lr": float(optimizer.param_groups[0]["lr"])}
    if grad_clip is not None:
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        record["grad_norm"] = float(norm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    record.update(_numbers("loss_fn", metrics))
    return record


def _evaluate(model: nn.Module, eval_fn) -> dict[str, float]:
    model.eval()
    with torch.no_grad():
        metrics = _numbers("eval_fn", eval_fn(model))
    model.train()
    return metrics


def _batch_source(batches, start: int, steps: int) -> Callable[[int], Any]:
    if callable(batches):
        return batches
    iterator: Iterator[Any] = iter(batches)

    def next_batch(step: int) -> Any:
        try:
            return next(iterator)
        except StopIteration:
            raise ValueError(f"batches ran out after {step} batches, but steps={steps} (the iterable must hold at "
                             "least steps batches; or pass a callable step -> batch)") from None

    for i in range(start):  # skip what the interrupted run already consumed
        next_batch(i)
    return next_batch


def _resume(path: Path, model, optimizer, scheduler, result: TrainResult, tracker: _EarlyStopTracker | None) -> int:
    """Load ``path`` into the objects, ``result`` and the early-stopping ``tracker``; return its step."""
    payload = restore_checkpoint(path, model=model, optimizer=optimizer, scheduler=scheduler)
    extra = payload["extra"]
    result.history = list(extra.get("history", []))
    result.evals = list(extra.get("evals", []))
    result.stopped_early = bool(extra.get("stopped_early", False))
    result.steps_done = payload["step"]
    if tracker is not None and "early_stopping" in extra:
        tracker.load_state(extra["early_stopping"])
    return payload["step"]


def _save(path: Path, model, optimizer, scheduler, step: int, result: TrainResult,
          tracker: _EarlyStopTracker | None) -> None:
    extra: dict[str, Any] = {"history": result.history, "evals": result.evals, "stopped_early": result.stopped_early}
    if tracker is not None:
        extra["early_stopping"] = tracker.state()
    save_checkpoint(path, model=model, optimizer=optimizer, scheduler=scheduler, step=step, extra=extra)


class _EarlyStopTracker:
    def __init__(self, rule: EarlyStopping, model: nn.Module) -> None:
        self.rule, self.model = rule, model
        self.best: dict[str, float] | None = None
        self.best_state: dict[str, torch.Tensor] | None = None
        self.bad = 0

    def update(self, metrics: dict[str, float]) -> bool:
        """Record one evaluation; return True when training should stop."""
        if self.rule.metric not in metrics:
            raise ValueError(f"early_stopping.metric={self.rule.metric!r} not in eval_fn output {sorted(metrics)}")
        value = metrics[self.rule.metric]
        # NaN is never better: kept as the best, no later value could beat it and its weights would be restored
        better = not math.isnan(value) and (self.best is None or (
            value < self.best[self.rule.metric] if self.rule.mode == "min" else value > self.best[self.rule.metric]))
        if better:
            self.best, self.bad = dict(metrics), 0
            if self.rule.restore_best:
                self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            target = self.rule.stopping_threshold
            return target is not None and (value >= target if self.rule.mode == "max" else value <= target)
        self.bad += 1
        return self.bad >= self.rule.patience

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps so a resumed run stops where an uninterrupted one would."""
        return {"metric": self.rule.metric, "mode": self.rule.mode, "best": self.best, "bad": self.bad,
                "best_state": self.best_state}

    def load_state(self, state: dict[str, Any]) -> None:
        if (state["metric"], state["mode"]) != (self.rule.metric, self.rule.mode):
            raise ValueError(f"early_stopping monitors {self.rule.metric!r} ({self.rule.mode}), but the checkpoint's "
                             f"run monitored {state['metric']!r} ({state['mode']}); resume with the same rule")
        self.best, self.bad, self.best_state = state["best"], state["bad"], state["best_state"]

    def finish(self) -> dict[str, float] | None:
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        return self.best
