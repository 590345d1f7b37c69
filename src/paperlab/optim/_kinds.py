"""The in-place per-parameter updates and the group checks of the built-in optimizers (no name lists here).

Every update has the signature ``update(param, grad, state, group) -> None``: it reads ``grad`` (never writes
it), keeps its buffers in ``state`` (the optimizer's ``self.state[param]``) and updates ``param`` in place
with the same operations as :func:`~paperlab.optim.functional.apply_update`, calling the pure functions of
:mod:`paperlab.optim.functional`. A check ``check(group) -> None`` validates one param group's
kind-specific hyperparameters (raising ValueError/TypeError naming them) and may normalize them in place.
Each class names its update and check (``Nora.update_param``); :data:`paperlab.optim.registry.OPTIMIZERS`
maps names to classes, AdamW's update included. A multi-tensor update ``update_many(params, grads, states,
group)`` steps a whole group at once (Nora and RMNP: ``foreach=True``). The loop
(:class:`~paperlab.optim.KindOptimizer`) hands fp16/bf16 parameters to these as fp32 tensors.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from paperlab._validate import check_bool, check_choice, check_in_range, check_int, check_positive
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
    "nora_params_update",
    "rmnp_param_update",
    "rmnp_params_update",
]

EPS_MODES = ("clamp", "add")


def normalize_shape_scale(value: Any) -> str:
    """``False``/``True`` mean ``"none"``/``"muon"``; strings must be one of ``SHAPE_SCALES``."""
    if isinstance(value, bool):
        return "muon" if value else "none"
    return check_choice("shape_scale", value, F.SHAPE_SCALES)


def _check_momentum(group: dict[str, Any]) -> None:
    check_positive("eps", group["eps"], allow_zero=True)
    check_in_range("momentum", group["momentum"], 0.0, 1.0, high_open=True)
    for key in ("nesterov", "master_weights"):
        check_bool(key, group[key])


def check_row_group(group: dict[str, Any]) -> None:
    """Nora/RMNP: ``eps``, ``momentum``, ``nesterov``, ``shape_scale`` (normalized to a string), ``eps_mode``,
    ``master_weights``, ``foreach``."""
    _check_momentum(group)
    check_bool("foreach", group["foreach"])
    group["shape_scale"] = normalize_shape_scale(group["shape_scale"])
    check_choice("eps_mode", group["eps_mode"], EPS_MODES)


def check_muon_group(group: dict[str, Any]) -> None:
    """Muon: ``eps``, ``momentum``, ``nesterov``, ``ns_steps``, ``master_weights``."""
    _check_momentum(group)
    check_int("ns_steps", group["ns_steps"], minimum=0)


def check_adamw_group(group: dict[str, Any]) -> None:
    """AdamW: ``eps``, the pair ``betas`` and ``master_weights``."""
    check_positive("eps", group["eps"], allow_zero=True)
    check_bool("master_weights", group["master_weights"])
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
    """The functional row step's hyperparameters of ``group`` (functional ``beta`` is the group's momentum)."""
    return {"lr": float(group["lr"]), "weight_decay": group["weight_decay"], "beta": group["momentum"],
            "nesterov": group["nesterov"], "eps": group["eps"], "eps_mode": group["eps_mode"]}


def _row_update(kind: str, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    if torch.compiler.is_compiling() and p.device.type == "cpu":
        _row_update_eagerly(kind, p, grad, state, group)
        return
    buf = _momentum_buffer(p, state)
    hp = {**_row_hp(group), "shape_scale": group["shape_scale"], "row_dim": group["row_dim"]}
    if p.is_contiguous() and buf.is_contiguous():
        F.row_step_(p, grad, buf, kind=kind, **hp)
        return
    # the fused in-place kernels need contiguous rows; the pure form gives the same update as new tensors
    pure = F.nora_step if kind == "nora" else F.rmnp_step
    new_p, state["momentum_buffer"] = pure(p, grad, buf, **hp)
    p.copy_(new_p)


# Inductor's C++ backend crashes on a row reduction fused with in-place writes (KeyError 'bufN' in its outer-loop
# fusion, pytorch/pytorch#196570, open in torch 2.13 and 2.14), and which layouts trigger it depends on shapes and
# options. Under torch.compile a CPU row step therefore runs outside the graph (a graph break), with the eager bits.
_EAGER_REASON = "paperlab: the row step of Nora/RMNP on CPU (inductor C++ outer-loop fusion, pytorch#196570)"


@torch.compiler.disable(reason=_EAGER_REASON)
def _row_update_eagerly(kind: str, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    _row_update(kind, p, grad, state, group)


def nora_param_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One fused Nora step of ``p`` (:func:`~paperlab.optim.functional.nora_step`, in place)."""
    _row_update("nora", p, grad, state, group)


