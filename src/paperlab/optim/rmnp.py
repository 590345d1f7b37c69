"""RMNP: row-normalized momentum (arXiv 2603.20527), the baseline Nora adds a projection to.

Paper form (defaults): ``M <- beta M + (1 - beta) G``; ``R_i = M_i / (||M_i|| + eps)``;
``W <- W - lr (s R + wd W)`` with ``s = 1``. The official code (preset ``"official"``) uses a Nesterov
look-ahead, ``F.normalize`` (a clamp) and the shape factor ``max(1, sqrt(m/n))``. Unlike Nora, the update
has a radial component, so row norms depend on the data ("radial jitter").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from paperlab.optim._base import KindOptimizer
from paperlab.optim._kinds import check_row_group, normalize_shape_scale, rmnp_param_update, rmnp_params_update

__all__ = ["RMNP"]


class RMNP(KindOptimizer):
    """Row-normalized momentum for hidden matrices (``ndim >= 2``).

    Args:
        params: parameters or param groups; every parameter must have ``ndim >= 2``.
        lr: step size (0.02, the official default).
        momentum: the EMA coefficient ``beta`` in ``[0, 1)`` (0.95; torch's name).
        weight_decay: decoupled decay (0).
        nesterov, shape_scale, eps, eps_mode, row_dim, master_weights, foreach: as in
            :class:`~paperlab.optim.Nora`.
        beta: deprecated alias of ``momentum`` (FutureWarning).
    """

    _kind = "rmnp"
    update_param = staticmethod(rmnp_param_update)
    update_many = staticmethod(rmnp_params_update)
    check_group = staticmethod(check_row_group)
    # "paper" is the constructor's defaults; "official" the released code (look-ahead, clamp, shape factor)
    PRESETS = {"paper": {}, "official": {"nesterov": True, "shape_scale": "muon", "eps": 1e-12, "eps_mode": "clamp"}}

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.02,
        momentum: float = 0.95,
        weight_decay: float = 0.0,
        *,
        nesterov: bool = False,
        shape_scale: bool | str = "none",
        eps: float = 1e-8,
        eps_mode: str = "add",
        row_dim: int = 0,
        master_weights: bool = False,
        foreach: bool = False,
        beta: float | None = None,
    ) -> None:
        defaults = {"kind": "rmnp", "lr": lr, "momentum": self._momentum(momentum, beta),
                    "weight_decay": weight_decay, "nesterov": nesterov,
                    "shape_scale": normalize_shape_scale(shape_scale), "eps": eps, "eps_mode": eps_mode,
                    "row_dim": row_dim, "master_weights": master_weights, "foreach": foreach}
        super().__init__(params, defaults)
