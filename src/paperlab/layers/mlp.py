"""SwiGLU feed-forward block (Shazeer 2020, "GLU Variants Improve Transformer"), as in Llama / GDN / KLA."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from paperlab._validate import check_int

__all__ = ["SwiGLU"]


class SwiGLU(nn.Module):
    """``down(SiLU(gate(x)) * up(x))``, all projections bias-free.

    Args:
        d_model: input and output width ``D``.
        hidden: inner width (KLA's 0.4B model, arXiv 2605.08587, uses 6144 for d=1536, i.e. 4 x D).
    """

    def __init__(self, d_model: int, hidden: int) -> None:
        super().__init__()
        check_int("d_model", d_model, minimum=1)
        check_int("hidden", hidden, minimum=1)
        self.gate_proj = nn.Linear(d_model, hidden, bias=False)
        self.up_proj = nn.Linear(d_model, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [..., D] -> [..., D]``."""
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
