"""Pure update rules for the matrix optimizers (Nora, RMNP, Muon) and AdamW.

Every function here returns new tensors and never mutates its inputs (gradients included); the optimizer
classes in this package only store the returned state and apply the returned direction with
:func:`apply_update`. Matrices are seen row-wise: rows are output neurons (``nn.Linear`` layout,
``[out, in]``); a conv kernel ``[C_out, C_in, k...]`` is viewed as ``[C_out, C_in * prod(k)]``; a
``[in, out]`` layout (HF ``Conv1D``) is handled with ``row_dim=1``. fp16/bf16 inputs are computed in fp32 and
returned in their own dtype: fp16 cannot hold the row-norm guard (``eps=1e-10`` rounds to 0 there).

References:
    Nora, arXiv 2605.03769, the four published equations (EMA momentum, row-wise tangent projection, row
    normalization, decoupled weight decay); the Nesterov look-ahead and the shape factor are from the
    authors' released code (not in the paper).
    RMNP, arXiv 2603.20527 (row-normalized momentum).
    Muon (K. Jordan): Newton-Schulz-5 with (a, b, c) = (3.4445, -4.7750, 2.0315).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = [
    "LOW_PRECISION",
    "SHAPE_SCALES",
    "adamw_update",
    "apply_update",
    "as_rows",
    "from_rows",
    "muon_update",
    "newton_schulz",
    "nora_direction",
    "nora_step",
    "nora_update",
    "rmnp_step",
    "rmnp_update",
    "row_step_",
    "row_normalize",
    "row_terms",
    "shape_factor",
]

SHAPE_SCALES = ("none", "muon", "rms_adamw")
LOW_PRECISION = (torch.float16, torch.bfloat16)  # computed in fp32 (the classes also keep their state in fp32)
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def as_rows(t: Tensor, row_dim: int = 0) -> Tensor:
    """View a parameter as a ``[rows, cols]`` matrix whose rows are output neurons.

    Args:
        t: ``[out, in]`` (Linear), ``[C_out, C_in, k...]`` (conv) or, with ``row_dim=1``, ``[in, out]``.
        row_dim: 0 (rows are dim 0) or 1 (a 2-D ``[in, out]`` layout; rows are its columns).
    """
    if row_dim == 1:
        return t.t()
    return t.reshape(t.shape[0], -1)


def from_rows(d: Tensor, shape: torch.Size, row_dim: int = 0) -> Tensor:
    """Inverse of :func:`as_rows`: a ``[rows, cols]`` update back to the parameter's shape."""
    if row_dim == 1:
        return d.t()
    return d.reshape(shape)


def shape_factor(rows: int, cols: int, shape_scale: str) -> float:
    """Update multiplier ``s`` for a ``[rows, cols]`` matrix.

    ``"none"``: 1 (the paper). ``"muon"``: ``max(1, sqrt(rows / cols))`` (the official code).
    ``"rms_adamw"``: ``0.2 * sqrt(cols)``, which makes the per-entry RMS of a unit-norm row 0.2 (our option).
    """
    if shape_scale == "none":
        return 1.0
    if shape_scale == "muon":
        return max(1.0, math.sqrt(rows / cols))
    if shape_scale == "rms_adamw":
        return 0.2 * math.sqrt(cols)
    raise ValueError(f"shape_scale={shape_scale!r} is not valid; choose one of {list(SHAPE_SCALES)}")


def _safe_norm(norm: Tensor, eps: float, eps_mode: str) -> Tensor:
    if eps_mode == "clamp":
        return norm.clamp_min(eps)
    return norm + eps


def row_normalize(u: Tensor, *, eps: float = 1e-8, eps_mode: str = "add") -> Tensor:
    """Each row divided by its norm: ``u_i / (||u_i|| + eps)`` (``"add"``) or ``/ max(||u_i||, eps)``.

    Args:
        u: ``[rows, cols]``.
    """
    if u.dtype in LOW_PRECISION:
        return row_normalize(u.float(), eps=eps, eps_mode=eps_mode).to(u.dtype)
    return u * _safe_norm(torch.linalg.vector_norm(u, dim=-1, keepdim=True), eps, eps_mode).reciprocal()


