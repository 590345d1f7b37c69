"""Chunkwise-parallel gated delta rule (WY / UT transform) in plain PyTorch.

KLA spec, "Chunked form". Per chunk of length C with ``gam = cumsum(g)`` and
``Gam_ij = exp(gam_i - gam_j) [i >= j]``:

    A = strictly_lower(diag(beta) (K K^T * Gam));  T = (I + A)^-1        (``unit_lower_inverse``)
    W = T diag(beta) (K * e^gam);   U = T diag(beta) V
    V' = U - W S
    O  = (Q * e^gam) S + ((Q K^T) * Gam) V'
    S  = e^{gam_C} S + (K * e^{gam_C - gam})^T V'

Everything that does not depend on the carried state is computed batched over a group of chunks.
Substituting V' gives

    O = scale (Qeff S_n + P U),   Qeff = Q * e^gam - P W,   P = (Q K^T) * Gam
    S_{n+1} = e^{gam_C} S_n + Kd^T U - (Kd^T W) S_n,   Kd = K * e^{gam_C - gam}

so the only sequential part is one ``[K, K] @ [K, V]`` product per chunk; the outputs of a group are then one
batched matmul over its stacked states. Groups hold about ``GROUP_MATRICES`` chunk-heads so their tensors stay
in cache. Decays only enter as ``exp`` of non-positive differences, so nothing overflows however strong the
decay. Gradients flow through autograd, except the inverse, which has a closed-form backward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from paperlab.ops.delta_rule._checks import apply_mask, check_sequence_inputs, compute_dtype, resolve_scale

__all__ = ["delta_rule_chunk", "unit_lower_inverse"]

_BACKENDS = ("auto", "torch", "fla")
GROUP_MATRICES = 64  # chunk-heads per cache-sized group (64 x [64, 64] fp32 = 1 MiB per C x C tensor)


def delta_rule_chunk(
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
    chunk_size: int = 64,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Gated delta rule, chunkwise parallel; same semantics and signature as ``delta_rule_recurrent``.

    Args:
        q, k: ``[B, T, H, K]``; v: ``[B, T, H, V]``; g (log decay, ``<= 0``) and beta: ``[B, T, H]``.
        scale: query scale, default ``K ** -0.5``.
        initial_state: ``[B, H, K, V]`` (zeros if None).
        output_final_state: return the state after the last token.
        mask: optional ``[B, T]`` (True/1 = real token); masked steps are identity steps.
        chunk_size: chunk length C (>= 1); any T works (the tail is padded with identity steps).
        backend: ``"auto"`` uses flash-linear-attention's Triton kernel when the inputs are CUDA tensors
            (not fp64) and ``fla`` imports, and the PyTorch path otherwise; ``"torch"`` / ``"fla"`` force one.

    Returns:
        ``o`` ``[B, T, H, V]`` in v's dtype and the final state ``[B, H, K, V]`` (fp32, fp64 for fp64 inputs)
        or None.
    """
    B, T, H, K, V = check_sequence_inputs(q, k, v, g, beta, initial_state, mask)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int >= 1, got {chunk_size!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend={backend!r} is not valid; choose one of {list(_BACKENDS)}")
    scale = resolve_scale(scale, K)
    g, beta = apply_mask(g, beta, mask)
    if backend == "fla" or (backend == "auto" and _fla_applies(q)):
        from paperlab.ops.delta_rule.fla import delta_rule_fla

        return delta_rule_fla(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                              output_final_state=output_final_state)
    dtype, out_dtype = compute_dtype(q, k, v, g, beta), v.dtype
    if T == 0:
        S = q.new_zeros(B, H, K, V, dtype=dtype) if initial_state is None else initial_state.to(dtype)
        return v.new_zeros(B, 0, H, V), (S if output_final_state else None)
    C = min(chunk_size, T)
    o, S = _chunk_forward(q, k, v, g, beta, initial_state, scale=scale, chunk=C, dtype=dtype)
    return o.to(out_dtype), (S if output_final_state else None)


def unit_lower_inverse(A: torch.Tensor) -> torch.Tensor:
    """``(I + A)^-1`` for strictly lower-triangular ``A [..., C, C]`` (entries on and above the diagonal are
    ignored and get zero gradient).

    Forward by blocked doubling: inverted diagonal blocks of size s merge as
    ``[[X11, 0], [L21, X22]]^-1 = [[X11, 0], [-X22 L21 X11, X22]]`` (s = 1, 2, 4, ...), only batched matmuls,
    far faster than a batched ``solve_triangular`` on CPU. Backward in closed form:
    ``dA = strictly_lower(-X^T dX X^T)``.
    """
    return _UnitLowerInverse.apply(A)


class _UnitLowerInverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        X = _doubling_inverse(A)
        ctx.save_for_backward(X)
        return X

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        (X,) = ctx.saved_tensors
        Xt = X.transpose(-1, -2)
        return (-(Xt @ grad) @ Xt).tril(-1)


def _doubling_inverse(A: torch.Tensor) -> torch.Tensor:
    C = A.shape[-1]
    P = 1 << (C - 1).bit_length()  # pad to a power of two with identity rows
    if P != C:
        A = F.pad(A, (0, P - C, 0, P - C))
    lead = A.shape[:-2]
    D = torch.ones(*lead, P, 1, 1, dtype=A.dtype, device=A.device)  # inverted diagonal blocks
    s = 1
    while s < P:
        nb = P // (2 * s)
        blocks = A.reshape(*lead, nb, 2 * s, nb, 2 * s).diagonal(dim1=-4, dim2=-2).movedim(-1, -3)
        X11, X22 = D[..., 0::2, :, :], D[..., 1::2, :, :]
        off = -(X22 @ blocks[..., s:, :s]) @ X11
        top = torch.cat([X11, torch.zeros_like(X11)], dim=-1)
        D = torch.cat([top, torch.cat([off, X22], dim=-1)], dim=-2)
        s *= 2
    X = D[..., 0, :, :]
    return X[..., :C, :C] if P != C else X


def _fla_applies(q: torch.Tensor) -> bool:
    if not q.is_cuda or q.dtype == torch.float64:
        return False
    from paperlab.ops.delta_rule.fla import fla_available

    return fla_available()


def _to_chunks(x: torch.Tensor, pad: int, chunk: int) -> torch.Tensor:
    """``[B, T, H, *D]`` -> ``[N, B, H, C, *D]`` (time padded with zeros to N * C)."""
    x = x.transpose(1, 2)  # [B, H, T, *D]
    if pad:
        x = F.pad(x, (0, 0, 0, pad) if x.dim() == 4 else (0, pad))
    B, H, Tp = x.shape[:3]
    x = x.reshape(B, H, Tp // chunk, chunk, *x.shape[3:])
    return x.movedim(2, 0).contiguous()


def _chunk_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    initial_state: torch.Tensor | None,
    *,
    scale: float,
    chunk: int,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, H, K = q.shape
    V = v.shape[-1]
    pad = -T % chunk
    # Padded tail steps have g = 0 and beta = 0: identity steps, so the final state is unaffected.
    # The output is linear in q: the query scale is applied once, in the last product.
    q, k, v, g, beta = (_to_chunks(t.to(dtype), pad, chunk) for t in (q, k, v, g, beta))
    gam = g.cumsum(-1)  # [N, B, H, C]
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state.to(dtype)
    # Groups of chunks small enough to stay in cache (~GROUP_MATRICES chunk-heads each): every step, forward
    # and backward, then works on cache-resident tensors instead of streaming [N, B, H, C, C] through memory.
    group = max(1, GROUP_MATRICES // (B * H))
    outs = []
    # split (not x[a:b]): its backward concatenates once instead of zero-filling a full-size grad per group
    for q_g, k_g, v_g, gam_g, beta_g in zip(*(t.split(group) for t in (q, k, v, gam, beta)), strict=True):
        o, S = _chunk_group(q_g, k_g, v_g, gam_g, beta_g, S, scale=scale)
        outs.append(o)
    o = torch.cat(outs) if len(outs) > 1 else outs[0]  # [N, B, H, C, V]
    o = o.movedim(0, 2).reshape(B, H, -1, V)[:, :, :T].transpose(1, 2)
    return o, S


def _chunk_group(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gam: torch.Tensor, beta: torch.Tensor, S: torch.Tensor,
    *, scale: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One group of chunks ``[n, B, H, C, *]`` (gam: in-chunk cumsum of g) from state S -> (o, new S)."""
    chunk, K = q.shape[-2], q.shape[-1]
    B, H, _, V = S.shape
    tril = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).tril()
    Gam = (gam[..., :, None] - gam[..., None, :]).masked_fill_(~tril, float("-inf")).exp()
    # One matmul for Q K^T and K K^T; one for P [W U]; one for Kd^T [W U] (fewer, larger products).
    QK, KK = (torch.cat([q, k], dim=-2) @ k.transpose(-1, -2)).split(chunk, dim=-2)  # [n, B, H, C, C] each
    P = QK * Gam
    # A's diagonal (and, via Gam, its upper part) is never read by unit_lower_inverse: no tril needed.
    A = KK * (Gam * beta[..., None])
    rhs = torch.cat([k * (beta * gam.exp())[..., None], v * beta[..., None]], dim=-1)
    WU = unit_lower_inverse(A) @ rhs  # [W | U]: [n, B, H, C, K + V]
    PW, PU = (P @ WU).split([K, V], dim=-1)
    q_eff = q * gam.exp()[..., None] - PW
    last = gam[..., -1:]  # [n, B, H, 1]
    kd_t = (k * (last - gam).exp()[..., None]).transpose(-1, -2)  # [n, B, H, K, C]
    KW, KU = (kd_t @ WU).split([K, V], dim=-1)  # [n, B, H, K, K] and [n, B, H, K, V]
    decay = last.exp()[..., None]  # [n, B, H, 1, 1]
    states = []
    # S <- e^{gam_C} S + Bn - (Kd^T W) S; unbind (not x[i]) so the backward stacks per-chunk grads once
    # instead of n full-size scatters.
    per_chunk = (t.flatten(1, 2).unbind(0) for t in (decay, KW, KU))
    for d_i, KW_i, B_i in zip(*per_chunk, strict=True):
        states.append(S)
        S_flat = S.flatten(0, 1)
        S = torch.baddbmm(torch.addcmul(B_i, d_i, S_flat), KW_i, S_flat, alpha=-1).view(B, H, K, V)
    o = torch.baddbmm(PU.flatten(0, 2), q_eff.flatten(0, 2), torch.stack(states).flatten(0, 2),
                      beta=scale, alpha=scale)
    return o.view(*q.shape[:-1], V), S
