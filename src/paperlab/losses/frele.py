"""FreLE (Sun et al. 2025, arXiv 2510.25800): frequency loss enhancement for forecasting, plus its peers.

Layout is ``[B, H, C]`` (batch, horizon, channels); every FFT runs along the horizon (dim 1) only, giving
``K = H // 2 + 1`` bins. Standardised data are assumed.

FreLE [P Alg. 1] is ``L = delta * L_f + (1 - delta) * L_t`` with

- ``L_t = mean|pred - target|`` [P Eq. 6] (``time_loss='mse'`` is our option [I]);
- ``L_f = mean_{b,k,c} w_bkc * |rfft(pred) - rfft(target)|_bkc``: the explicit frequency regularization
  (EFR, [P Eq. 7], the modulus of the complex difference, i.e. FreDF's frequency term) re-weighted by the
  implicit frequency regularization (IFR, [P Eq. 9]): a bin that is a local amplitude maximum within width d
  gets weight ``i / eta``, other bins weight 1.

Interpretations [I] (the paper leaves them open; each is an option):

1. Peaks come from the *detached target* amplitude per (b, c) series, so the weight never depends on pred
   and the loss stays a weighted L1, convex in pred (``peak_source='union'`` adds pred's peaks).
2. ``i`` is the 1-based bin index (``index_base=0`` is an option). The DC bin is never damped: the default
   ``weight_mode='index_dc1'`` keeps its weight at 1. Read literally (``weight_mode='index'``), a DC peak
   (nearly always the largest on standardised data) gets ``1 / eta`` and the frequency term barely constrains
   the level; measured on DLinear ETTh1-96 (quick budget, 3 seeds), FreLE at delta = 1 then gave test MSE
   0.654 against 0.393 with the DC kept at 1 (0.3775 vs 0.3777 at delta = 0.3), and the paper says delta = 1
   works well. ``weight_mode='constant'`` uses ``i := K`` for every peak (EFR).
3. The window is symmetric of odd width d, truncated at the edges; a bin is a peak iff its amplitude is
   ``>=`` the window max and ``> 1e-8 * max|Y|`` of its series (so a zero target has no peaks). The paper's
   asymmetric window ``[i - floor(d/2), i + ceil(d/2)]`` is ``window_mode='paper'``.
4. ``eta`` defaults to K, so weights ``i / K`` lie in (0, 1] and damp dominant low-frequency peaks relative
   to high-frequency ones (the paper's stated aim).
5. ``freq_metric='amplitude'`` (``||Y_hat| - |Y||``) is a phase-blind variant, i.e. a different loss.
6. ``fft_norm='backward'`` (torch default, as FreDF) makes L_f grow like sqrt(H); ``'ortho'`` makes delta's
   meaning horizon-independent.

The amplitude filter [P Sec. 4.5 zeroes |xi| < eps; the ratio form is ours, I]: ``keep_ratio`` r keeps, per
series, the ceil(r * K) bins of largest target amplitude in both spectra (other bins are dropped from L_f).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from paperlab._validate import (
    check_bool,
    check_choice,
    check_in_range,
    check_int,
    check_positive,
    check_probability,
)
from paperlab.losses._checks import LAYOUTS, as_bhc, check_series, from_bhc, probe, spectral_dtype

__all__ = [
    "ETA_MIN",
    "LAYOUTS",
    "LOSSES",
    "FreLELoss",
    "efr_loss",
    "fredf_loss",
    "frele_loss",
    "get_loss",
    "ifr_weights",
    "mae_loss",
    "mse_loss",
]


def mse_loss(pred: torch.Tensor, target: torch.Tensor, *, layout: str = "BHC",
             horizon: int | None = None) -> torch.Tensor:
    """Mean squared error over ``[B, H, C]`` (or a declared ``layout``, checked against ``horizon``); a scalar."""
    pred, target = as_bhc(pred, target, layout=layout, horizon=horizon)
    return (pred - target).pow(2).mean()


def mae_loss(pred: torch.Tensor, target: torch.Tensor, *, layout: str = "BHC",
             horizon: int | None = None) -> torch.Tensor:
    """Mean absolute error over ``[B, H, C]`` (or a declared ``layout``, checked against ``horizon``); a scalar."""
    pred, target = as_bhc(pred, target, layout=layout, horizon=horizon)
    return (pred - target).abs().mean()


def efr_loss(pred: torch.Tensor, target: torch.Tensor, *, fft_norm: str = "backward", layout: str = "BHC",
             horizon: int | None = None) -> torch.Tensor:
    """Explicit frequency regularization [P Eq. 7]: ``mean_{b,k,c} |rfft(pred) - rfft(target)|`` along H.

    This is exactly FreDF's frequency term. Args: pred, target ``[B, H, C]`` (``layout='BCH'`` declares
    ``[B, C, H]``; ``horizon``, if given, must be the size of H). Returns a scalar.
    """
    pred, target = as_bhc(pred, target, layout=layout, horizon=horizon)
    check_choice("fft_norm", fft_norm, ("backward", "ortho"))
    pred, target = spectral_dtype(pred, target)
    diff = torch.fft.rfft(pred, dim=1, norm=fft_norm) - torch.fft.rfft(target, dim=1, norm=fft_norm)
    return diff.abs().mean()


def fredf_loss(pred: torch.Tensor, target: torch.Tensor, *, alpha: float = 0.8,
               fft_norm: str = "backward", layout: str = "BHC", horizon: int | None = None) -> torch.Tensor:
    """FreDF (Wang et al., ICLR 2025), FreLE's closest peer: ``alpha * L_f + (1 - alpha) * MSE``.

    ``L_f`` is :func:`efr_loss`. Args: pred, target ``[B, H, C]`` (``layout``, ``horizon`` as in
    :func:`efr_loss`); alpha in [0, 1] (0.8 in our FreDF baseline). Returns a scalar.
    """
    check_probability("alpha", alpha)
    pred, target = as_bhc(pred, target, layout=layout, horizon=horizon)
    pred, target = spectral_dtype(pred, target)
    return alpha * efr_loss(pred, target, fft_norm=fft_norm) + (1 - alpha) * mse_loss(pred, target)


ETA_MIN = 1e-6
"""The smallest ``eta``: peak weights ``i / eta`` reach ``K / eta``, and a smaller eta lets them (and the
weighted frequency error) overflow fp32 (eta = 1e-40 gave an infinite loss). The default eta is K."""


def _window_max(amp: torch.Tensor, window: int, window_mode: str) -> torch.Tensor:
    """Running max of ``amp [B, K, C]`` over bins, -inf padded (so the window is truncated at the edges)."""
    b, k, c = amp.shape
    left, right = (window // 2, window // 2) if window_mode == "symmetric" else (window // 2, -(-window // 2))
    flat = amp.permute(0, 2, 1).reshape(b * c, 1, k)
    flat = F.pad(flat, (left, right), value=-math.inf)
    pooled = F.max_pool1d(flat, kernel_size=left + right + 1, stride=1)
    return pooled.reshape(b, c, k).permute(0, 2, 1)


def _peaks(amp: torch.Tensor, window: int, window_mode: str) -> torch.Tensor:
    floor = 1e-8 * amp.amax(dim=1, keepdim=True)
    return (amp >= _window_max(amp, window, window_mode)) & (amp > floor)


def ifr_weights(
    target: torch.Tensor,
    *,
    window: int = 3,
    eta: float | None = None,
    index_base: int = 1,
    weight_mode: str = "index_dc1",
    window_mode: str = "symmetric",
    fft_norm: str = "backward",
    pred: torch.Tensor | None = None,
) -> torch.Tensor:
    """Implicit frequency regularization weights [P Eq. 9; peak rule and index base are I]; no gradient.

    Args:
        target: ``[B, H, C]``; peaks are found on its detached amplitude ``|rfft(target, dim=1)|``.
        window: odd peak-window width d >= 1 (``window_mode='symmetric'``; d = 1 marks every non-zero bin).
        eta: the divisor, a finite number >= ``ETA_MIN`` (1e-6; smaller ones overflow fp32 weights); default
            K = H // 2 + 1, so weights ``i / K`` lie in (0, 1].
        index_base: 1 (DC is bin 1, weight ``1 / eta``) or 0 (DC weight 0).
        weight_mode: ``'index_dc1'`` (default: peak weight ``i / eta``, but the DC bin keeps weight 1, see the
            module docstring), ``'index'`` (``i / eta`` for every peak, DC included: the literal reading) or
            ``'constant'`` (``K / eta`` for every peak).
        window_mode: ``'symmetric'`` or ``'paper'`` (``[i - floor(d/2), i + ceil(d/2)]``, any d >= 1).
        pred: if given (``peak_source='union'``), pred's detached peaks are added to target's; the shape of
            target.

    Returns:
        ``[B, K, C]`` weights: ``i / eta`` at peaks, 1 elsewhere.
    """
    check_series("target", target)
    if pred is not None and check_series("pred", pred).shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")
    check_int("window", window, minimum=1)
    check_choice("window_mode", window_mode, ("symmetric", "paper"))
    if window_mode == "symmetric" and window % 2 == 0:
        raise ValueError(f"window must be odd for window_mode='symmetric', got {window}")
    check_choice("weight_mode", weight_mode, ("index", "index_dc1", "constant"))
    check_choice("fft_norm", fft_norm, ("backward", "ortho"))
    if index_base not in (0, 1) or isinstance(index_base, bool):
        raise ValueError(f"index_base must be 0 or 1, got {index_base!r}")
    k = target.shape[1] // 2 + 1
    eta = float(k) if eta is None else check_positive("eta", eta)
    if eta < ETA_MIN:
        raise ValueError(f"eta must be a finite number >= ETA_MIN = {ETA_MIN:g} (peak weights i / eta reach "
                         f"{k} / eta and would overflow), got {eta!r}")
    with torch.no_grad():
        amp = torch.fft.rfft(target.detach(), dim=1, norm=fft_norm).abs()
        peak = _peaks(amp, window, window_mode)
        if pred is not None:
            peak = peak | _peaks(torch.fft.rfft(pred.detach(), dim=1, norm=fft_norm).abs(), window, window_mode)
        if weight_mode == "constant":
            idx = torch.full((k,), float(k), dtype=amp.dtype, device=amp.device)
        else:
            idx = torch.arange(k, dtype=amp.dtype, device=amp.device) + index_base
        if weight_mode == "index_dc1":
            peak[:, 0] = False  # DC is never damped
        return torch.where(peak, (idx / eta).view(1, k, 1), torch.ones_like(amp))


def _keep_mask(target: torch.Tensor, keep_ratio: float, fft_norm: str) -> torch.Tensor | None:
    """``[B, K, C]`` 0/1 mask keeping the ceil(r K) largest target-amplitude bins per series (None if r = 1)."""
    if keep_ratio >= 1.0:
        return None
    with torch.no_grad():
        amp = torch.fft.rfft(target.detach(), dim=1, norm=fft_norm).abs()
        n_keep = max(1, math.ceil(keep_ratio * amp.shape[1] - 1e-9))
        top = amp.topk(n_keep, dim=1).indices
        return torch.zeros_like(amp).scatter_(1, top, 1.0)


def frele_loss(
    pred: torch.Tensor,
    target: torch.Tensor,
    *,
    delta: float = 0.3,
    window: int = 3,
    eta: float | None = None,
    time_loss: str = "mae",
    keep_ratio: float = 1.0,
    ifr: bool = True,
    peak_source: str = "target",
    index_base: int = 1,
    weight_mode: str = "index_dc1",
    window_mode: str = "symmetric",
    freq_metric: str = "complex",
    fft_norm: str = "backward",
    reduction: str = "mean",
    layout: str = "BHC",
    horizon: int | None = None,
) -> torch.Tensor:
    """FreLE loss ``delta * L_f + (1 - delta) * L_t`` [P Alg. 1]; see the module docstring for each [I] choice.

    Args:
        pred, target: ``[B, H, C]`` floating tensors of one dtype, H >= 2; the FFT runs along dim 1.
        delta: balance in [0, 1] (0.3, [P Fig. 5]); 0 is the time loss, 1 the weighted frequency term.
        window, eta, index_base, weight_mode, window_mode: IFR peak rule, see :func:`ifr_weights`.
        time_loss: ``'mae'`` [P] or ``'mse'`` [I].
        keep_ratio: amplitude filter in (0, 1]; 1 (default) is off.
        ifr: a bool; False gives EFR only (all weights 1): ``delta * efr_loss + (1 - delta) * L_t``.
        peak_source: ``'target'`` (default) or ``'union'`` (target's or pred's peaks).
        freq_metric: ``'complex'`` (``|Y_hat - Y|``, [P]) or ``'amplitude'`` (``||Y_hat| - |Y||``, phase-blind).
        fft_norm: ``'backward'`` (default, as FreDF) or ``'ortho'``.
        reduction: ``'mean'`` (scalar), ``'sum'``, or ``'none'``: ``[B, H, C]`` equal to
            ``(1 - delta) * e + delta * f_bc`` where ``e`` is the pointwise time error and ``f_bc`` the series'
            mean weighted frequency error broadcast over H; its mean is the ``'mean'`` value.
        layout: ``'BHC'`` (default) or ``'BCH'`` (channels first; the FFT still runs along H).
        horizon: if given, the size H must have; a tensor whose horizon sits on the channel axis is then
            rejected (its shape alone cannot tell ``[B, H, C]`` from ``[B, C, H]``).

    Returns:
        A scalar, or the input's shape for ``reduction='none'``; fp32 for bf16/fp16 inputs (the FFT runs in
        fp32).
    """
    pred, target = as_bhc(pred, target, layout=layout, horizon=horizon)
    pred, target = spectral_dtype(pred, target)
    check_in_range("delta", delta, 0.0, 1.0)
    check_choice("time_loss", time_loss, ("mae", "mse"))
    check_in_range("keep_ratio", keep_ratio, 0.0, 1.0, low_open=True)
    check_choice("peak_source", peak_source, ("target", "union"))
    check_choice("freq_metric", freq_metric, ("complex", "amplitude"))
    check_choice("reduction", reduction, ("mean", "sum", "none"))
    if check_bool("ifr", ifr):
        w = ifr_weights(target, window=window, eta=eta, index_base=index_base, weight_mode=weight_mode,
                        window_mode=window_mode, fft_norm=fft_norm,
                        pred=pred if peak_source == "union" else None)
    else:  # still validate the IFR options so a typo never passes silently
        ifr_weights(target[:1, :, :1], window=window, eta=eta, index_base=index_base, weight_mode=weight_mode,
                    window_mode=window_mode, fft_norm=fft_norm)
        w = None
    mask = _keep_mask(target, keep_ratio, fft_norm)
    if mask is not None:
        w = mask if w is None else w * mask
    fp, ft = torch.fft.rfft(pred, dim=1, norm=fft_norm), torch.fft.rfft(target, dim=1, norm=fft_norm)
    ferr = (fp - ft).abs() if freq_metric == "complex" else (fp.abs() - ft.abs()).abs()
    if w is not None:
        ferr = ferr * w
    e = pred - target
    terr = e.abs() if time_loss == "mae" else e.pow(2)
    if reduction == "none":
        return from_bhc((1 - delta) * terr + delta * ferr.mean(dim=1, keepdim=True).expand_as(terr), layout)
    loss = delta * ferr.mean() + (1 - delta) * terr.mean()
    return loss * terr.numel() if reduction == "sum" else loss


class FreLELoss(nn.Module):
    """``nn.Module`` wrapper of :func:`frele_loss`; ``reduction`` is a plain attribute (darts sets it).

    ``forward(pred, target)`` takes ``[B, H, C]`` (or the declared ``layout``); ``[B, H]`` is accepted as one
    channel (darts probes the loss with ``(2, 2)`` tensors under ``reduction='none'``) and the output keeps the
    input's rank.
    """

    def __init__(self, *, delta: float = 0.3, window: int = 3, eta: float | None = None, time_loss: str = "mae",
                 keep_ratio: float = 1.0, ifr: bool = True, peak_source: str = "target", index_base: int = 1,
                 weight_mode: str = "index_dc1", window_mode: str = "symmetric", freq_metric: str = "complex",
                 fft_norm: str = "backward", reduction: str = "mean", layout: str = "BHC",
                 horizon: int | None = None) -> None:
        super().__init__()
        self.delta, self.window, self.eta, self.time_loss = delta, window, eta, time_loss
        self.keep_ratio, self.ifr, self.peak_source, self.index_base = keep_ratio, ifr, peak_source, index_base
        self.weight_mode, self.window_mode, self.freq_metric = weight_mode, window_mode, freq_metric
        self.fft_norm, self.reduction, self.layout, self.horizon = fft_norm, reduction, layout, horizon
        zeros = probe(layout, horizon)
        frele_loss(zeros, zeros, **self._kwargs())  # validate now, not mid-training

    def _kwargs(self) -> dict:
        names = ("delta", "window", "eta", "time_loss", "keep_ratio", "ifr", "peak_source", "index_base",
                 "weight_mode", "window_mode", "freq_metric", "fft_norm", "reduction", "layout", "horizon")
        return {n: getattr(self, n) for n in names}

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        two_d = isinstance(pred, torch.Tensor) and pred.dim() == 2
        axis = -1 if self.layout == "BHC" else 1  # where the one channel goes
        if two_d:
            pred, target = pred.unsqueeze(axis), target.unsqueeze(axis)
        out = frele_loss(pred, target, **self._kwargs())
        return out.squeeze(axis) if two_d and self.reduction == "none" else out

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._kwargs().items())


LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

LOSSES: dict[str, LossFn] = {
    "mse": mse_loss,
    "mae": mae_loss,
    "freq": efr_loss,  # the frequency term alone (no time term): a baseline for what the spectrum adds
    "fredf": fredf_loss,
    # partials, not lambdas: a loss must pickle (ray / multiprocessing tuners ship it to workers)
    "efr": functools.partial(frele_loss, ifr=False),
    "frele": frele_loss,
    "frele_ortho": functools.partial(frele_loss, fft_norm="ortho"),
    "frele_amp": functools.partial(frele_loss, freq_metric="amplitude"),
    "frele_mse": functools.partial(frele_loss, time_loss="mse"),
}


def get_loss(name: str, **options: object) -> LossFn:
    """A named loss ``(pred, target) -> scalar``; every name accepts ``layout=`` and ``horizon=``, ``'frele'``
    also the other :func:`frele_loss` options.

    Names: ``mse``, ``mae``, ``freq`` (the frequency L1 term alone), ``fredf`` (0.8 L_f + 0.2 MSE), ``efr``
    (FreLE without IFR), ``frele``, ``frele_ortho``, ``frele_amp``, ``frele_mse`` (our ablations [I]).
    """
    check_choice("loss", name, LOSSES)
    if not options:
        return LOSSES[name]
    other = sorted(set(options) - {"layout", "horizon"})
    if other and name != "frele":
        raise ValueError(f"loss options {other} are only accepted for 'frele' (every loss takes layout= and "
                         f"horizon=), got loss={name!r}")
    fn = functools.partial(LOSSES[name], **options)
    zeros = probe(options.get("layout", "BHC"), options.get("horizon"))
    fn(zeros, zeros)  # validate the options now
    return fn