def rmnp_param_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One fused RMNP step of ``p`` (:func:`~paperlab.optim.functional.rmnp_step`, in place)."""
    _row_update("rmnp", p, grad, state, group)


# The largest stack of one shape on CPU, in elements (1 MiB of fp32). The row math makes ~10 passes over a stack;
# a stack that fits a core's L2 cache keeps them there. Measured at 1 thread: stacks of 2^18 beat 2^16 and 2^30 for
# 16x16 to 128x128 matrices; at 256x256 (4 per stack) the per-parameter loop is as fast or faster. Other devices
# stack a whole shape.
_CPU_STACK_ELEMENTS = 1 << 18


def _row_update_many(kind: str, params: list[Tensor], grads: list[Tensor], states: list[dict[str, Any]],
                     group: dict[str, Any]) -> None:
    """Parameters of one shape, dtype and device step together: the elementwise parts with ``torch._foreach_*``,
    the row reductions on a ``[B, rows, cols]`` stack; a shape seen once (or non-contiguous) steps alone."""
    if torch.compiler.is_compiling() and params[0].device.type == "cpu":
        _row_update_many_eagerly(kind, params, grads, states, group)
        return
    buckets: dict[tuple[torch.Size, torch.dtype, torch.device], list[int]] = {}
    for i, p in enumerate(params):
        buf = states[i].get("momentum_buffer")
        if p.is_contiguous() and (buf is None or buf.is_contiguous()):
            buckets.setdefault((p.shape, p.dtype, p.device), []).append(i)
        else:  # the stacked step writes through row views of the parameters
            _row_update(kind, p, grads[i], states[i], group)
    for index in buckets.values():
        first = params[index[0]]
        size = max(1, _CPU_STACK_ELEMENTS // first.numel()) if first.device.type == "cpu" else len(index)
        for start in range(0, len(index), size):
            chunk = index[start:start + size]
            if len(chunk) == 1:
                _row_update(kind, params[chunk[0]], grads[chunk[0]], states[chunk[0]], group)
            else:
                _stacked_row_update(kind, [params[i] for i in chunk], [grads[i] for i in chunk],
                                    [_momentum_buffer(params[i], states[i]) for i in chunk], group)


def _stacked_row_update(kind: str, params: list[Tensor], grads: list[Tensor], bufs: list[Tensor],
                        group: dict[str, Any]) -> None:
    """The ops of :func:`~paperlab.optim.functional.row_step_` on same-shape contiguous tensors, batched."""
    lr, wd, beta, row_dim = float(group["lr"]), group["weight_decay"], group["momentum"], group["row_dim"]
    torch._foreach_lerp_(bufs, grads, 1.0 - beta)
    u = torch._foreach_lerp(grads, bufs, beta) if group["nesterov"] else bufs
    rows = [F.as_rows(p, row_dim) for p in params]  # views: the parameters are contiguous
    u_rows = torch.stack([F.as_rows(t, row_dim) for t in u])
    theta = torch.stack(rows) if kind == "nora" else u_rows  # RMNP does not read the weights
    v, inv = F.row_terms(u_rows, theta, kind=kind, eps=group["eps"], eps_mode=group["eps_mode"])
    coef = inv * (-lr * F.shape_factor(v.shape[1], v.shape[2], group["shape_scale"]))
    if wd != 0.0:
        torch._foreach_mul_(rows, 1.0 - lr * wd)
    torch._foreach_addcmul_(rows, list(v.unbind(0)), list(coef.unbind(0)))


@torch.compiler.disable(reason=_EAGER_REASON)
def _row_update_many_eagerly(kind: str, params: list[Tensor], grads: list[Tensor], states: list[dict[str, Any]],
                             group: dict[str, Any]) -> None:
    _row_update_many(kind, params, grads, states, group)


def nora_params_update(params: list[Tensor], grads: list[Tensor], states: list[dict[str, Any]],
                       group: dict[str, Any]) -> None:
    """Nora's multi-tensor step (``foreach=True``): equal to :func:`nora_param_update` on each parameter."""
    _row_update_many("nora", params, grads, states, group)


def rmnp_params_update(params: list[Tensor], grads: list[Tensor], states: list[dict[str, Any]],
                       group: dict[str, Any]) -> None:
    """RMNP's multi-tensor step (``foreach=True``): equal to :func:`rmnp_param_update` on each parameter."""
    _row_update_many("rmnp", params, grads, states, group)


def muon_param_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One Muon step of ``p``: :func:`~paperlab.optim.functional.muon_update`, then decay and step."""
    if "momentum_buffer" not in state:
        state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)
    d, state["momentum_buffer"] = F.muon_update(
        grad, state["momentum_buffer"], beta=group["momentum"], nesterov=group["nesterov"], ns_steps=group["ns_steps"],
        eps=group["eps"], row_dim=group["row_dim"])
    _apply(p, d, group)


def adamw_param_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One AdamW step of ``p`` (as ``torch.optim.AdamW``): bias-corrected direction, decay and step.

    A complex parameter is stepped as its real and imaginary parts (``torch.view_as_real``), as torch does, so
    the second moment is per part, never the complex square ``g * g``.
    """
    if p.is_complex():
        p, grad = torch.view_as_real(p), torch.view_as_real(grad)
    if "exp_avg" not in state:
        state["step"] = 0
        state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
    state["step"] += 1
    d, state["exp_avg"], state["exp_avg_sq"] = F.adamw_update(
        grad, state["exp_avg"], state["exp_avg_sq"], step=state["step"], betas=tuple(group["betas"]),
        eps=group["eps"])
    _apply(p, d, group)
