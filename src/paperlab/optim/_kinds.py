"""The in-place per-parameter updates and the group checks of the built-in optimizers (no name lists here).

Every update has the signature ``update(param, grad, state, group) -> None``: it reads ``grad`` (never writes
it), keeps its buffers in ``state`` (the optimizer's ``self.state[param]``) and updates ``param`` in place
with the same operations as :func:`~paperlab.optim.functional.apply_update`, calling the pure functions of
:mod:`paperlab.optim.functional`. A check ``check(group) -> None`` validates one param group's
kind-specific hyperparameters (raising ValueError/TypeError naming them) and may normalize them in place.
Each class names its update and check (``Nora.update_param``); :data:`paperlab.optim.registry.OPTIMIZERS`
maps names to classes, AdamW's update included. The loop (:class:`~paperlab.optim.KindOptimizer`) hands
fp16/bf16 parameters to these as fp32 tensors.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from paperlab._validate import check_choice, check_in_range, check_int, check_positive
from paperlab.optim import functional as F

__all__ = [
    "EPS_MODES",
    "adamw_param_update",
    "check_adamw_group",
    "check_muon_group",
    "check_row_group",
    "muon_param_update",
    "normalize_shape_scale",
    "nora_param_update",
    "rmnp_param_update",
]

EPS_MODES = ("clamp", "add")


def normalize_shape_scale(value: Any) -> str:
    """``False``/``True`` mean ``"none"``/``"muon"``; strings must be one of ``SHAPE_SCALES``."""
    if isinstance(value, bool):
        return "muon" if value else "none"
    return check_choice("shape_scale", value, F.SHAPE_SCALES)


def _check_bool(group: dict[str, Any], key: str) -> None:
    if not isinstance(group[key], bool):
        raise TypeError(f"{key} must be a bool, got {group[key]!r}")


def _check_momentum(group: dict[str, Any]) -> None:
    check_positive("eps", group["eps"], allow_zero=True)
    check_in_range("beta", group["beta"], 0.0, 1.0, high_open=True)
    for key in ("nesterov", "master_weights"):
        _check_bool(group, key)


def check_row_group(group: dict[str, Any]) -> None:
    """Nora/RMNP: ``eps``, ``beta``, ``nesterov``, ``shape_scale`` (normalized to a string), ``eps_mode``,
    ``master_weights``."""
    _check_momentum(group)
    group["shape_scale"] = normalize_shape_scale(group["shape_scale"])
    check_choice("eps_mode", group["eps_mode"], EPS_MODES)


def check_muon_group(group: dict[str, Any]) -> None:
    """Muon: ``eps``, ``beta``, ``nesterov``, ``ns_steps``, ``master_weights``."""
    _check_momentum(group)
    check_int("ns_steps", group["ns_steps"], minimum=0)


def check_adamw_group(group: dict[str, Any]) -> None:
    """AdamW: ``eps``, the pair ``betas`` and ``master_weights``."""
    check_positive("eps", group["eps"], allow_zero=True)
    _check_bool(group, "master_weights")
    betas = group["betas"]
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    for name, b in zip(("betas[0]", "betas[1]"), betas, strict=True):
        check_in_range(name, b, 0.0, 1.0, high_open=True)


def _apply(p: Tensor, direction: Tensor, group: dict[str, Any]) -> None:
    """``p <- p (1 - lr wd) - lr direction`` in place (the ops of ``functional.apply_update``)."""
    lr, wd = float(group["lr"]), group["weight_decay"]
    if wd != 0.0:
        p.mul_(1.0 - lr * wd)
    p.add_(direction, alpha=-lr)


def _momentum_buffer(p: Tensor, state: dict[str, Any]) -> Tensor:
    if "momentum_buffer" not in state:
        state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
    return state["momentum_buffer"]


def _row_hp(group: dict[str, Any]) -> dict[str, Any]:
    """The functional row step's hyperparameters of ``group``."""
    return {"lr": float(group["lr"]), "weight_decay": group["weight_decay"], "beta": group["beta"],
            "nesterov": group["nesterov"], "eps": group["eps"], "eps_mode": group["eps_mode"]}


def _row_update(kind: str, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    buf = _momentum_buffer(p, state)
    hp = {**_row_hp(group), "shape_scale": group["shape_scale"], "row_dim": group["row_dim"]}
    if p.is_contiguous() and buf.is_contiguous():
        F.row_step_(p, grad, buf, kind=kind, **hp)
        return
    # the fused in-place kernels need contiguous rows; the pure form gives the same update as new tensors
    pure = F.nora_step if kind == "nora" else F.rmnp_step
    new_p, state["momentum_buffer"] = pure(p, grad, buf, **hp)
    p.copy_(new_p)


def nora_param_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One fused Nora step of ``p`` (:func:`~paperlab.optim.functional.nora_step`, in place)."""
    _row_update("nora", p, grad, state, group)


def rmnp_param_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One fused RMNP step of ``p`` (:func:`~paperlab.optim.functional.rmnp_step`, in place)."""
    _row_update("rmnp", p, grad, state, group)


def muon_param_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One Muon step of ``p``: :func:`~paperlab.optim.functional.muon_update`, then decay and step."""
    if "momentum_buffer" not in state:
        state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)
    d, state["momentum_buffer"] = F.muon_update(
        grad, state["momentum_buffer"], beta=group["beta"], nesterov=group["nesterov"], ns_steps=group["ns_steps"],
        eps=group["eps"], row_dim=group["row_dim"])
    _apply(p, d, group)


def adamw_param_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One AdamW step of ``p`` (as ``torch.optim.AdamW``): bias-corrected direction, decay and step."""
    if "exp_avg" not in state:
        state["step"] = 0
        state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
    state["step"] += 1
    d, state["exp_avg"], state["exp_avg_sq"] = F.adamw_update(
        grad, state["exp_avg"], state["exp_avg_sq"], step=state["step"], betas=tuple(group["betas"]),
        eps=group["eps"])
    _apply(p, d, group)