def _tangent_rows(u: Tensor, theta: Tensor, eps: float, eps_mode: str) -> tuple[Tensor, Tensor]:
    """``v = u - proj_theta(u)`` row-wise and ``1 / safe_norm(v)`` (``[..., 1]``), rows along the last dim."""
    sq = torch.linalg.vector_norm(theta, dim=-1, keepdim=True).clamp_min(eps).square()
    # (u * theta).sum is 2-4x faster than linalg.vecdot for tall fp32 matrices on CPU (measured at 4096x1024)
    coef = (u * theta).sum(dim=-1, keepdim=True) / sq
    v = torch.addcmul(u, coef, theta, value=-1.0)
    return v, _safe_norm(torch.linalg.vector_norm(v, dim=-1, keepdim=True), eps, eps_mode).reciprocal()


def nora_direction(u: Tensor, theta: Tensor, *, eps: float = 1e-10, eps_mode: str = "clamp") -> Tensor:
    """Nora's direction: project each row of ``u`` orthogonally to its weight row, then normalize it.

    ``v_i = u_i - <u_i, theta_i> theta_i / max(||theta_i||, eps)^2`` (a zero weight row is not projected),
    ``d_i = v_i / max(||v_i||, eps)`` (or ``/(||v_i|| + eps)`` with ``eps_mode="add"``). A zero ``u_i``
    gives ``d_i = 0``. If ``u_i`` is parallel to ``theta_i``, ``v_i`` is round-off (~1e-7 relative in fp32,
    above the default eps), so ``d_i`` is a finite step of norm <= 1 in an arbitrary direction, as in the
    official code; a larger ``eps`` with ``eps_mode="add"`` shrinks it.

    Args:
        u: ``[rows, cols]`` momentum (or look-ahead) matrix.
        theta: ``[rows, cols]`` weights, same shape.
    Returns:
        ``[rows, cols]`` with ``<d_i, theta_i> = 0`` and ``||d_i|| = 1`` (0 for degenerate rows).
    """
    if u.dtype in LOW_PRECISION or theta.dtype in LOW_PRECISION:
        return nora_direction(u.float(), theta.float(), eps=eps, eps_mode=eps_mode).to(u.dtype)
    v, inv = _tangent_rows(u, theta, eps, eps_mode)
    return v * inv


def _momentum(grad: Tensor, momentum: Tensor, beta: float, nesterov: bool) -> tuple[Tensor, Tensor]:
    """EMA ``m <- beta m + (1 - beta) g`` and the vector to normalize (``m``, or ``(1-beta) g + beta m``)."""
    new_m = momentum.lerp(grad, 1.0 - beta)
    return (grad.lerp(new_m, beta) if nesterov else new_m), new_m


def nora_update(
    grad: Tensor,
    momentum: Tensor,
    param: Tensor,
    *,
    beta: float = 0.95,
    nesterov: bool = False,
    shape_scale: str = "none",
    eps: float = 1e-10,
    eps_mode: str = "clamp",
    row_dim: int = 0,
) -> tuple[Tensor, Tensor]:
    """One Nora step without the learning rate: returns ``(direction s * d, new momentum)``.

    Paper form (defaults): ``m <- beta m + (1 - beta) g``; ``d_i = normalize(m_i - proj_{theta_i} m_i)``.
    ``nesterov=True`` normalizes ``(1 - beta) g + beta m`` instead and ``shape_scale="muon"`` multiplies by
    ``max(1, sqrt(rows / cols))``: together the authors' released variant. Apply with :func:`apply_update`.

    Args:
        grad, momentum, param: tensors of the parameter's shape (``ndim >= 2``).
    Returns:
        ``(direction, new_momentum)``, both of the parameter's shape.
    """
    u, new_m = _momentum(grad, momentum, beta, nesterov)
    rows = as_rows(u, row_dim)
    d = nora_direction(rows, as_rows(param, row_dim), eps=eps, eps_mode=eps_mode)
    s = shape_factor(rows.shape[0], rows.shape[1], shape_scale)
    if s != 1.0:
        d = d * s
    return from_rows(d, param.shape, row_dim), new_m


