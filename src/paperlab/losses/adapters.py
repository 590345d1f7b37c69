"""Optional adapters so neuralforecast and darts users can train with FreLE (arXiv 2510.25800; the adapters are ours).

Both packages are optional extras, imported only inside these functions; a missing package raises
``ImportError`` with the install command.

- neuralforecast: :func:`neuralforecast_loss` returns a ``BasePointLoss`` subclass instance called as
  ``loss(y=, y_hat=, y_insample=, mask=)`` on ``[B, h, N]``. The time term is weighted by ``mask`` x
  ``horizon_weight``; the frequency term runs on series zero-filled where ``mask == 0`` and each series'
  frequency error is weighted by its observed fraction (a fully masked series contributes 0) [I]. Use
  ``valid_loss=MSE()`` for validation so early stopping compares one metric across losses.
- darts: :func:`darts_loss` returns a :class:`~paperlab.losses.frele.FreLELoss` for ``loss_fn=``; it accepts
  ``[B, H]`` as one channel and honours ``reduction='none'``, which darts sets for sample weights.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from paperlab.losses.frele import FreLELoss, frele_loss, ifr_weights

__all__ = ["darts_loss", "neuralforecast_loss"]


def _require(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"{module} is not installed; `pip install {extra}` (or `pip install 'paperlab[forecast]'`, "
                          "which installs neuralforecast and darts) to use this adapter") from err


def _masked_frele(y: torch.Tensor, y_hat: torch.Tensor, weights: torch.Tensor, *, delta: float, window: int,
                  eta: float | None, time_loss: str, fft_norm: str) -> torch.Tensor:
    """FreLE on ``[B, h, N]`` with per-point ``weights`` (mask x horizon weight), see the module docstring."""
    observed = (weights > 0).to(y.dtype)
    e = y_hat - y
    terr = e.abs() if time_loss == "mae" else e.pow(2)
    lt = (terr * weights).sum() / weights.sum().clamp_min(torch.finfo(y.dtype).tiny)
    yz, pz = y * observed, y_hat * observed
    w = ifr_weights(yz, window=window, eta=eta, fft_norm=fft_norm)
    ferr = (torch.fft.rfft(pz, dim=1, norm=fft_norm) - torch.fft.rfft(yz, dim=1, norm=fft_norm)).abs() * w
    frac = observed.mean(dim=1)  # [B, N]
    lf = (ferr.mean(dim=1) * frac).mean()
    return delta * lf + (1 - delta) * lt


def neuralforecast_loss(*, delta: float = 0.3, window: int = 3, eta: float | None = None, time_loss: str = "mae",
                        fft_norm: str = "backward", horizon_weight: torch.Tensor | None = None) -> Any:
    """A neuralforecast point loss computing FreLE; pass it as ``loss=`` to any neuralforecast model.

    Args: FreLE's options (see :func:`paperlab.losses.frele_loss`) and neuralforecast's ``horizon_weight [h]``.
    """
    nf = _require("neuralforecast.losses.pytorch", "neuralforecast")
    frele_loss(torch.zeros(1, 2, 1), torch.zeros(1, 2, 1), delta=delta, window=window, eta=eta,
               time_loss=time_loss, fft_norm=fft_norm)  # validate the options now

    point_loss: Any = nf.BasePointLoss  # a base known only at run time (an optional extra)
    options = {"delta": delta, "window": window, "eta": eta, "time_loss": time_loss, "fft_norm": fft_norm,
               "horizon_weight": horizon_weight}

    class FreLE(point_loss):
        """FreLE for neuralforecast (paperlab adapter)."""

        def __init__(self) -> None:
            super().__init__(horizon_weight=horizon_weight, outputsize_multiplier=1, output_names=[""])

        def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
            # a class made inside a function cannot be pickled by name: rebuild it from its options instead
            # (ray and multiprocessing tuners pickle the loss to ship it to workers)
            return _rebuild_neuralforecast_loss, (options,)

        def __call__(self, y: torch.Tensor, y_hat: torch.Tensor, y_insample: torch.Tensor | None = None,
                     mask: torch.Tensor | None = None) -> torch.Tensor:
            if y_hat.dim() == y.dim() + 1:
                y_hat = y_hat.squeeze(-1)
            if y.dim() == 2:
                y, y_hat = y.unsqueeze(-1), y_hat.unsqueeze(-1)
                mask = None if mask is None else mask.reshape(y.shape)
            weights = torch.ones_like(y) if mask is None else mask.to(y.dtype).reshape(y.shape)
            if self.horizon_weight is not None:
                weights = weights * self.horizon_weight.to(y).reshape(1, -1, 1)
            return _masked_frele(y, y_hat, weights, delta=delta, window=window, eta=eta, time_loss=time_loss,
                                 fft_norm=fft_norm)

    return FreLE()


def _rebuild_neuralforecast_loss(options: dict[str, Any]) -> Any:
    return neuralforecast_loss(**options)


def darts_loss(*, delta: float = 0.3, window: int = 3, eta: float | None = None, time_loss: str = "mae",
               keep_ratio: float = 1.0, fft_norm: str = "backward") -> FreLELoss:
    """A :class:`FreLELoss` for darts' ``loss_fn=`` (checks darts is installed, for a clear error)."""
    _require("darts", "darts")
    return FreLELoss(delta=delta, window=window, eta=eta, time_loss=time_loss, keep_ratio=keep_ratio,
                     fft_norm=fft_norm)
