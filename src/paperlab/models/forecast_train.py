"""Train and evaluate forecasting backbones through ``paperlab.train`` (TSL-style recipe; arXiv 2510.25800 gives none).

Recipe: Adam, batch 32, at most 10 epochs, lr halved after every epoch, early stopping with patience 3 on the
validation **MSE** for every training loss (TSL validates with the training criterion; we do not, so that all
losses are stopped by one rule), best weights restored. Default lr: 5e-3 for the linear models, 1e-3 for
iTransformer (FreDF's script), 1e-4 for PatchTST. Metrics are MSE/MAE over all windows of a split on the
standardised scale (``inverse=True`` for the original units).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from paperlab._validate import check_int, check_positive, check_probability
from paperlab.data.ltsf import LTSFData
from paperlab.losses.frele import get_loss
from paperlab.train import EarlyStopping, TrainResult, train

__all__ = ["DEFAULT_LR", "FitResult", "ForecastTrainConfig", "evaluate_forecaster", "fit_forecaster", "predict"]

DEFAULT_LR = {"dlinear": 5e-3, "rlinear": 5e-3, "itransformer": 1e-3, "patchtst": 1e-4}


@dataclass(frozen=True, kw_only=True)
class ForecastTrainConfig:
    """Training recipe; ``max_train_windows`` / ``max_val_windows`` subsample (seeded) for quick runs."""

    epochs: int = 10
    batch_size: int = 32
    lr: float = 5e-3
    lr_decay: float = 0.5
    patience: int = 3
    max_train_windows: int | None = None
    max_val_windows: int | None = None

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, minimum=1)
        check_int("batch_size", self.batch_size, minimum=1)
        check_positive("lr", self.lr)
        check_probability("lr_decay", self.lr_decay)
        check_int("patience", self.patience, minimum=1)
        for name in ("max_train_windows", "max_val_windows"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), minimum=1)


@dataclass
class FitResult:
    """``train`` output plus the epochs run and the best validation metrics."""

    train: TrainResult
    epochs_run: int
    best: dict[str, float] = field(default_factory=dict)


def predict(model: nn.Module, data: LTSFData, split: str, *, max_windows: int | None = None,
            batch_size: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """Predictions and targets ``[n, H, C]`` for the first ``max_windows`` windows of ``split`` (all by default)."""
    n = data.n_windows(split) if max_windows is None else min(max_windows, data.n_windows(split))
    was_training = model.training
    model.eval()
    preds, targets = [], []
    with torch.no_grad():
        for start in range(0, n, batch_size):
            x, y = data.windows(split, torch.arange(start, min(n, start + batch_size)))
            preds.append(model(x))
            targets.append(y)
    model.train(was_training)
    return torch.cat(preds), torch.cat(targets)


def evaluate_forecaster(model: nn.Module, data: LTSFData, split: str = "test", *, inverse: bool = False,
                        max_windows: int | None = None) -> dict[str, float]:
    """``{'mse', 'mae'}`` over every window of ``split`` (none dropped), standardised unless ``inverse``."""
    pred, target = predict(model, data, split, max_windows=max_windows)
    if inverse:
        pred, target = data.inverse(pred), data.inverse(target)
    err = (pred - target).double()
    return {"mse": float(err.pow(2).mean()), "mae": float(err.abs().mean())}


def _epoch_batches(batch_size: int, seed: int, subset: torch.Tensor) -> Callable[[int], torch.Tensor]:
    per_epoch = max(1, len(subset) // batch_size)  # the last partial batch is dropped, as TSL's train loader
    cache: dict[int, torch.Tensor] = {}

    def indices(step: int) -> torch.Tensor:
        epoch, i = divmod(step, per_epoch)
        if epoch not in cache:
            cache.clear()
            g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
            cache[epoch] = subset[torch.randperm(len(subset), generator=g)]
        return cache[epoch][i * batch_size : (i + 1) * batch_size]

    return indices


def fit_forecaster(
    model: nn.Module,
    data: LTSFData,
    *,
    loss: str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = "frele",
    config: ForecastTrainConfig | None = None,
    seed: int = 0,
    tracker: Callable[[nn.Module], dict[str, float]] | None = None,
    progress: bool = False,
) -> FitResult:
    """Train ``model`` on ``data``'s train windows with ``loss``; stop early on validation MSE.

    Args:
        model: ``[B, L, C] -> [B, H, C]`` backbone (trained in place; best validation weights restored).
        data: :class:`~paperlab.data.ltsf.LTSFData`.
        loss: a name from :data:`paperlab.losses.LOSSES` or a callable ``(pred, target) -> scalar``.
        config: the recipe (default :class:`ForecastTrainConfig`).
        seed: drives the window order, the subsample and dropout (under ``fork_rng``; global RNG untouched).
        tracker: extra ``model -> metrics`` run at each epoch's evaluation (e.g. ``SpectralBiasTracker``).

    Returns:
        :class:`FitResult`; ``best`` holds the best epoch's validation metrics.
    """
    config = config or ForecastTrainConfig()
    loss_fn_pt = get_loss(loss) if isinstance(loss, str) else loss
    n_train = data.n_windows("train")
    g = torch.Generator().manual_seed(seed)
    subset = torch.randperm(n_train, generator=g) if config.max_train_windows else torch.arange(n_train)
    subset = subset[: config.max_train_windows] if config.max_train_windows else subset
    per_epoch = max(1, len(subset) // config.batch_size)
    batch_idx = _epoch_batches(config.batch_size, seed, subset)

    def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        return loss_fn_pt(m(x), y)

    def eval_fn(m: nn.Module) -> dict[str, float]:
        metrics = {f"val_{k}": v for k, v in evaluate_forecaster(m, data, "val",
                                                                 max_windows=config.max_val_windows).items()}
        return {**metrics, **(tracker(m) if tracker is not None else {})}

    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: config.lr_decay ** (s // per_epoch))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        res = train(model, loss_fn, lambda s: data.windows("train", batch_idx(s)), opt,
                    steps=config.epochs * per_epoch, scheduler=sched, eval_fn=eval_fn, eval_every=per_epoch,
                    early_stopping=EarlyStopping(metric="val_mse", patience=config.patience),
                    progress=progress, desc="forecast")
    return FitResult(train=res, epochs_run=math.ceil(res.steps_done / per_epoch), best=res.best or {})