def rmnp_update(
    grad: Tensor,
    momentum: Tensor,
    *,
    beta: float = 0.95,
    nesterov: bool = False,
    shape_scale: str = "none",
    eps: float = 1e-8,
    eps_mode: str = "add",
    row_dim: int = 0,
) -> tuple[Tensor, Tensor]:
    """One RMNP step without the learning rate: ``R_i = M_i / (||M_i|| + eps)`` of the EMA momentum.

    The official code's summed buffer ``buf <- mu buf + g`` with look-ahead ``g + mu buf`` equals
    ``(1 - mu) g + mu m`` up to the positive factor ``1 / (1 - mu)``, which row normalization removes, so
    ``nesterov=True`` with ``eps_mode="clamp"`` and ``shape_scale="muon"`` reproduces it.

    Returns:
        ``(direction, new_momentum)``, both of the parameter's shape.
    """
    u, new_m = _momentum(grad, momentum, beta, nesterov)
    rows = as_rows(u, row_dim)
    d = row_normalize(rows, eps=eps, eps_mode=eps_mode)
    s = shape_factor(rows.shape[0], rows.shape[1], shape_scale)
    if s != 1.0:
        d = d * s
    return from_rows(d, grad.shape, row_dim), new_m


def row_terms(u: Tensor, theta: Tensor, *, kind: str, eps: float, eps_mode: str) -> tuple[Tensor, Tensor]:
    """The row-wise part of a Nora/RMNP step: ``v`` and ``1 / safe_norm(v)``, with ``v`` the rows of ``u``
    (``kind="rmnp"``) or their part orthogonal to the rows of ``theta`` (``"nora"``).

    Args:
        u, theta: row tensors ``[..., cols]`` whose every leading index is one row: one matrix ``[rows, cols]``
            or a stack ``[B, rows, cols]`` (the classes' ``foreach=True`` path).
    Returns:
        ``(v, inv)``, ``v`` of ``u``'s shape and ``inv`` ``[..., 1]``; the step is
        ``theta <- theta (1 - lr wd) + v * (inv * (-lr s))``.
    """
    if kind == "nora":
        return _tangent_rows(u, theta, eps, eps_mode)
    return u, _safe_norm(torch.linalg.vector_norm(u, dim=-1, keepdim=True), eps, eps_mode).reciprocal()


def _rows_step(
    rows: Tensor, grad: Tensor, momentum: Tensor, *, kind: str, lr: float, weight_decay: float, beta: float,
    nesterov: bool, scale: float, eps: float, eps_mode: str, inplace: bool,
) -> tuple[Tensor, Tensor]:
    """The fused row step on row tensors ``[..., cols]``: ``theta <- theta (1 - lr wd) + v * (-lr s / ||v||)``."""
    m = momentum.lerp_(grad, 1.0 - beta) if inplace else momentum.lerp(grad, 1.0 - beta)
    u = grad.lerp(m, beta) if nesterov else m
    v, inv = row_terms(u, rows, kind=kind, eps=eps, eps_mode=eps_mode)
    coef = inv * (-lr * scale)
    if inplace:
        if weight_decay != 0.0:
            rows.mul_(1.0 - lr * weight_decay)
        rows.addcmul_(v, coef)
        return rows, m
    base = rows.mul(1.0 - lr * weight_decay) if weight_decay != 0.0 else rows
    return torch.addcmul(base, v, coef), m


