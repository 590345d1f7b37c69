"""RMSNorm and the per-head gated RMSNorm on the delta-rule output (KLA, arXiv 2605.08587, per the authors' code)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GatedRMSNorm", "RMSNorm", "rms_norm"]


def _check_dim_eps(dim: int, eps: float) -> None:
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be an int >= 1, got {dim!r}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ValueError(f"eps must be a number > 0, got {eps!r}")


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, *, eps: float) -> torch.Tensor:
    """``x / sqrt(mean(x^2, -1) + eps) * weight``, computed in fp32 (fp64 for fp64 inputs), returned in x's dtype."""
    dtype = torch.promote_types(x.dtype, torch.float32)
    xf = x.to(dtype)
    y = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.to(dtype)
    return y.to(x.dtype)


class RMSNorm(nn.Module):
    """Root-mean-square norm over the last dim with a learnable gain (initialized to 1).

    Args:
        dim: size of the last dim.
        eps: added to the mean square (default 1e-6).
        affine: learn a per-feature gain.
    """

    def __init__(self, dim: int, *, eps: float = 1e-6, affine: bool = True) -> None:
        super().__init__()
        _check_dim_eps(dim, eps)
        self.dim, self.eps = dim, float(eps)
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``[..., dim]`` -> same shape."""
        if x.shape[-1] != self.dim:
            raise ValueError(f"x must end in dim {self.dim}, got shape {tuple(x.shape)}")
        return rms_norm(x, self.weight, eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}"


class GatedRMSNorm(RMSNorm):
    """Per-head output norm of GDN/KLA: ``RMSNorm(o) * SiLU(gate)``; the gain is shared across heads.

    ``forward(o [..., H, dim], gate [..., H, dim]) -> [..., H, dim]``; default eps 1e-5 (as in the KLA authors' code).
    """

    def __init__(self, dim: int, *, eps: float = 1e-5) -> None:
        super().__init__(dim, eps=eps)

    def forward(self, x: torch.Tensor, gate: torch.Tensor | None = None) -> torch.Tensor:
        y = super().forward(x)
        if gate is None:
            return y
        if gate.shape != x.shape:
            raise ValueError(f"gate must have the shape of x, got x={tuple(x.shape)}, gate={tuple(gate.shape)}")
        return y * F.silu(gate)
