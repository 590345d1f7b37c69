"""Per-kind hyperparameter defaults, validation and in-place steps shared by every optimizer class.

A param group's ``"kind"`` (``"nora"``, ``"rmnp"``, ``"muon"`` or ``"adamw"``) selects its rule, so one
optimizer object can step hidden matrices and everything else (see :mod:`paperlab.optim.groups`).
Each step calls the pure function from :mod:`paperlab.optim.functional`, stores the returned state and
applies the direction in place with the same operations as :func:`~paperlab.optim.functional.apply_update`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from paperlab._validate import check_choice, check_in_range, check_int, check_positive
from paperlab.optim import functional as F

__all__ = ["KIND_DEFAULTS", "MATRIX_KINDS", "step_param", "validate_group"]

MATRIX_KINDS = ("nora", "rmnp", "muon")
EPS_MODES = ("clamp", "add")

KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    "nora": {"lr": 0.005, "beta": 0.95, "weight_decay": 0.0, "nesterov": False, "shape_scale": "none",
             "eps": 1e-10, "eps_mode": "clamp", "row_dim": 0},
    "rmnp": {"lr": 0.02, "beta": 0.95, "weight_decay": 0.0, "nesterov": False, "shape_scale": "none",
             "eps": 1e-8, "eps_mode": "add", "row_dim": 0},
    "muon": {"lr": 0.02, "beta": 0.95, "weight_decay": 0.0, "nesterov": True, "ns_steps": 5, "eps": 1e-7,
             "row_dim": 0},
    "adamw": {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0},
}


def normalize_shape_scale(value: Any) -> str:
    """``False``/``True`` mean ``"none"``/``"muon"``; strings must be one of ``SHAPE_SCALES``."""
    if isinstance(value, bool):
        return "muon" if value else "none"
    return check_choice("shape_scale", value, F.SHAPE_SCALES)


def _check_lr(lr: Any) -> None:
    if isinstance(lr, Tensor):
        lr = float(lr)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        raise TypeError(f"lr must be a number, got {type(lr).__name__} {lr!r}")
    if not math.isfinite(lr) or lr < 0:
        raise ValueError(f"lr must be a finite number >= 0, got {lr!r}")


def validate_group(kind: str, group: dict[str, Any], *, index: int, owner: str) -> None:
    """Check one param group's hyperparameters and parameter shapes; raise ValueError/TypeError naming them."""
    check_choice("kind", kind, KIND_DEFAULTS)
    _check_lr(group["lr"])
    check_positive("weight_decay", group["weight_decay"], allow_zero=True)
    check_positive("eps", group["eps"], allow_zero=True)
    if kind == "adamw":
        betas = group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        for name, b in zip(("betas[0]", "betas[1]"), betas, strict=True):
            check_in_range(name, b, 0.0, 1.0, high_open=True)
        return
    check_in_range("beta", group["beta"], 0.0, 1.0, high_open=True)
    if not isinstance(group["nesterov"], bool):
        raise TypeError(f"nesterov must be a bool, got {group['nesterov']!r}")
    if kind == "muon":
        check_int("ns_steps", group["ns_steps"], minimum=0)
    else:
        group["shape_scale"] = normalize_shape_scale(group["shape_scale"])
        check_choice("eps_mode", group["eps_mode"], EPS_MODES)
    check_choice("row_dim", group["row_dim"], (0, 1))
    for p in group["params"]:
        if p.ndim < 2 or (group["row_dim"] == 1 and p.ndim != 2):
            need = "exactly 2 dims for row_dim=1" if group["row_dim"] == 1 else "ndim >= 2"
            raise ValueError(
                f"{owner} only updates matrices ({need}); param group {index} has a parameter of shape "
                f"{tuple(p.shape)}. Route vectors, scalars, norms, biases, embeddings and the LM head to AdamW: "
                "use paperlab.optim.make_optimizer(model, ...) or split_params(model).")
        if not p.is_floating_point():
            raise TypeError(f"{owner} needs floating-point parameters, got dtype {p.dtype} for shape "
                            f"{tuple(p.shape)}")


def _muon_direction(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> Tensor:
    if "momentum_buffer" not in state:
        state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)
    buf = state["momentum_buffer"]
    common = {"beta": group["beta"], "nesterov": group["nesterov"], "eps": group["eps"],
              "row_dim": group["row_dim"]}
    d, new_buf = F.muon_update(grad, buf, ns_steps=group["ns_steps"], **common)
    state["momentum_buffer"] = new_buf
    return d


def _adamw_direction(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> Tensor:
    if "exp_avg" not in state:
        state["step"] = 0
        state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
    state["step"] += 1
    d, state["exp_avg"], state["exp_avg_sq"] = F.adamw_update(
        grad, state["exp_avg"], state["exp_avg_sq"], step=state["step"], betas=tuple(group["betas"]),
        eps=group["eps"])
    return d


def _row_kind_step(kind: str, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    if "momentum_buffer" not in state:
        state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
    buf = state["momentum_buffer"]
    hp = {"lr": float(group["lr"]), "weight_decay": group["weight_decay"], "beta": group["beta"],
          "nesterov": group["nesterov"], "shape_scale": group["shape_scale"], "eps": group["eps"],
          "eps_mode": group["eps_mode"], "row_dim": group["row_dim"]}
    if p.is_contiguous() and buf.is_contiguous():
        F.row_step_(p, grad, buf, kind=kind, **hp)
        return
    pure = F.nora_step if kind == "nora" else F.rmnp_step
    new_p, state["momentum_buffer"] = pure(p, grad, buf, **hp)
    p.copy_(new_p)


def step_param(kind: str, p: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """Update one parameter in place (its gradient is read, never written)."""
    grad = p.grad
    if grad.is_sparse:
        raise RuntimeError(f"{kind} does not support sparse gradients (parameter shape {tuple(p.shape)})")
    if kind in ("nora", "rmnp"):
        _row_kind_step(kind, p, grad, state, group)
        return
    adamw = kind == "adamw"
    d = _adamw_direction(p, grad, state, group) if adamw else _muon_direction(p, grad, state, group)
    lr, wd = float(group["lr"]), group["weight_decay"]
    if wd != 0.0:
        p.mul_(1.0 - lr * wd)
    p.add_(d, alpha=-lr)