def _row_step(
    param: Tensor, grad: Tensor, momentum: Tensor, *, kind: str, lr: float, weight_decay: float, beta: float,
    nesterov: bool, shape_scale: str, eps: float, eps_mode: str, row_dim: int, inplace: bool,
) -> tuple[Tensor, Tensor]:
    """Nora/RMNP full step of one parameter, fused (:func:`_rows_step` on its rows).

    ``inplace=True`` updates ``param`` and ``momentum`` with the same kernels (bitwise equal results);
    the gradient is only read. fp16/bf16 tensors are stepped in fp32 and rounded back.
    """
    if any(t.dtype in LOW_PRECISION for t in (param, grad, momentum)):
        new_p, new_m = _row_step(param.float(), grad.float(), momentum.float(), kind=kind, lr=lr,
                                 weight_decay=weight_decay, beta=beta, nesterov=nesterov, shape_scale=shape_scale,
                                 eps=eps, eps_mode=eps_mode, row_dim=row_dim, inplace=False)
        if not inplace:
            return new_p.to(param.dtype), new_m.to(momentum.dtype)
        return param.copy_(new_p), momentum.copy_(new_m)
    if inplace and not (param.is_contiguous() and momentum.is_contiguous()):
        raise ValueError(f"an in-place row step needs contiguous tensors, got param strides {param.stride()}")
    rows, cols = as_rows(param, row_dim).shape
    views = [as_rows(t, row_dim) for t in (param, grad, momentum)]
    new_rows, new_m = _rows_step(*views, scale=shape_factor(rows, cols, shape_scale), inplace=inplace,
                                kind=kind, lr=lr, weight_decay=weight_decay, beta=beta, nesterov=nesterov, eps=eps,
                                eps_mode=eps_mode)
    if inplace:
        return param, momentum
    return from_rows(new_rows, param.shape, row_dim), from_rows(new_m, momentum.shape, row_dim)


def nora_step(
    param: Tensor, grad: Tensor, momentum: Tensor, *, lr: float, weight_decay: float = 0.0, beta: float = 0.95,
    nesterov: bool = False, shape_scale: str = "none", eps: float = 1e-10, eps_mode: str = "clamp",
    row_dim: int = 0,
) -> tuple[Tensor, Tensor]:
    """One full Nora step as new tensors ``(new_param, new_momentum)`` (the fused form the classes run).

    Equal, up to float rounding, to ``apply_update(param, nora_update(...)[0], lr=lr, weight_decay=wd)``.
    """
    return _row_step(param, grad, momentum, kind="nora", lr=lr, weight_decay=weight_decay, beta=beta,
                     nesterov=nesterov, shape_scale=shape_scale, eps=eps, eps_mode=eps_mode, row_dim=row_dim,
                     inplace=False)


def rmnp_step(
    param: Tensor, grad: Tensor, momentum: Tensor, *, lr: float, weight_decay: float = 0.0, beta: float = 0.95,
    nesterov: bool = False, shape_scale: str = "none", eps: float = 1e-8, eps_mode: str = "add", row_dim: int = 0,
) -> tuple[Tensor, Tensor]:
    """One full RMNP step as new tensors ``(new_param, new_momentum)`` (the fused form the classes run)."""
    return _row_step(param, grad, momentum, kind="rmnp", lr=lr, weight_decay=weight_decay, beta=beta,
                     nesterov=nesterov, shape_scale=shape_scale, eps=eps, eps_mode=eps_mode, row_dim=row_dim,
                     inplace=False)


def row_step_(
    param: Tensor, grad: Tensor, momentum: Tensor, *, kind: str, lr: float, weight_decay: float, beta: float,
    nesterov: bool, shape_scale: str, eps: float, eps_mode: str, row_dim: int,
) -> None:
    """In-place Nora (``kind="nora"``) or RMNP step on ``param`` and ``momentum``; ``grad`` is only read.

    Every hyperparameter is required: the two kinds default ``eps`` and ``eps_mode`` differently.
    """
    _row_step(param, grad, momentum, kind=kind, lr=lr, weight_decay=weight_decay, beta=beta, nesterov=nesterov,
              shape_scale=shape_scale, eps=eps, eps_mode=eps_mode, row_dim=row_dim, inplace=True)


