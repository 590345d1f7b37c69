"""Input checks and small helpers shared by the delta-rule ops (reference, chunk, step)."""

from __future__ import annotations

import math
from itertools import pairwise

import torch

__all__ = ["MIN_EPS", "apply_mask", "check_cu_seqlens", "check_eps", "check_key_norms", "check_mask_values",
           "check_sequence_inputs", "check_step_inputs", "compute_dtype", "resolve_scale"]

# The smallest eps of ``eta / (||k||^2 + eps)``: float32's smallest normal, so an all-zero key gives a finite
# beta (eta / eps <= 8.5e37 for eta <= 1) in every compute dtype; below it (0, or a subnormal like 1e-40) a zero
# key divided by zero, or by a number that 1 / eps overflows, gave inf.
MIN_EPS = torch.finfo(torch.float32).tiny


def _shapes(**tensors: torch.Tensor | None) -> str:
    return ", ".join(f"{n}={tuple(t.shape)}" for n, t in tensors.items() if isinstance(t, torch.Tensor))


def _check_tensor(name: str, t: object, rank: int, shapes: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise ValueError(f"{name} must have a floating dtype, got {t.dtype} (shapes seen: {shapes})")
    if t.dim() != rank:
        raise ValueError(f"{name} must have {rank} dims, got shape {tuple(t.shape)} (shapes seen: {shapes})")
    return t


def _check_g(g: torch.Tensor, shapes: str) -> None:
    # A positive log decay would let the state grow without bound; the recurrence assumes alpha = exp(g) <= 1.
    # -inf (a hard reset: alpha = 0) is allowed; NaN is not (written as "not g <= 0" so NaN is caught).
    if g.numel() and not bool((g <= 0).all()):
        nan = int(g.isnan().sum())
        got = f"{nan} NaN values" if nan else f"max {g.max().item():.4g}"
        raise ValueError(f"g is a log decay and must be <= 0 (-inf allowed), got {got} (shapes seen: {shapes})")


def check_eps(eps: object, name: str = "eps") -> float:
    """Return the key-norm epsilon ``eps`` as float if it is a finite number ``>= MIN_EPS`` (~1.18e-38)."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(eps).__name__} {eps!r}")
    if not (math.isfinite(eps) and eps >= MIN_EPS):
        raise ValueError(f"{name} must be a finite number >= {MIN_EPS:.4g} (float32's smallest normal: a smaller "
                         f"eps gives beta = eta / eps = inf for a zero key), got {eps!r}")
    return float(eps)


def check_mask_values(name: str, mask: torch.Tensor, shapes: str = "") -> None:
    """Refuse a non-bool ``mask`` with values other than 0 and 1 (one host sync, only for non-bool masks)."""
    if mask.dtype == torch.bool:
        return
    seen = f" (shapes seen: {shapes})" if shapes else ""
    if mask.is_complex():
        raise ValueError(f"{name} must be bool or hold 0 (padding) and 1 (real token), got dtype {mask.dtype}{seen}")
    if mask.numel() and not bool(((mask == 0) | (mask == 1)).all()):
        bad = mask[(mask != 0) & (mask != 1)].flatten()[:3].tolist()
        raise ValueError(f"{name} must hold only 0 (padding) and 1 (real token) (or be bool), got values such as "
                         f"{bad}{seen}")


def _check_key_dim(K: int, shapes: str) -> None:
    if K == 0:
        raise ValueError(f"q and k must have a key dim K >= 1 (the default scale is K ** -0.5), got K = 0 "
                         f"(shapes seen: {shapes})")


def check_key_norms(k: torch.Tensor, k2: torch.Tensor) -> None:
    """Refuse keys whose squared norm ``k2 = ||k||^2`` overflowed its dtype.

    Past that point (``||k|| > ~1.8e19`` in fp32) ``beta = eta / ||k||^2`` is 0 and ``k k^T`` is infinite: the
    output was silently wrong by 87-100% and the key gradients NaN, in every form of the op.
    """
    if k2.numel() and bool(torch.isinf(k2).any()):
        big = k.detach().abs().amax().item()
        raise ValueError(f"k: the squared key norm overflows {k2.dtype} (largest |k| entry {big:.3g}; ||k||^2 must "
                         f"stay below {torch.finfo(k2.dtype).max:.3g}); rescale the keys or compute in float64")


def check_cu_seqlens(cu_seqlens: object, batch: int, steps: int, shapes: str = "") -> list[int]:
    """Check packed-sequence boundaries and return them as ints ``[0, e_1, ..., T]`` (one host sync).

    ``cu_seqlens`` is a 1-D integer tensor ``[N + 1]`` of cumulative sequence starts (flash-linear-attention's
    convention): sequence ``n`` holds steps ``cu_seqlens[n]:cu_seqlens[n + 1]`` of a batch of size 1. It must
    start at 0, increase strictly (no empty sequence) and end at ``T``.
    """
    seen = f" (shapes seen: {shapes})" if shapes else ""
    if not isinstance(cu_seqlens, torch.Tensor):
        raise TypeError(f"cu_seqlens must be a 1-D integer torch.Tensor [N + 1], got {type(cu_seqlens).__name__}")
    if cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        raise ValueError(f"cu_seqlens must be a 1-D tensor [N + 1] with N >= 1 sequences, got shape "
                         f"{tuple(cu_seqlens.shape)}{seen}")
    if cu_seqlens.dtype == torch.bool or cu_seqlens.is_floating_point() or cu_seqlens.is_complex():
        raise ValueError(f"cu_seqlens must have an integer dtype (e.g. torch.long), got {cu_seqlens.dtype}")
    if batch != 1:
        raise ValueError(f"cu_seqlens packs N sequences into one row: the batch size must be 1, got B = {batch}"
                         f"{seen}")
    bounds = [int(b) for b in cu_seqlens.tolist()]
    if bounds[0] != 0 or bounds[-1] != steps or any(b >= c for b, c in pairwise(bounds)):
        shown = bounds if len(bounds) <= 12 else [*bounds[:6], "...", *bounds[-6:]]
        raise ValueError(f"cu_seqlens must start at 0, increase strictly and end at T = {steps}, got {shown}{seen}")
    return bounds


def check_sequence_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None,
    mask: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[int, int, int, int, int, list[int] | None]:
    """Check ``[B,T,H,K]`` q/k, ``[B,T,H,V]`` v, ``[B,T,H]`` g/beta, ``[B,H,K,V]`` state (``[N,H,K,V]`` with
    ``cu_seqlens``); return B, T, H, K, V and the sequence bounds (``check_cu_seqlens``, None without)."""
    shapes = _shapes(q=q, k=k, v=v, g=g, beta=beta, initial_state=initial_state, mask=mask, cu_seqlens=cu_seqlens)
    for name, t, rank in (("q", q, 4), ("k", k, 4), ("v", v, 4), ("g", g, 3), ("beta", beta, 3)):
        _check_tensor(name, t, rank, shapes)
    B, T, H, K = q.shape
    V = v.shape[-1]
    if k.shape != q.shape:
        raise ValueError(f"k must have the shape of q [B, T, H, K], got {shapes}")
    if v.shape[:3] != q.shape[:3]:
        raise ValueError(f"v must be [B, T, H, V] with B, T, H of q, got {shapes}")
    for name, t in (("g", g), ("beta", beta)):
        if t.shape != q.shape[:3]:
            raise ValueError(f"{name} must be [B, T, H] = {tuple(q.shape[:3])}, got {shapes}")
    bounds = None if cu_seqlens is None else check_cu_seqlens(cu_seqlens, B, T, shapes)
    if initial_state is not None:
        _check_tensor("initial_state", initial_state, 4, shapes)
        if bounds is not None:
            N = len(bounds) - 1
            if initial_state.shape != (N, H, K, V):
                raise ValueError(f"with cu_seqlens, initial_state holds one state per sequence: [N, H, K, V] = "
                                 f"{(N, H, K, V)}, got {shapes}")
        elif initial_state.shape != (B, H, K, V):
            raise ValueError(f"initial_state must be [B, H, K, V] = {(B, H, K, V)}, got {shapes}")
    if mask is not None and (not isinstance(mask, torch.Tensor) or mask.shape != (B, T)):
        raise ValueError(f"mask must be a [B, T] = {(B, T)} tensor, got {shapes}")
    _check_key_dim(K, shapes)
    if mask is not None:
        check_mask_values("mask", mask, shapes)
    _check_g(g, shapes)
    check_key_norms(k, k.to(compute_dtype(k, v)).square().sum(-1))
    return B, T, H, K, V, bounds


def check_step_inputs(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    state: torch.Tensor,
    mask: torch.Tensor | None,
) -> tuple[int, int, int, int]:
    """Check one-token inputs: q/k ``[B,H,K]``, v ``[B,H,V]``, g/beta ``[B,H]``, state ``[B,H,K,V]``."""
    shapes = _shapes(q=q, k=k, v=v, g=g, beta=beta, state=state, mask=mask)
    for name, t, rank in (("q", q, 3), ("k", k, 3), ("v", v, 3), ("g", g, 2), ("beta", beta, 2), ("state", state, 4)):
        _check_tensor(name, t, rank, shapes)
    B, H, K = q.shape
    V = v.shape[-1]
    if k.shape != q.shape or v.shape[:2] != (B, H):
        raise ValueError(f"k must match q [B, H, K] and v must be [B, H, V], got {shapes}")
    if g.shape != (B, H) or beta.shape != (B, H):
        raise ValueError(f"g and beta must be [B, H] = {(B, H)}, got {shapes}")
    if state.shape != (B, H, K, V):
        raise ValueError(f"state must be [B, H, K, V] = {(B, H, K, V)}, got {shapes}")
    if mask is not None and (not isinstance(mask, torch.Tensor) or mask.shape != (B,)):
        raise ValueError(f"mask must be a [B] = {(B,)} tensor, got {shapes}")
    _check_key_dim(K, shapes)
    if mask is not None:
        check_mask_values("mask", mask, shapes)
    _check_g(g, shapes)
    check_key_norms(k, k.to(compute_dtype(k, v)).square().sum(-1))
    return B, H, K, V


def resolve_scale(scale: float | None, K: int) -> float:
    """``K ** -0.5`` by default; otherwise a finite positive number."""
    if scale is None:
        return K**-0.5
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0 or scale == float("inf"):
        raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
    return float(scale)


def compute_dtype(*tensors: torch.Tensor) -> torch.dtype:
    """The state/accumulation dtype: fp32 for half/bf16/fp32 inputs, fp64 when any input is fp64."""
    dtype = torch.float32
    for t in tensors:
        dtype = torch.promote_types(dtype, t.dtype)
    return dtype


def apply_mask(
    g: torch.Tensor, beta: torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Turn masked-out steps into identity steps: ``g = 0`` (no decay) and ``beta = 0`` (no write).

    ``mask`` has the leading shape of ``g`` (``[B, T]`` or ``[B]``); True/1 marks real tokens.
    """
    if mask is None:
        return g, beta
    keep = mask.to(torch.bool).reshape(*mask.shape, *([1] * (g.dim() - mask.dim())))
    zero = torch.zeros((), dtype=g.dtype, device=g.device)
    return torch.where(keep, g, zero), torch.where(keep, beta, torch.zeros_like(zero, dtype=beta.dtype))
