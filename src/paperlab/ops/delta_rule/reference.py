"""Reference (per-token loop) gated delta rule, and the KLA step size.

Per head, with state ``S`` of shape ``[K, V]`` (GDN's recurrence, kept by KLA, arXiv 2605.08587; per the authors' code):

    S <- exp(g_t) S
    S <- S + beta_t k_t (v_t - S^T k_t)^T
    o_t = S^T (scale q_t)

This file is the slow, obviously-correct sibling that the chunkwise and step ops are tested against.
The ops never normalize q or k: the layer decides (KLA: L2 q, raw k, ``beta = kla_beta(eta, k)``).
"""

from __future__ import annotations

import torch

from paperlab.ops.delta_rule._checks import (
    apply_mask,
    check_eps,
    check_key_norms,
    check_sequence_inputs,
    compute_dtype,
    resolve_scale,
)

__all__ = ["delta_rule_recurrent", "kla_beta"]


def kla_beta(eta: torch.Tensor, k: torch.Tensor, *, eps: float = 1e-6) -> torch.Tensor:
    """KLA step size ``beta = eta / (||k||^2 + eps)`` (arXiv 2605.08587; form per the authors' code).

    Args:
        eta: ``[...]`` relaxation in (0, 1), e.g. ``[B, T, H]``.
        k: ``[..., K]`` raw keys; the squared norm is taken over the last dim in fp32 (bf16 is lossy).
        eps: added to ``||k||^2``; the write gain peaks at ``eta / (2 sqrt(eps))`` for ``||k|| = sqrt(eps)``.
            Must be finite and ``>= MIN_EPS = torch.finfo(torch.float32).tiny`` (~1.18e-38), so a zero key
            gives the finite ``beta = eta / eps``; ``eta`` is not range-checked.

    Returns:
        ``[...]`` beta in ``promote(eta.dtype, float32)``.
    """
    if not isinstance(eta, torch.Tensor) or not isinstance(k, torch.Tensor):
        raise TypeError(f"eta and k must be tensors, got {type(eta).__name__} and {type(k).__name__}")
    if k.dim() < 1 or eta.shape != k.shape[:-1]:
        raise ValueError(f"eta must have the shape of k without its last dim, got eta={tuple(eta.shape)}, "
                         f"k={tuple(k.shape)}")
    if not (eta.is_floating_point() and k.is_floating_point()):
        raise ValueError(f"eta and k must be floating, got {eta.dtype} and {k.dtype}")
    check_eps(eps)
    dtype = compute_dtype(eta, k)
    k2 = k.to(dtype).square().sum(-1)
    check_key_norms(k, k2)
    return eta.to(dtype) / (k2 + eps)


def delta_rule_recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    mask: torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Gated delta rule, one token at a time.

    Args:
        q, k: ``[B, T, H, K]`` queries and keys, ``K >= 1`` (used as given: no normalization here).
        v: ``[B, T, H, V]`` values.
        g: ``[B, T, H]`` log decay (``<= 0``; ``-inf`` is a hard reset); ``alpha_t = exp(g_t)``.
        beta: ``[B, T, H]`` write strength.
        scale: query scale, default ``K ** -0.5``.
        initial_state: ``[B, H, K, V]`` state before the first token (zeros if None).
        output_final_state: return the state after the last token.
        mask: optional ``[B, T]``, bool or 0/1 (True/1 = real token); masked steps are identity steps
            (g = 0, beta = 0).
        cu_seqlens: optional packed sequences (flash-linear-attention's varlen convention): a 1-D integer
            tensor ``[N + 1]`` of cumulative starts ``0 = c_0 < c_1 < ... < c_N = T`` for a batch of ``B = 1``
            holding N sequences back to back. Each sequence starts from its own state (``initial_state``
            ``[N, H, K, V]``, zeros if None) and nothing flows across a boundary; the final state is
            ``[N, H, K, V]``, one per sequence.

    Returns:
        ``o`` ``[B, T, H, V]`` in v's dtype, and the final state ``[B, H, K, V]`` (``[N, H, K, V]`` with
        ``cu_seqlens``) in fp32 (fp64 for fp64 inputs) or None.
    """
    B, T, H, K, V, bounds = check_sequence_inputs(q, k, v, g, beta, initial_state, mask, cu_seqlens)
    scale = resolve_scale(scale, K)
    dtype, out_dtype = compute_dtype(q, k, v, g, beta), v.dtype
    g, beta = apply_mask(g, beta, mask)
    q, k, v, g, beta = (t.to(dtype) for t in (q, k, v, g, beta))
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state.to(dtype)
    if bounds is not None:  # packed: S holds every sequence's state; row n is loaded at its first step
        S0, S = S, q.new_zeros(B, H, K, V)
        starts = {b: n for n, b in enumerate(bounds[:-1])}
        ends = set(bounds[1:])
        finals = []
    outs = []
    for t in range(T):
        if bounds is not None and t in starts:
            S = S0[starts[t]][None] if initial_state is not None else torch.zeros_like(S)
        k_t, v_t = k[:, t], v[:, t]  # [B, H, K], [B, H, V]
        S = S * g[:, t].exp()[..., None, None]
        err = v_t - torch.einsum("bhkv,bhk->bhv", S, k_t)
        S = S + torch.einsum("bhk,bhv->bhkv", k_t * beta[:, t, :, None], err)
        outs.append(torch.einsum("bhkv,bhk->bhv", S, q[:, t] * scale))
        if bounds is not None and t + 1 in ends:
            finals.append(S)
    o = torch.stack(outs, dim=1) if outs else v.new_zeros(B, 0, H, V)
    if bounds is not None:
        S = torch.cat(finals)
    return o.to(out_dtype), (S if output_final_state else None)
