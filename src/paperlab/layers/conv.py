"""Causal depthwise short convolution with a rolling cache (the q/k/v "short conv" of GDN and KLA)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from paperlab.layers.varlen import PackedSeqs

__all__ = ["ShortConv"]

_ACTIVATIONS = (None, "silu")


class ShortConv(nn.Module):
    """Depthwise causal conv over time, no bias, optional SiLU, with a ``kernel_size - 1`` token cache.

    Padded tokens (``mask == 0``) are skipped: the window of each real token holds the previous real tokens
    (or the cache), so a left-padded batch equals per-sequence runs and a padded decode step keeps the cache.
    Packed sequences (``cu_seqlens``) get a zero window at each start: no token sees the previous sequence.

    Args:
        channels: number of channels C (each gets its own filter).
        kernel_size: filter length (default 4); the cache holds ``kernel_size - 1`` inputs.
        activation: ``"silu"`` or None.
    """

    def __init__(self, channels: int, kernel_size: int = 4, *, activation: str | None = "silu") -> None:
        super().__init__()
        for name, val in (("channels", channels), ("kernel_size", kernel_size)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"{name} must be an int >= 1, got {val!r}")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation={activation!r} is not valid; choose one of {list(_ACTIVATIONS)}")
        self.channels, self.kernel_size, self.activation = channels, kernel_size, activation
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel_size))
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)  # nn.Conv1d's default init

    def empty_cache(self, batch: int, *, dtype: torch.dtype | None = None,
                    device: torch.device | None = None) -> torch.Tensor:
        """Zeros ``[batch, C, kernel_size - 1]`` (the state before the first token)."""
        return torch.zeros(batch, self.channels, self.kernel_size - 1, dtype=dtype or self.weight.dtype,
                           device=device or self.weight.device)

    def forward(
        self, x: torch.Tensor, *, cache: torch.Tensor | None = None, mask: torch.Tensor | None = None,
        cu_seqlens: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``x [B, T, C]``, ``cache [B, C, kernel_size - 1]``, ``mask [B, T]`` -> ``(y [B, T, C], cache)``.

        With ``cu_seqlens`` (``[N + 1]`` cumulative starts, B = 1; no cache or mask) each packed sequence is
        convolved alone and the returned cache is ``[N, C, kernel_size - 1]``, one per sequence.
        """
        B, T, C = x.shape
        if self.channels != C:
            raise ValueError(f"x must be [B, T, {self.channels}], got {tuple(x.shape)}")
        if cu_seqlens is not None:
            if cache is not None or mask is not None:
                raise ValueError("ShortConv: cu_seqlens starts every packed sequence from a zero window; it cannot "
                                 "be combined with a cache or a mask")
            return self.forward_packed(x, PackedSeqs.from_cu_seqlens(cu_seqlens, B, T, x.device))
        W = self.kernel_size - 1
        if cache is None:
            cache = self.empty_cache(B, dtype=x.dtype, device=x.device)
        elif cache.shape != (B, C, W):
            raise ValueError(f"cache must be [B, C, W] = {(B, C, W)}, got {tuple(cache.shape)}")
        xt = x.transpose(1, 2)
        if mask is not None and not bool(mask.all()):
            y, cache = self._masked(xt, cache.to(x.dtype), mask.to(torch.bool))
        else:
            z = torch.cat([cache.to(x.dtype), xt], dim=-1)
            y = self._conv(z)
            cache = z[..., z.shape[-1] - W:]
        y = y.transpose(1, 2)
        return (F.silu(y) if self.activation == "silu" else y), cache

    def forward_packed(self, x: torch.Tensor, packed: PackedSeqs) -> tuple[torch.Tensor, torch.Tensor]:
        """``x [1, T, C]`` holding the sequences of ``packed`` -> ``(y [1, T, C], cache [N, C, kernel_size - 1])``.

        Each lag-d term is dropped for the first d steps of a sequence, as a zero cache gives per sequence."""
        W = self.kernel_size - 1
        T = x.shape[1]
        z = F.pad(x.transpose(1, 2), (W, 0))  # [1, C, W + T]
        w = self.weight[:, 0].to(z.dtype)  # [C, kernel_size]
        # tap j reaches back W - j steps: masked for the first W - j steps of each sequence (as a zero cache
        # gives when it runs alone); the taps are summed in _conv's order
        keep = [(packed.pos >= W - j).to(z.dtype) for j in range(W)]
        y = z[..., :T] * w[:, :1]
        if W:
            y = y * keep[0]
        for j in range(1, self.kernel_size):
            term = z[..., j:j + T] * w[:, j:j + 1]
            y = y + (term * keep[j] if j < W else term)
        idx, valid = packed.last_window(W)  # [N, W] steps of x
        cache = z[0][:, idx + W] * valid.to(z.dtype)  # [C, N, W]
        y = y.transpose(1, 2)
        return (F.silu(y) if self.activation == "silu" else y), cache.transpose(0, 1).contiguous()

    def _conv(self, z: torch.Tensor) -> torch.Tensor:
        """Valid depthwise conv of ``z [B, C, W + T]`` -> ``[B, C, T]`` as kernel_size shifted multiply-adds
        (exact, and far faster than ``F.conv1d(groups=C)`` on CPU for short filters, fp64 especially)."""
        W = self.kernel_size - 1
        T = z.shape[-1] - W
        w = self.weight[:, 0].to(z.dtype)  # [C, kernel_size]
        y = z[..., :T] * w[:, :1]
        for j in range(1, self.kernel_size):
            y = y + z[..., j:j + T] * w[:, j:j + 1]
        return y

    def _masked(
        self, xt: torch.Tensor, cache: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # Compact each row so real tokens sit right after the cache, convolve, then scatter back.
        B, C, T = xt.shape
        W = self.kernel_size - 1
        z = torch.cat([cache, xt * mask[:, None, :]], dim=-1)
        valid = torch.cat([mask.new_ones(B, W), mask], dim=-1)
        order = torch.argsort((~valid).to(torch.int8), dim=-1, stable=True)  # real tokens first, in order
        zc = z.gather(-1, order[:, None, :].expand(B, C, W + T))
        yc = self._conv(zc)  # output j belongs to compacted position j + W
        y = torch.empty_like(yc).scatter_(-1, (order[:, None, W:] - W).expand(B, C, T), yc)
        n = valid.sum(-1)  # >= W: the cache always counts
        idx = n[:, None] - W + torch.arange(W, device=xt.device)
        return y, zc.gather(-1, idx[:, None, :].expand(B, C, W))

    def extra_repr(self) -> str:
        return f"{self.channels}, kernel_size={self.kernel_size}, activation={self.activation}"
