"""RMNP: row-normalized momentum (arXiv 2603.20527), the baseline Nora adds a projection to.

Paper form (defaults): ``M <- beta M + (1 - beta) G``; ``R_i = M_i / (||M_i|| + eps)``;
``W <- W - lr (s R + wd W)`` with ``s = 1``. The official code (preset ``"official"``) uses a Nesterov
look-ahead, ``F.normalize`` (a clamp) and the shape factor ``max(1, sqrt(m/n))``. Unlike Nora, the update
has a radial component, so row norms depend on the data ("radial jitter").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from paperlab._validate import check_choice
from paperlab.optim._base import KindOptimizer
from paperlab.optim._kinds import normalize_shape_scale

__all__ = ["RMNP", "RMNP_PRESETS"]

RMNP_PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"nesterov": False, "shape_scale": "none", "eps": 1e-8, "eps_mode": "add"},
    "official": {"nesterov": True, "shape_scale": "muon", "eps": 1e-12, "eps_mode": "clamp"},
}


class RMNP(KindOptimizer):
    """Row-normalized momentum for hidden matrices (``ndim >= 2``).

    Args:
        params: parameters or param groups; every parameter must have ``ndim >= 2``.
        lr: step size (0.02, the official default).
        beta: EMA coefficient in ``[0, 1)`` (0.95).
        weight_decay: decoupled decay (0).
        nesterov, shape_scale, eps, eps_mode, row_dim: as in :class:`~paperlab.optim.Nora`.
    """

    _kind = "rmnp"

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.02,
        beta: float = 0.95,
        weight_decay: float = 0.0,
        *,
        nesterov: bool = False,
        shape_scale: bool | str = False,
        eps: float = 1e-8,
        eps_mode: str = "add",
        row_dim: int = 0,
    ) -> None:
        defaults = {"kind": "rmnp", "lr": lr, "beta": beta, "weight_decay": weight_decay, "nesterov": nesterov,
                    "shape_scale": normalize_shape_scale(shape_scale), "eps": eps, "eps_mode": eps_mode,
                    "row_dim": row_dim}
        super().__init__(params, defaults)

    @classmethod
    def from_preset(
        cls, params: Iterable[Any], preset: str = "paper", *, lr: float = 0.02, beta: float = 0.95,
        weight_decay: float = 0.0,
    ) -> RMNP:
        """``"paper"`` or ``"official"`` (Nesterov look-ahead, clamp, shape factor)."""
        check_choice("preset", preset, RMNP_PRESETS)
        return cls(params, lr=lr, beta=beta, weight_decay=weight_decay, **RMNP_PRESETS[preset])
