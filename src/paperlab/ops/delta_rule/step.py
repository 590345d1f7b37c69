"""One decode step of the gated delta rule: O(H K V) per token, independent of the sequence length."""

from __future__ import annotations

import torch

from paperlab.ops.delta_rule._checks import apply_mask, check_step_inputs, compute_dtype, resolve_scale

__all__ = ["delta_rule_step"]


def delta_rule_step(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    state: torch.Tensor,
    *,
    scale: float | None = None,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advance the state by one token: ``S <- e^g S; S <- S + beta k (v - S^T k)^T; o = S^T (scale q)``.

    Args:
        q, k: ``[B, H, K]`` (``K >= 1``); v: ``[B, H, V]``; g (log decay, ``<= 0``) and beta: ``[B, H]``.
        state: ``[B, H, K, V]`` state before the token.
        scale: query scale, default ``K ** -0.5``.
        mask: optional ``[B]``, bool or 0/1 (True/1 = real token); a masked step leaves the state unchanged.

    Returns:
        ``o`` ``[B, H, V]`` in v's dtype and the new state ``[B, H, K, V]`` in fp32 (fp64 for fp64 inputs).
    """
    _, _, K, _ = check_step_inputs(q, k, v, g, beta, state, mask)
    scale = resolve_scale(scale, K)
    dtype, out_dtype = compute_dtype(q, k, v, g, beta, state), v.dtype
    g, beta = apply_mask(g, beta, mask)
    q, k, v, g, beta, S = (t.to(dtype) for t in (q, k, v, g, beta, state))
    S = S * g.exp()[..., None, None]
    err = v - (k.unsqueeze(-2) @ S).squeeze(-2)
    S = S + (k * beta[..., None]).unsqueeze(-1) * err.unsqueeze(-2)
    o = ((q * scale).unsqueeze(-2) @ S).squeeze(-2)
    return o.to(out_dtype), S
