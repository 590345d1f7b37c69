"""Input checks shared by the forecasting losses: the ``[B, H, C]`` layout, a declared channels-first layout,
the horizon a caller expects, and the dtype the spectra run in."""

from __future__ import annotations

import torch

from paperlab._validate import check_choice, check_int

__all__ = ["LAYOUTS", "as_bhc", "check_series", "from_bhc", "probe", "spectral_dtype"]

LAYOUTS = ("BHC", "BCH")
"""``'BHC'``: [batch, horizon, channels] (the default, as neuralforecast, darts and Time-Series-Library);
``'BCH'``: channels first, transposed to ``[B, H, C]`` before any FFT."""

_NAMES = {"BHC": "[B, H, C]", "BCH": "[B, C, H]"}


def as_bhc(pred: torch.Tensor, target: torch.Tensor, *, layout: str, horizon: int | None
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Check a (pred, target) pair in its declared ``layout`` and return both as ``[B, H, C]``.

    A tensor's layout cannot be read off its shape, so with ``horizon`` given (adapters and careful callers pass
    it) a tensor whose horizon sits on the channel axis is rejected with the layout to declare.
    """
    check_choice("layout", layout, LAYOUTS)
    for name, t in (("pred", pred), ("target", target)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor, got dtype {t.dtype} (shape {tuple(t.shape)})")
        if t.dim() != 3:
            raise ValueError(f"{name} must be {_NAMES[layout]} (3 dims, layout={layout!r}), got shape "
                             f"{tuple(t.shape)}")
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")
    if pred.dtype != target.dtype:
        raise TypeError(f"pred and target must share a dtype, got {pred.dtype} and {target.dtype}")
    shape = tuple(pred.shape)
    if layout == "BCH":
        pred, target = pred.transpose(1, 2), target.transpose(1, 2)
    if horizon is not None:
        check_int("horizon", horizon, minimum=2)
        if pred.shape[1] != horizon:
            hint = ""
            if pred.shape[2] == horizon:
                other = "BCH" if layout == "BHC" else "BHC"
                hint = f"; the horizon is on the channel axis: declare layout={other!r} if it is {_NAMES[other]}"
            raise ValueError(f"pred has shape {shape}: horizon={horizon} must be the H axis of layout "
                             f"{layout!r} {_NAMES[layout]}, which holds {pred.shape[1]}{hint}")
    if pred.shape[1] < 2:
        raise ValueError(f"the horizon H must be >= 2 for a spectrum, got shape {shape} (layout={layout!r})")
    if pred.shape[0] == 0 or pred.shape[2] == 0:  # a mean over nothing would be NaN
        raise ValueError(f"pred and target must hold at least one series (B >= 1, C >= 1), got shape {shape}")
    return pred, target


def from_bhc(t: torch.Tensor, layout: str) -> torch.Tensor:
    """A ``[B, H, C]`` per-point result back in the caller's layout."""
    return t.transpose(1, 2) if layout == "BCH" else t


def probe(layout: object, horizon: object) -> torch.Tensor:
    """A zero ``[1, H, 1]`` series in ``layout`` (H = ``horizon`` when it is a usable int, else 2), for
    validating a loss's options once, before training; a bad layout or horizon is left for the loss to name."""
    h = horizon if isinstance(horizon, int) and not isinstance(horizon, bool) and horizon >= 2 else 2
    return from_bhc(torch.zeros(1, h, 1), str(layout))


def check_series(name: str, t: object) -> torch.Tensor:
    """``t`` must be a real ``[B, H, C]`` tensor with B, C >= 1 (the IFR weights' input)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor [B, H, C], got {type(t).__name__}")
    if t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must be a real tensor (a series, not a spectrum), got dtype {t.dtype} "
                        f"(shape {tuple(t.shape)})")
    if t.dim() != 3:
        raise ValueError(f"{name} must be [B, H, C] (3 dims, horizon on dim 1), got shape {tuple(t.shape)}")
    if t.shape[0] == 0 or t.shape[2] == 0:
        raise ValueError(f"{name} must hold at least one series (B >= 1, C >= 1), got shape {tuple(t.shape)}")
    return t


def spectral_dtype(pred: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """bf16/fp16 inputs in fp32: CPU FFTs have no bf16 kernel and fp16 spectra lose precision (the loss comes
    back in fp32, as torch's own losses do under autocast); other dtypes unchanged."""
    if pred.dtype in (torch.bfloat16, torch.float16):
        return pred.float(), target.float()
    return pred, target