def newton_schulz(
    x: Tensor, *, steps: int = 5, eps: float = 1e-7, coefficients: tuple[float, float, float] = NS_COEFFICIENTS
) -> Tensor:
    """Approximate ``U V^T`` of ``x = U S V^T`` with the quintic Newton-Schulz iteration (fp32).

    ``X <- x / (||x||_F + eps)``; transpose if ``rows > cols``; ``steps`` times
    ``A = X X^T; X <- a X + (b A + c A^2) X``. The singular values land roughly in ``[0.7, 1.2]``, not at 1.

    Args:
        x: ``[rows, cols]``.
    Returns:
        ``[rows, cols]``, same dtype as ``x``.
    """
    a, b, c = coefficients
    X = x / (torch.linalg.matrix_norm(x) + eps)
    tall = X.shape[0] > X.shape[1]
    if tall:
        X = X.t()
    for _ in range(steps):
        A = X @ X.t()
        B = torch.addmm(A, A, A, beta=b, alpha=c)
        X = torch.addmm(X, B, X, beta=a)
    return X.t() if tall else X


def muon_update(
    grad: Tensor,
    momentum: Tensor,
    *,
    beta: float = 0.95,
    nesterov: bool = True,
    ns_steps: int = 5,
    eps: float = 1e-7,
    row_dim: int = 0,
) -> tuple[Tensor, Tensor]:
    """One Muon step without the learning rate: Newton-Schulz of the (Nesterov) momentum.

    The orthogonalized ``[rows, cols]`` matrix is multiplied by ``max(1, rows / cols) ** 0.5``. A conv kernel
    ``[C_out, C_in, kh, kw]`` is orthogonalized as ``[C_out, C_in * kh * kw]`` but scaled by its last two dims,
    ``max(1, kh / kw) ** 0.5``, as KellerJordan/Muon's ``muon_update`` does (``grad.size(-2) / grad.size(-1)``;
    1 for square kernels, where the flattened matrix would give ``sqrt(C_out / (C_in kh kw))``).

    Returns:
        ``(direction, new_momentum)``, both of the parameter's shape.
    """
    u, new_m = _momentum(grad, momentum, beta, nesterov)
    rows = as_rows(u, row_dim)
    o = newton_schulz(rows, steps=ns_steps, eps=eps)
    tall, wide = (grad.shape[-2], grad.shape[-1]) if grad.ndim > 2 else rows.shape
    s = max(1.0, tall / wide) ** 0.5
    if s != 1.0:
        o = o * s
    return from_rows(o, grad.shape, row_dim), new_m


def adamw_update(
    grad: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    *,
    step: int,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> tuple[Tensor, Tensor, Tensor]:
    """AdamW's direction (as ``torch.optim.AdamW``): ``(m / bc1) / (sqrt(v / bc2) + eps)``.

    Args:
        step: the 1-based step count after this update (for the bias corrections ``bc = 1 - beta^step``).
    Returns:
        ``(direction, new_exp_avg, new_exp_avg_sq)``; apply with :func:`apply_update`.
    """
    b1, b2 = betas
    new_avg = exp_avg.lerp(grad, 1.0 - b1)
    new_sq = torch.addcmul(exp_avg_sq * b2, grad, grad, value=1.0 - b2)
    bc1, bc2 = 1.0 - b1**step, 1.0 - b2**step
    denom = (new_sq.sqrt() / math.sqrt(bc2)).add_(eps)
    return (new_avg / bc1) / denom, new_avg, new_sq


def apply_update(param: Tensor, direction: Tensor, *, lr: float, weight_decay: float = 0.0) -> Tensor:
    """Decoupled weight decay and step: ``theta <- theta (1 - lr wd) - lr direction`` (a new tensor).

    The classes perform the same two operations in place, so they match this function bit for bit.
    """
    out = param.mul(1.0 - lr * weight_decay) if weight_decay != 0.0 else param
    return out.add(direction, alpha=-lr)
