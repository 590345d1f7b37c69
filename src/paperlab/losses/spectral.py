"""Spectral-bias measurements for forecasts (FreLE, arXiv 2510.25800, Table 1 and Sec. 3).

Band errors [P Table 1; the positional band edges are our reading, I]: with K = H // 2 + 1 rfft bins along the
horizon, LF is bins ``[0, ceil(0.1 K))``, MF ``[ceil(0.1 K), ceil(0.5 K))``, HF the rest and GF all bins
(H = 96: 0-4, 5-24, 25-48). Each band's error is the RMSE of the complex difference ``rfft(pred) - rfft(target)``
over windows, bins in the band and channels (``metric='amplitude'`` uses ``|Y_hat| - |Y|`` instead).
``metric='relative'`` [I] normalises each bin first: ``e_k = sum_{b,c} |Y_hat_k - Y_k|^2 / sum_{b,c} |Y_k|^2``
and the band value is ``sqrt(mean_{k in band} e_k)``; the paper's Table 1 values (GF about 1 for DLinear)
look like such a normalised error, which the absolute RMSE on standardised data is not (there the DC bin
dominates LF).

Per-bin relative amplitude error (Fredformer's definition ``||Y_hat_k| - |Y_k|| / |Y_k|``): we pool it as a
ratio of sums over windows and channels, ``sum ||Y_hat_k| - |Y_k|| / (sum |Y_k| + eps)`` [I], which stays finite
when single windows have near-zero amplitude in a bin.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn

from paperlab._validate import check_choice, check_int, check_positive

__all__ = ["BAND_NAMES", "SpectralBiasTracker", "band_slices", "per_bin_relative_error", "spectral_band_errors"]

BAND_NAMES = ("LF", "MF", "HF", "GF")


def _check(pred: torch.Tensor, target: torch.Tensor) -> None:
    for name, t in (("pred", pred), ("target", target)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating torch.Tensor, got {type(t).__name__}")
        if t.dim() != 3:
            raise ValueError(f"{name} must be [B, H, C], got shape {tuple(t.shape)}")
    if pred.shape != target.shape:
        raise ValueError(f"pred and target shapes differ: {tuple(pred.shape)} vs {tuple(target.shape)}")
    if pred.shape[1] < 2:
        raise ValueError(f"horizon (dim 1) must be >= 2, got shape {tuple(pred.shape)}")
    if pred.shape[0] == 0 or pred.shape[2] == 0:  # no window to average (and an FFT of nothing)
        raise ValueError(f"pred and target must hold at least one series (B >= 1, C >= 1), got shape "
                         f"{tuple(pred.shape)}")


def band_slices(horizon: int, *, bands: Sequence[float] = (0.1, 0.5)) -> dict[str, slice]:
    """Bin ranges of the LF/MF/HF/GF bands for a horizon H (K = H // 2 + 1 bins).

    Args:
        horizon: H >= 2.
        bands: two increasing fractions in (0, 1): the LF/MF and MF/HF edges as fractions of K.

    Returns:
        ``{'LF': slice, 'MF': slice, 'HF': slice, 'GF': slice}``.
    """
    check_int("horizon", horizon, minimum=2)
    if isinstance(bands, str | bytes) or not hasattr(bands, "__len__"):
        raise TypeError(f"bands must be a sequence of two fractions, got {type(bands).__name__} {bands!r}")
    if len(bands) != 2 or not 0 < bands[0] < bands[1] < 1:
        raise ValueError(f"bands must be two increasing fractions in (0, 1), got {tuple(bands)}")
    k = horizon // 2 + 1
    lo, hi = math.ceil(bands[0] * k), math.ceil(bands[1] * k)
    return {"LF": slice(0, lo), "MF": slice(lo, hi), "HF": slice(hi, k), "GF": slice(0, k)}


def spectral_band_errors(
    pred: torch.Tensor,
    target: torch.Tensor,
    *,
    bands: Sequence[float] = (0.1, 0.5),
    metric: str = "rmse",
    fft_norm: str = "backward",
) -> dict[str, float]:
    """Band RMSE of the spectrum error along the horizon (dim 1).

    Args:
        pred, target: ``[B, H, C]`` forecasts and truths (e.g. all test windows).
        bands: LF/MF and MF/HF edges as fractions of K, see :func:`band_slices`.
        metric: ``'rmse'`` (complex difference, [P Table 1]), ``'amplitude'`` (RMSE of ``|Y_hat| - |Y|``) or
            ``'relative'`` (per-bin error normalised by the target's power, see the module docstring, I).
        fft_norm: ``'backward'`` (as the paper's losses) or ``'ortho'``.

    Returns:
        ``{'LF': float, 'MF': float, 'HF': float, 'GF': float}``.
    """
    _check(pred, target)
    check_choice("metric", metric, ("rmse", "amplitude", "relative"))
    check_choice("fft_norm", fft_norm, ("backward", "ortho"))
    fp = torch.fft.rfft(pred.detach().double(), dim=1, norm=fft_norm)
    ft = torch.fft.rfft(target.detach().double(), dim=1, norm=fft_norm)
    sq = (fp - ft).abs().pow(2) if metric != "amplitude" else (fp.abs() - ft.abs()).pow(2)
    if metric == "relative":
        sq = (sq.sum(dim=(0, 2)) / ft.abs().pow(2).sum(dim=(0, 2)).clamp_min(1e-12)).view(1, -1, 1)
    out = {}
    for name, sl in band_slices(pred.shape[1], bands=bands).items():
        part = sq[:, sl, :]
        out[name] = float(part.mean().sqrt()) if part.numel() else float("nan")
    return out


def per_bin_relative_error(pred: torch.Tensor, target: torch.Tensor, *, eps: float = 1e-8) -> torch.Tensor:
    """Relative amplitude error per rfft bin, pooled over windows and channels [I, see module docstring].

    Args:
        pred, target: ``[B, H, C]``.
        eps: added to the pooled target amplitude.

    Returns:
        ``[K]`` float64 tensor ``sum_{b,c} ||Y_hat_k| - |Y_k|| / (sum_{b,c} |Y_k| + eps)``.
    """
    _check(pred, target)
    check_positive("eps", eps)
    ap = torch.fft.rfft(pred.detach().double(), dim=1).abs()
    at = torch.fft.rfft(target.detach().double(), dim=1).abs()
    return (ap - at).abs().sum(dim=(0, 2)) / (at.sum(dim=(0, 2)) + eps)


class SpectralBiasTracker:
    """Per-epoch spectral-bias record: call it on the model inside an ``eval_fn`` of ``paperlab.train``.

    Each call predicts the first ``max_windows`` validation windows and appends their band errors and per-bin
    relative amplitude error to ``history``; it returns the band errors as ``{'band_LF': ..., ...}`` so they
    land in ``TrainResult.evals`` too.

    Args:
        inputs: ``[N, L, C]`` validation inputs.
        targets: ``[N, H, C]`` validation targets.
        max_windows: keep the first this many windows (512 by default, our choice).
        predict: ``model -> forward`` override (default ``model(inputs)``).
    """

    def __init__(self, inputs: torch.Tensor, targets: torch.Tensor, *, max_windows: int = 512,
                 bands: Sequence[float] = (0.1, 0.5),
                 predict: Callable[[nn.Module, torch.Tensor], torch.Tensor] | None = None) -> None:
        check_int("max_windows", max_windows, minimum=1)
        if inputs.dim() != 3 or targets.dim() != 3 or inputs.shape[0] != targets.shape[0]:
            raise ValueError(f"inputs [N, L, C] and targets [N, H, C] must share N, got {tuple(inputs.shape)} "
                             f"and {tuple(targets.shape)}")
        band_slices(targets.shape[1], bands=bands)
        self.inputs, self.targets = inputs[:max_windows], targets[:max_windows]
        self.bands, self.predict = tuple(bands), predict
        self.history: list[dict[str, object]] = []

    def __call__(self, model: nn.Module) -> dict[str, float]:
        was_training = model.training
        model.eval()
        with torch.no_grad():
            pred = self.predict(model, self.inputs) if self.predict else model(self.inputs)
        model.train(was_training)
        bands = spectral_band_errors(pred, self.targets, bands=self.bands)
        self.history.append({**bands, "per_bin": per_bin_relative_error(pred, self.targets).tolist()})
        return {f"band_{k}": v for k, v in bands.items()}

    def heatmap(self) -> torch.Tensor:
        """``[epochs, K]`` per-bin relative error, one row per call."""
        if not self.history:
            raise ValueError("SpectralBiasTracker.heatmap() needs at least one call on a model first")
        return torch.tensor([h["per_bin"] for h in self.history], dtype=torch.float64)
