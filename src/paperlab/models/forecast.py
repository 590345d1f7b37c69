"""Long-term forecasting backbones small enough for 2 CPU cores; one contract ``forward(x [B, L, C]) -> [B, H, C]``.

- :class:`DLinear` (Zeng et al. 2023): moving-average decomposition (kernel 25), one linear map L -> H per part,
  shared across channels, no RevIN (as published).
- :class:`RLinear` (Li et al. 2023): RevIN + one shared linear map.
- :class:`PatchTST` small (Nie et al. 2023): RevIN, channel-independent patches (16, stride 8), 2 encoder layers,
  d_model 64, 4 heads, d_ff 128. LayerNorm replaces the original BatchNorm [I, simpler and batch-size free].
- :class:`ITransformer` small (Liu et al. 2024): series normalisation, one token per variate (Linear L -> d),
  2 layers, d_model 128, 8 heads, d_ff 128, dropout 0.1, no time-mark tokens.

Sizes are our small choices for the FreLE experiments (arXiv 2510.25800); training lives in
:mod:`paperlab.models.forecast_train`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from paperlab._validate import check_choice, check_int

__all__ = ["FORECASTERS", "DLinear", "ITransformer", "PatchTST", "RLinear", "RevIN", "build_forecaster"]


class RevIN(nn.Module):
    """Reversible instance normalisation (Kim et al. 2022) over time, per series.

    ``forward(x [B, L, C], 'norm')`` stores the mean/std of each series and returns the normalised input;
    ``forward(y [B, H, C], 'denorm')`` undoes it (the affine part first).
    """

    def __init__(self, channels: int, *, eps: float = 1e-5, affine: bool = True) -> None:
        super().__init__()
        self.eps, self.affine = eps, affine
        if affine:
            self.weight = nn.Parameter(torch.ones(channels))
            self.bias = nn.Parameter(torch.zeros(channels))
        self._mean: torch.Tensor | None = None
        self._std: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, mode: str) -> torch.Tensor:
        if mode == "norm":
            self._mean = x.mean(dim=1, keepdim=True).detach()
            self._std = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + self.eps).detach()
            x = (x - self._mean) / self._std
            return x * self.weight + self.bias if self.affine else x
        check_choice("mode", mode, ("norm", "denorm"))
        if self._mean is None or self._std is None:
            raise RuntimeError("RevIN 'denorm' called before 'norm'")
        if self.affine:
            x = (x - self.bias) / (self.weight + self.eps * self.eps)
        return x * self._std + self._mean


class _Forecaster(nn.Module):
    """Shared input check: ``x`` must be ``[B, lookback, channels]``."""

    def __init__(self, lookback: int, horizon: int, channels: int) -> None:
        super().__init__()
        self.lookback = check_int("lookback", lookback, minimum=1)
        self.horizon = check_int("horizon", horizon, minimum=1)
        self.channels = check_int("channels", channels, minimum=1)

    def _check(self, x: torch.Tensor) -> None:
        if x.dim() != 3 or x.shape[1] != self.lookback or x.shape[2] != self.channels:
            raise ValueError(f"{type(self).__name__} expects x [B, {self.lookback}, {self.channels}], "
                             f"got shape {tuple(x.shape)}")


class DLinear(_Forecaster):
    """DLinear: ``x = trend + seasonal`` (moving average, replicate padding); one Linear(L, H) per part."""

    def __init__(self, lookback: int, horizon: int, channels: int, *, kernel: int = 25) -> None:
        super().__init__(lookback, horizon, channels)
        self.kernel = check_int("kernel", kernel, minimum=1)
        self.pool = nn.AvgPool1d(kernel, stride=1)
        self.seasonal = nn.Linear(lookback, horizon)
        self.trend = nn.Linear(lookback, horizon)
        with torch.no_grad():  # the published initialisation: an average of the window
            self.seasonal.weight.fill_(1.0 / lookback)
            self.trend.weight.fill_(1.0 / lookback)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        front = x[:, :1].expand(-1, (self.kernel - 1) // 2, -1)
        back = x[:, -1:].expand(-1, self.kernel // 2, -1)
        trend = self.pool(torch.cat([front, x, back], dim=1).transpose(1, 2))  # [B, C, L]
        seasonal = x.transpose(1, 2) - trend
        return (self.seasonal(seasonal) + self.trend(trend)).transpose(1, 2)


class RLinear(_Forecaster):
    """RLinear: RevIN, then one Linear(L, H) shared across channels."""

    def __init__(self, lookback: int, horizon: int, channels: int) -> None:
        super().__init__(lookback, horizon, channels)
        self.revin = RevIN(channels)
        self.linear = nn.Linear(lookback, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        z = self.revin(x, "norm")
        return self.revin(self.linear(z.transpose(1, 2)).transpose(1, 2), "denorm")


def _encoder(d_model: int, heads: int, d_ff: int, layers: int, dropout: float) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout, activation="gelu", batch_first=True)
    return nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)


class PatchTST(_Forecaster):
    """Small PatchTST: RevIN, channel-independent patches, Transformer encoder, flatten head."""

    def __init__(self, lookback: int, horizon: int, channels: int, *, patch: int = 16, stride: int = 8,
                 d_model: int = 64, heads: int = 4, d_ff: int = 128, layers: int = 2, dropout: float = 0.1) -> None:
        super().__init__(lookback, horizon, channels)
        self.patch, self.stride = check_int("patch", patch, minimum=1), check_int("stride", stride, minimum=1)
        if patch > lookback + stride:
            raise ValueError(f"patch must be <= lookback + stride ({lookback + stride}), got {patch}")
        self.n_patches = (lookback + stride - patch) // stride + 1  # the end is padded by `stride` (replicate)
        self.revin = RevIN(channels)
        self.embed = nn.Linear(patch, d_model)
        self.pos = nn.Parameter(torch.randn(self.n_patches, d_model) * 0.02)
        self.drop = nn.Dropout(dropout)
        self.encoder = _encoder(d_model, heads, d_ff, layers, dropout)
        self.head = nn.Linear(self.n_patches * d_model, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        b, _, c = x.shape
        z = self.revin(x, "norm").transpose(1, 2)  # [B, C, L]
        z = torch.cat([z, z[:, :, -1:].expand(-1, -1, self.stride)], dim=2)
        z = z.unfold(2, self.patch, self.stride).reshape(b * c, self.n_patches, self.patch)
        z = self.encoder(self.drop(self.embed(z) + self.pos))
        y = self.head(z.reshape(b, c, -1)).transpose(1, 2)  # [B, H, C]
        return self.revin(y, "denorm")


class ITransformer(_Forecaster):
    """Small iTransformer: series-normalised variates become tokens; attention mixes channels."""

    def __init__(self, lookback: int, horizon: int, channels: int, *, d_model: int = 128, heads: int = 8,
                 d_ff: int = 128, layers: int = 2, dropout: float = 0.1) -> None:
        super().__init__(lookback, horizon, channels)
        self.norm = RevIN(channels, affine=False)
        self.embed = nn.Linear(lookback, d_model)
        self.drop = nn.Dropout(dropout)
        self.encoder = _encoder(d_model, heads, d_ff, layers, dropout)
        self.project = nn.Linear(d_model, horizon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        z = self.norm(x, "norm").transpose(1, 2)  # [B, C, L]: one token per variate
        y = self.project(self.encoder(self.drop(self.embed(z)))).transpose(1, 2)
        return self.norm(y, "denorm")


FORECASTERS: dict[str, Callable[..., _Forecaster]] = {
    "dlinear": DLinear,
    "rlinear": RLinear,
    "patchtst": PatchTST,
    "itransformer": ITransformer,
}


def build_forecaster(name: str, *, lookback: int, horizon: int, channels: int, seed: int = 0) -> nn.Module:
    """A seeded backbone by name (``dlinear``, ``rlinear``, ``patchtst``, ``itransformer``) at the sizes above.

    The seed drives the initialisation only, inside ``torch.random.fork_rng`` (the global RNG is untouched).
    """
    check_choice("model", name, FORECASTERS)
    check_int("seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return FORECASTERS[name](lookback, horizon, channels)
