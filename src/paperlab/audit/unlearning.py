"""Machine-unlearning methods to audit (our choice: common baselines of SalUn-style papers).

Every method returns a *new* model (the input model is copied, never modified) and trains through
``paperlab.train.train``:

- ``retrain``: train a fresh model on the retain set only (the gold standard; needs ``make_model``).
- ``finetune``: SGD on the retain set ("FT"; forgetting by catastrophic interference).
- ``grad_ascent``: gradient ascent on the forget-set cross-entropy ("GA").
- ``random_label``: SGD on retain plus the forget set relabelled with random wrong classes ("RL").
- ``l1_sparse``: fine-tuning with an l1 penalty ``alpha_t |theta|_1``, alpha decaying linearly to 0.
- ``salun``: random labels restricted to the weights with the *largest* ``|grad|`` of the forget loss
  (SalUn, Fan et al. 2024; the public code's mask may keep the smallest: ours keeps the largest, on CPU).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from paperlab._validate import check_choice, check_in_range, check_int, check_positive
from paperlab.audit.models import TrainConfig, epoch_batches, fit_classifier
from paperlab.train import train

__all__ = ["METHODS", "UnlearnConfig", "saliency_mask", "unlearn"]

METHODS = ("retrain", "finetune", "grad_ascent", "random_label", "l1_sparse", "salun")

Pair = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True, kw_only=True)
class UnlearnConfig:
    """Hyperparameters of the approximate methods (SGD with momentum) and of ``retrain`` (Adam, ``retrain``).

    ``ga_lr`` and ``ga_epochs`` apply to gradient ascent, which diverges at fine-tuning learning rates.
    """

    epochs: int = 5
    lr: float = 1e-2
    momentum: float = 0.9
    batch_size: int = 128
    ga_lr: float = 1e-2
    ga_epochs: int = 3
    l1_alpha: float = 5e-4
    salun_fraction: float = 0.5
    retrain: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, minimum=1)
        check_int("ga_epochs", self.ga_epochs, minimum=1)
        check_int("batch_size", self.batch_size, minimum=1)
        check_positive("lr", self.lr)
        check_positive("ga_lr", self.ga_lr)
        check_in_range("momentum", self.momentum, 0.0, 1.0, high_open=True)
        check_positive("l1_alpha", self.l1_alpha, allow_zero=True)
        check_in_range("salun_fraction", self.salun_fraction, 0.0, 1.0, low_open=True)


def _check_pair(name: str, pair: Pair) -> Pair:
    if not (isinstance(pair, tuple) and len(pair) == 2):
        raise TypeError(f"{name} must be an (x, y) tuple of tensors, got {type(pair).__name__}")
    x, y = pair
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"{name}: x and y must be non-empty with equal lengths, got {len(x)} and {len(y)}")
    return x, y


def _random_wrong_labels(y: torch.Tensor, classes: int, *, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    shift = torch.randint(1, classes, y.shape, generator=g)
    return (y + shift) % classes


def saliency_mask(model: nn.Module, forget: Pair, *, fraction: float = 0.5) -> dict[str, torch.Tensor]:
    """Boolean masks (per parameter name) keeping the ``fraction`` of weights with the largest
    ``|d CE(forget) / d theta|`` (one global threshold over all parameters)."""
    check_in_range("fraction", fraction, 0.0, 1.0, low_open=True)
    x, y = _check_pair("forget", forget)
    model.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(model(x), y).backward()
    grads = {n: p.grad.detach().abs() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    flat = torch.cat([g.flatten() for g in grads.values()])
    k = max(1, int(round(fraction * flat.numel())))
    threshold = torch.topk(flat, k).values.min()
    return {n: g >= threshold for n, g in grads.items()}


def _sgd(model: nn.Module, config: UnlearnConfig, lr: float) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=config.momentum)


def unlearn(method: str, model: nn.Module, *, retain: Pair, forget: Pair, config: UnlearnConfig | None = None,
            seed: int = 0, make_model: Callable[[], nn.Module] | None = None) -> nn.Module:
    """Apply one unlearning method.

    Args:
        method: one of ``METHODS``.
        model: the original model (trained on retain + forget); not modified.
        retain: ``(x [nR, ...], y [nR])``; forget: ``(x [nF, ...], y [nF])``.
        config: hyperparameters (default :class:`UnlearnConfig`).
        seed: batch order, random labels and (for ``retrain``) nothing else: ``make_model`` owns the init.
        make_model: ``() -> fresh nn.Module``; required by ``retrain``.

    Returns:
        the unlearned model, in eval mode.
    """
    check_choice("method", method, METHODS)
    config = config or UnlearnConfig()
    xr, yr = _check_pair("retain", retain)
    xf, yf = _check_pair("forget", forget)
    if method == "retrain":
        if make_model is None:
            raise ValueError("method='retrain' needs make_model: a callable returning a freshly initialised model")
        return fit_classifier(make_model(), xr, yr, config=config.retrain, seed=seed)
    new = copy.deepcopy(model).train()
    ce = nn.functional.cross_entropy
    if method == "grad_ascent":
        at, per_epoch = epoch_batches(len(xf), config.batch_size, seed=seed)
        steps = config.ga_epochs * per_epoch
        train(new, lambda m, i: -ce(m(xf[i]), yf[i]), at, _sgd(new, config, config.ga_lr), steps=steps,
              progress=False, desc=method)
        return new.eval()
    if method in ("finetune", "l1_sparse"):
        x, y = xr, yr
    else:
        classes = int(model(xf[:1]).shape[-1])
        x, y = torch.cat([xr, xf]), torch.cat([yr, _random_wrong_labels(yf, classes, seed=seed)])
    at, per_epoch = epoch_batches(len(x), config.batch_size, seed=seed)
    steps = config.epochs * per_epoch
    handles = []
    if method == "salun":
        masks = saliency_mask(copy.deepcopy(model), (xf, yf), fraction=config.salun_fraction)
        for name, p in new.named_parameters():
            mask = masks[name].to(p.dtype)
            handles.append(p.register_hook(lambda g, mask=mask: g * mask))

    def loss_fn(m: nn.Module, batch: tuple[int, torch.Tensor]) -> torch.Tensor:
        step, idx = batch
        loss = ce(m(x[idx]), y[idx])
        if method == "l1_sparse":
            alpha = config.l1_alpha * (1.0 - step / steps)
            loss = loss + alpha * sum(p.abs().sum() for p in m.parameters())
        return loss

    try:
        train(new, loss_fn, lambda s: (s, at(s)), _sgd(new, config, config.lr), steps=steps, progress=False,
              desc=method)
    finally:
        for h in handles:
            h.remove()
    return new.eval()
