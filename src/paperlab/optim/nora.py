"""Nora: Normalized Orthogonal Row Alignment (arXiv 2605.03769).

Per matrix ``theta [m, n]`` (rows = output neurons), with gradient ``g``:

    m     <- beta m + (1 - beta) g                         EMA momentum (beta: the option ``momentum``)
    v_i    = m_i - <m_i, theta_i> theta_i / ||theta_i||^2   row-wise tangent projection
    d_i    = v_i / ||v_i||                                  row normalization
    theta <- theta - lr (s d + wd theta)                    decoupled weight decay (s = 1 in the paper)

``Nora(params, lr=..., weight_decay=...)`` is exactly the paper's four equations. The authors' released code
adds a Nesterov look-ahead (normalize ``(1 - beta) g + beta m``) and the shape factor
``s = max(1, sqrt(m / n))``: ``Nora(..., nesterov=True, shape_scale="muon")`` or
``Nora.from_preset(params, "official", ...)``. Consequence (derived, tested): row norms follow
``r^2 <- (1 - lr wd)^2 r^2 + lr^2 s^2`` for any gradients.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from paperlab.optim._base import KindOptimizer
from paperlab.optim._kinds import check_row_group, nora_param_update, nora_params_update, normalize_shape_scale

__all__ = ["Nora"]


class Nora(KindOptimizer):
    """Nora for hidden matrices (``ndim >= 2``); route other parameters to AdamW (``make_optimizer``).

    Args:
        params: parameters or param groups; every parameter must have ``ndim >= 2``.
        lr: step size ``lr`` (per-row step norm; the paper's default 0.005).
        momentum: the EMA coefficient ``beta`` in ``[0, 1)`` (0.95); torch's name, so LR schedulers with
            ``cycle_momentum=True`` (``OneCycleLR``, ``CyclicLR``) drive it.
        weight_decay: decoupled decay ``wd`` (0; the authors' factory uses 0.1).
        nesterov: normalize the look-ahead ``(1 - beta) g + beta m`` (official code; not in the paper).
        shape_scale: ``False``/``"none"`` (paper), ``True``/``"muon"`` (``max(1, sqrt(m/n))``, official
            code) or ``"rms_adamw"`` (``0.2 sqrt(n)``, our option).
        eps: guards the row norms: ``max(||.||, eps)`` (``eps_mode="clamp"``, official) or ``||.|| + eps``.
        eps_mode: ``"clamp"`` or ``"add"``.
        row_dim: 0 (``[out, in]``, conv kernels viewed as ``[C_out, rest]``) or 1 (2-D ``[in, out]``).
        master_weights: fp16/bf16 parameters keep an fp32 master copy that is stepped and rounded back (as the
            authors' code does; +4 bytes per parameter). Without it they are stepped through a fresh fp32 copy,
            which drops steps below half a unit in the last place (bf16: weight decay at ``lr wd < 2^-9``).
            The state (momentum) of fp16/bf16 parameters is fp32 either way; fp32/fp64 parameters are unaffected.
        foreach: step same-shape matrices together (``torch._foreach_*`` for the elementwise parts, the row
            reductions on a stack; on CPU stacks of at most 2^18 entries). Faster for many small matrices
            (2.4x for 64 of 64x64, 3.6x for 256 of 32x32 at 1 thread), slower from 256x256 on; equal to the
            per-parameter step (tested to 1e-6 in fp32).
        beta: deprecated alias of ``momentum`` (FutureWarning).
    """

    _kind = "nora"
    update_param = staticmethod(nora_param_update)
    update_many = staticmethod(nora_params_update)
    check_group = staticmethod(check_row_group)
    # "paper" is the constructor's defaults (the four equations); "official" the authors' released variant
    PRESETS = {"paper": {}, "official": {"nesterov": True, "shape_scale": "muon"}}

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.005,
        momentum: float = 0.95,
        weight_decay: float = 0.0,
        *,
        nesterov: bool = False,
        shape_scale: bool | str = "none",
        eps: float = 1e-10,
        eps_mode: str = "clamp",
        row_dim: int = 0,
        master_weights: bool = False,
        foreach: bool = False,
        beta: float | None = None,
    ) -> None:
        defaults = {"kind": "nora", "lr": lr, "momentum": self._momentum(momentum, beta),
                    "weight_decay": weight_decay, "nesterov": nesterov,
                    "shape_scale": normalize_shape_scale(shape_scale), "eps": eps, "eps_mode": eps_mode,
                    "row_dim": row_dim, "master_weights": master_weights, "foreach": foreach}
        super().__init__(params, defaults)
