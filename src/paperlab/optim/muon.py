"""Muon (K. Jordan, 2024), our fp32 implementation: Newton-Schulz-orthogonalized Nesterov momentum.

``m <- beta m + (1 - beta) g``; ``u = (1 - beta) g + beta m``; ``O = NS5(u)`` with
(a, b, c) = (3.4445, -4.7750, 2.0315); ``W <- W - lr (max(1, m/n)^0.5 O + wd W)``. Cost: 5 x 3 matmuls.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from paperlab.optim._base import KindOptimizer
from paperlab.optim._kinds import check_muon_group, muon_param_update

__all__ = ["Muon"]


class Muon(KindOptimizer):
    """Muon for hidden matrices (``ndim >= 2``; conv kernels viewed as ``[C_out, rest]``).

    Args:
        params: parameters or param groups; every parameter must have ``ndim >= 2``.
        lr: spectral step size (0.02).
        momentum: the EMA coefficient ``beta`` in ``[0, 1)`` (0.95; torch's and KellerJordan/Muon's name).
        weight_decay: decoupled decay (0).
        nesterov: orthogonalize ``(1 - beta) g + beta m`` (True) or ``m``.
        ns_steps: Newton-Schulz iterations (5).
        eps: added to the Frobenius norm before the iteration (1e-7).
        row_dim: 0 or 1, as in :class:`~paperlab.optim.Nora`.
        master_weights: as in :class:`~paperlab.optim.Nora` (fp32 master copy of fp16/bf16 parameters).
        beta: deprecated alias of ``momentum`` (FutureWarning).
    """

    _kind = "muon"
    update_param = staticmethod(muon_param_update)
    check_group = staticmethod(check_muon_group)

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.02,
        momentum: float = 0.95,
        weight_decay: float = 0.0,
        *,
        nesterov: bool = True,
        ns_steps: int = 5,
        eps: float = 1e-7,
        row_dim: int = 0,
        master_weights: bool = False,
        beta: float | None = None,
    ) -> None:
        defaults = {"kind": "muon", "lr": lr, "momentum": self._momentum(momentum, beta),
                    "weight_decay": weight_decay, "nesterov": nesterov, "ns_steps": ns_steps, "eps": eps,
                    "row_dim": row_dim, "master_weights": master_weights}
        super().__init__(params, defaults)
