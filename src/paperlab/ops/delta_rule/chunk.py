"""Chunkwise-parallel gated delta rule (WY / UT transform) in plain PyTorch.

KLA (arXiv 2605.08587) reuses GDN's chunk algorithm with raw k and a precomputed beta. Per chunk of length C
with ``gam = cumsum(g)`` and ``Gam_ij = exp(gam_i - gam_j) [i >= j]``:

    A = strictly_lower(diag(beta) (K K^T * Gam));  T = (I + A)^-1        (applied by ``unit_lower_solve``)
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
in cache. While a chunk's total decay ``|gam_C|`` is moderate (<= 60, so ``e^{-gam}`` is finite in fp32),
``Gam_ij = e^{gam_i} e^{-gam_j}`` is folded into the operands of the ``Q K^T`` / ``K K^T`` product, so no
elementwise ``exp`` or multiply touches a ``[C, C]`` tensor (1.2x faster forward, measured); stronger decays take
an exact path in which every decay is ``exp`` of a sum of log decays taken directly over its own span (never a
difference of cumsums), so nothing overflows or cancels however strong the decay: a hard reset ``g = -inf`` and
cumsums that overflow (``g = -1e38``) forget exactly, as in the recurrence. The factored path is also left
for the exact one when keys are so large (or step sizes so small) that ``K e^{-gam}`` would overflow or
``beta e^{gam}`` underflow. Gradients flow through autograd, except the triangular solve, which has a
closed-form backward.

Packed sequences (``cu_seqlens``) are laid out so that every sequence starts a chunk: each is padded with
identity steps (g = 0, beta = 0, zero q/k/v) up to a multiple of C, the in-chunk terms of all chunks are
computed batched as usual, and the sequential state loop loads a sequence's initial state at its first chunk
and records its final state after its last one (as fla's varlen kernel does with its chunk indices). No chunk
holds two sequences, so nothing crosses a boundary by construction. We do not use the other exact route, a
hard reset ``g = -inf`` at each start: every group holding a boundary would then leave the factored path for
the exact one, and a reset can only restart from zeros, not from a per-sequence initial state. The layout
costs at most C - 1 padded steps per sequence (C is capped at the longest sequence).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import accumulate, pairwise

import torch
import torch.nn.functional as F

from paperlab.ops.delta_rule._checks import apply_mask, check_sequence_inputs, compute_dtype, resolve_scale
from paperlab.ops.delta_rule.fla import delta_rule_fla, fla_available
from paperlab.ops.delta_rule.triangular import unit_lower_solve

__all__ = ["FLA_MIN_G", "delta_rule_chunk"]

_BACKENDS = ("auto", "torch", "fla")
GROUP_MATRICES = 64  # chunk-heads per cache-sized group (64 x [64, 64] fp32 = 1 MiB per C x C tensor)
# Below this total in-chunk decay, e^{-gam} (<= e^60 ~ 1e26) and every product stay finite in fp32, so the
# decay matrix Gam can be factored into the matmul operands; stronger decays take the exact path.
_MAX_FACTORED_DECAY = 60.0
# Headroom (e^16 ~ 9e6) kept below the largest and above the smallest normal float by the factored path's
# operands: K e^{-gam} (up to max|k| e^{|gam_C|}), Q K^T products and the row scales beta e^{gam}.
_FACTOR_MARGIN = 16.0
# The fla kernel gets decays down to fp32's reset level: e^{-88} is below the smallest normal float, so a lower
# g already erases the state; lower ones (and -inf) would only overflow or blur its fp32 cumsum differences.
FLA_MIN_G = -88.0


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
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Gated delta rule, chunkwise parallel; same semantics and signature as ``delta_rule_recurrent``.

    Args:
        q, k: ``[B, T, H, K]`` (``K >= 1``); v: ``[B, T, H, V]``; g (log decay, ``<= 0``) and beta: ``[B, T, H]``.
        scale: query scale, default ``K ** -0.5``.
        initial_state: ``[B, H, K, V]`` (zeros if None).
        output_final_state: return the state after the last token.
        mask: optional ``[B, T]``, bool or 0/1 (True/1 = real token); masked steps are identity steps.
        chunk_size: chunk length C (>= 1); any T works (the tail is padded with identity steps).
        backend: ``"auto"`` uses flash-linear-attention's Triton kernel when the inputs are CUDA tensors
            (not fp64) and ``fla`` imports, and the PyTorch path otherwise; ``"torch"`` / ``"fla"`` force one.
            Decays below ``FLA_MIN_G`` (a hard reset ``g = -inf`` included) always take the PyTorch path
            (``"fla"`` raises ValueError): fla's kernel takes differences of in-chunk cumsums.
        cu_seqlens: optional packed sequences, ``[N + 1]`` cumulative starts for ``B = 1`` (as in
            ``delta_rule_recurrent``); ``initial_state`` and the final state are then ``[N, H, K, V]``. Chunks
            never straddle a boundary (see the module docstring); fla's kernel gets ``cu_seqlens`` as is.

    Returns:
        ``o`` ``[B, T, H, V]`` in v's dtype and the final state ``[B, H, K, V]`` (``[N, H, K, V]`` with
        ``cu_seqlens``; fp32, fp64 for fp64 inputs) or None.
    """
    B, T, H, K, V, bounds = check_sequence_inputs(q, k, v, g, beta, initial_state, mask, cu_seqlens)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int >= 1, got {chunk_size!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend={backend!r} is not valid; choose one of {list(_BACKENDS)}")
    scale = resolve_scale(scale, K)
    g, beta = apply_mask(g, beta, mask)
    use_fla = backend == "fla" or (backend == "auto" and _fla_applies(q))
    if use_fla and g.numel() and not bool((g >= FLA_MIN_G).all()):
        if backend == "fla":
            raise ValueError(f"backend='fla' needs g >= FLA_MIN_G = {FLA_MIN_G} (got min {g.min().item():.4g}): "
                             "its kernel subtracts in-chunk cumsums, which a hard reset (-inf) turns into NaN; "
                             "use backend='auto' or 'torch'")
        use_fla = False
    if use_fla:
        return delta_rule_fla(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                              output_final_state=output_final_state, cu_seqlens=cu_seqlens)
    dtype, out_dtype = compute_dtype(q, k, v, g, beta), v.dtype
    if T == 0 or B * H == 0:  # nothing to compute (an empty batch would leave no chunk-heads to group)
        n = B if bounds is None else len(bounds) - 1
        S = q.new_zeros(n, H, K, V, dtype=dtype) if initial_state is None else initial_state.to(dtype)
        return v.new_zeros(B, T, H, V), (S if output_final_state else None)
    longest = T if bounds is None else max(b - a for a, b in pairwise(bounds))
    C = min(chunk_size, longest)
    o, S = _chunk_forward(q, k, v, g, beta, initial_state, scale=scale, chunk=C, dtype=dtype, bounds=bounds)
    return o.to(out_dtype), (S if output_final_state else None)


def _fla_applies(q: torch.Tensor) -> bool:
    if not q.is_cuda or q.dtype == torch.float64:
        return False
    return fla_available()


def _bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for equal leading dims, as one ``bmm`` on flattened views: ``torch.matmul`` on these 5-d chunk
    views copies an operand first (2x slower for ``Q K^T`` at C = 64, measured)."""
    return torch.bmm(a.flatten(0, -3), b.flatten(0, -3)).view(*a.shape[:-1], b.shape[-1])


def _to_chunks(*xs: torch.Tensor, pad: int, chunk: int, index: torch.Tensor | None = None) -> torch.Tensor:
    """``[B, T, H, *D]`` tensors -> ``[N, B, H, m C, *D]`` (time padded with zeros to N * C): each chunk holds
    the C rows of the first tensor, then of the second, ... (one copy in all). With ``index`` (the packed
    layout of ``_Varlen``) time step i of the result is step ``index[i]`` of x, or zero where it is ``T``."""
    views = []
    for x in xs:
        x = x.transpose(1, 2)  # [B, H, T, *D]
        if index is not None:
            x = F.pad(x, (0, 0, 0, 1) if x.dim() == 4 else (0, 1)).index_select(2, index)
        elif pad:
            x = F.pad(x, (0, 0, 0, pad) if x.dim() == 4 else (0, pad))
        B, H, Tp = x.shape[:3]
        views.append(x.reshape(B, H, Tp // chunk, chunk, *x.shape[3:]).movedim(2, 0))
    return torch.cat(views, dim=3) if len(views) > 1 else views[0].contiguous()


@dataclass
class _Varlen:
    """The chunk-aligned layout of packed sequences (``cu_seqlens``) for ``_chunk_forward``.

    ``index [Tp]``: for each padded step, its packed step (``T`` = a zero identity step); ``out [T]``: for each
    packed step, its padded step. ``starts`` maps a chunk that begins a sequence to that sequence's initial
    state ``[H, K, V]``; ``ends`` holds the last chunk of each sequence, after which ``finals`` gets its state.
    """

    index: torch.Tensor
    out: torch.Tensor
    starts: dict[int, torch.Tensor]
    ends: set[int]
    finals: list[torch.Tensor] = field(default_factory=list)

    @classmethod
    def build(cls, bounds: list[int], chunk: int, init: torch.Tensor) -> _Varlen:
        """``bounds`` from ``check_cu_seqlens``; ``init [N, H, K, V]`` the initial states (B = 1)."""
        device, T = init.device, bounds[-1]
        n_chunks = [-(-(b - a) // chunk) for a, b in pairwise(bounds)]
        first = list(accumulate([0, *n_chunks[:-1]]))  # the chunk where each sequence starts
        cu = torch.tensor(bounds, device=device)
        seq = torch.repeat_interleave(torch.arange(len(n_chunks), device=device), cu.diff())  # [T]
        steps = torch.arange(T, device=device)
        out = (torch.tensor(first, device=device) * chunk - cu[:-1])[seq] + steps
        index = torch.full((chunk * sum(n_chunks),), T, device=device).scatter_(0, out, steps)
        return cls(index=index, out=out, starts=dict(zip(first, init.unbind(0), strict=True)),
                   ends={f + n - 1 for f, n in zip(first, n_chunks, strict=True)})


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
    bounds: list[int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, H, K = q.shape
    V = v.shape[-1]
    pad = -T % chunk
    varlen = None
    if bounds is not None:  # B == 1: every sequence starts a chunk, its tail padded to the chunk's end
        init = q.new_zeros(len(bounds) - 1, H, K, V, dtype=dtype) if initial_state is None else initial_state
        varlen = _Varlen.build(bounds, chunk, init.to(dtype))
    index = None if varlen is None else varlen.index
    # Padded tail steps have g = 0 and beta = 0: identity steps, so the final state is unaffected.
    # The output is linear in q: the query scale is applied once, in the last product.
    qk = _to_chunks(q.to(dtype), k.to(dtype), pad=pad, chunk=chunk, index=index)  # [N, B, H, 2C, K]: Q, K rows
    v, g, beta = (_to_chunks(t.to(dtype), pad=pad, chunk=chunk, index=index) for t in (v, g, beta))
    S = qk.new_zeros(B, H, K, V) if initial_state is None or varlen is not None else initial_state.to(dtype)
    # Groups of chunks small enough to stay in cache (~GROUP_MATRICES chunk-heads each): every step, forward
    # and backward, then works on cache-resident tensors instead of streaming [N, B, H, C, C] through memory.
    group = max(1, GROUP_MATRICES // (B * H))
    # Without an autograd graph (inference, decoding prefill) temporaries can be overwritten in place.
    inplace = not (torch.is_grad_enabled()
                   and any(t is not None and t.requires_grad for t in (q, k, v, g, beta, initial_state)))
    outs, first = [], 0
    # split (not x[a:b]): its backward concatenates once instead of zero-filling a full-size grad per group
    for qk_g, v_g, g_g, beta_g in zip(*(t.split(group) for t in (qk, v, g, beta)), strict=True):
        o, S = _chunk_group(qk_g, v_g, g_g, beta_g, S, scale=scale, inplace=inplace, varlen=varlen, first=first)
        outs.append(o)
        first += qk_g.shape[0]
    # [n, B, H, C, V] groups -> [B, N, C, H, V] = [B, T, H, V] in one copy (and a contiguous result)
    o = torch.cat([o.permute(1, 0, 3, 2, 4) for o in outs], dim=1).flatten(1, 2)
    if varlen is not None:
        return o.index_select(1, varlen.out), torch.stack(varlen.finals)
    return o[:, :T], S


def _chunk_group(
    qk: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, S: torch.Tensor, *, scale: float,
    inplace: bool, varlen: _Varlen | None = None, first: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One group of chunks ``[n, B, H, C, *]`` (qk: ``[n, B, H, 2C, K]``, Q rows then K rows; g: log decays)
    from state S -> (o, new S). With ``varlen`` (B = 1), chunk ``first + i`` that starts a sequence starts
    from that sequence's initial state instead of S, and a sequence's last chunk records its final state."""
    chunk, K = g.shape[-1], qk.shape[-1]
    B, H, _, V = S.shape
    gam = g.cumsum(-1)  # [n, B, H, C], in-chunk cumsum; -inf after a hard reset
    last = gam[..., -1:]  # [n, B, H, 1], the most negative cumsum of each chunk (g <= 0)
    if _factorable(qk, beta, last):
        kd = qk[..., chunk:, :] * (last - gam).exp()[..., None]  # K e^{gam_C - gam}: [n, B, H, C, K]
        q_s, kb, P, A = _intra_factored(qk, kd, gam, beta, last, inplace=inplace)
    else:
        q_s, kb, P, A, kd = _intra_exact(qk, g, gam, beta)
    if inplace:  # diag(beta) [K e^gam | V], written straight into one buffer
        rhs = torch.empty((*v.shape[:-1], K + V), dtype=v.dtype, device=v.device)
        rhs[..., :K].copy_(kb)
        torch.mul(v, beta[..., None], out=rhs[..., K:])
    else:
        rhs = torch.cat([kb, v * beta[..., None]], dim=-1)
    WU = unit_lower_solve(A, rhs)  # [W | U] = (I + A)^-1 rhs: [n, B, H, C, K + V]
    PW, PU = _bmm(P, WU).split([K, V], dim=-1)
    q_eff = q_s.sub_(PW) if inplace else q_s - PW  # q_s (a view of a temporary) is not read again
    KW, KU = _bmm(kd.transpose(-1, -2), WU).split([K, V], dim=-1)  # [n, B, H, K, K] and [n, B, H, K, V]
    decay = last.exp()[..., None]  # [n, B, H, 1, 1]
    states = []
    # S <- e^{gam_C} S + Bn - (Kd^T W) S; unbind (not x[i]) so the backward stacks per-chunk grads once
    # instead of n full-size scatters. baddbmm_ in place on the fresh addcmul result: 3-4x faster than an
    # out-of-place baddbmm or bmm on these [B H, 64, 64] products (measured, 2 threads).
    per_chunk = (t.flatten(1, 2).unbind(0) for t in (decay, KW, KU))
    S = S.flatten(0, 1)  # [B H, K, V]
    for i, (d_i, KW_i, B_i) in enumerate(zip(*per_chunk, strict=True), start=first):
        if varlen is not None and i in varlen.starts:
            S = varlen.starts[i]  # [H, K, V] = [B H, K, V] for B = 1
        states.append(S)
        S = torch.addcmul(B_i, d_i, S).baddbmm_(KW_i, S, alpha=-1)
        if varlen is not None and i in varlen.ends:
            varlen.finals.append(S)
    o = torch.baddbmm(PU.flatten(0, 2), q_eff.flatten(0, 2), torch.stack(states).flatten(0, 1),
                      beta=scale, alpha=scale)
    return o.view(*q_s.shape[:-1], V), S.view(B, H, K, V)


def _factorable(qk: torch.Tensor, beta: torch.Tensor, last: torch.Tensor) -> bool:
    """Whether ``_intra_factored`` is exact for this group: the total decay is at most ``_MAX_FACTORED_DECAY``,
    ``K e^{-gam}`` and the ``Q K^T`` products (bounded with ``m = max |q|, |k|``) stay ``_FACTOR_MARGIN`` below
    overflow, and the row scales ``beta e^{gam}`` of rows that write as far above underflow. One host sync."""
    qk, beta, last = qk.detach(), beta.detach(), last.detach()  # a decision: no autograd graph
    info = torch.finfo(qk.dtype)
    decay = -last.amin()  # >= 0; inf after a hard reset
    lo, hi = qk.aminmax()  # one pass over the contiguous group (a per-row max costs 2x, vector_norm 100x)
    log_m = torch.maximum(-lo, hi).log()
    log_beta = torch.where(beta > 0, beta, 1.0).amin().log()
    big, tiny = math.log(info.max) - _FACTOR_MARGIN, math.log(info.tiny) + _FACTOR_MARGIN
    ok = ((decay <= _MAX_FACTORED_DECAY) & (math.log(qk.shape[-1]) + 2 * log_m + decay <= big)
          & (log_beta - decay >= tiny))
    return bool(ok)


def _intra_factored(
    qk: torch.Tensor, kd: torch.Tensor, gam: torch.Tensor, beta: torch.Tensor, last: torch.Tensor, *,
    inplace: bool,
) -> tuple[torch.Tensor, ...]:
    """In-chunk terms with ``Gam_ij = e^{gam_i} e^{-gam_j}`` folded into the matmul operands, so no
    elementwise pass touches a ``[C, C]`` tensor but one mask; only valid while ``e^{-gam}`` stays finite
    (``|gam_C| <= _MAX_FACTORED_DECAY``). Returns ``Q e^gam``, ``diag(beta) K e^gam``, ``P`` and ``A``."""
    chunk = gam.shape[-1]
    e_gam = gam.exp()
    lhs = qk * torch.cat([e_gam, e_gam * beta], dim=-1)[..., None]  # [Q e^gam; diag(beta) K e^gam]
    k_neg = kd * (-last).exp()[..., None]  # K e^{-gam}
    QK, A = _bmm(lhs, k_neg.transpose(-1, -2)).split(chunk, dim=-2)  # (Q K^T) * Gam, diag(beta)(K K^T) * Gam
    mask = torch.ones(chunk, chunk, dtype=QK.dtype, device=QK.device).tril()
    # A's upper part (up to e^{|gam_C|} |k|^2, finite) is never read by unit_lower_solve; P's is zeroed.
    q_s, kb = lhs.split(chunk, dim=-2)
    return q_s, kb, (QK.mul_(mask) if inplace else QK * mask), A


def _intra_exact(
    qk: torch.Tensor, g: torch.Tensor, gam: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """In-chunk terms for any decay strength and key size. ``log Gam_ij = sum_{j < t <= i} g_t`` is summed over
    its own span (a cumsum of ``g_i [i > j]`` down each column), never as ``gam_i - gam_j``: sums of
    non-positive terms cannot give ``-inf - -inf`` or cancel. ``beta`` scales K before ``K K^T``, so the
    products stay of the size of ``A``. Returns ``Q e^gam``, ``diag(beta) K e^gam``, ``P``, ``A`` and
    ``K e^{gam_C - gam}`` (the last row of ``Gam``)."""
    chunk = gam.shape[-1]
    q, k = qk.split(chunk, dim=-2)
    tril = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).tril()
    span = g[..., :, None].expand(*g.shape, chunk).masked_fill(~tril.tril(-1), 0.0).cumsum(-2)
    Gam = span.masked_fill_(~tril, float("-inf")).exp_()  # [n, B, H, C, C]
    qb = qk * torch.cat([torch.ones_like(beta), beta], dim=-1)[..., None]  # [Q; diag(beta) K]
    QK, A = _bmm(qb, k.transpose(-1, -2)).split(chunk, dim=-2)  # [n, B, H, C, C] each
    # A's diagonal (and, via Gam, its upper part) is never read by unit_lower_solve: no tril needed.
    e_gam = gam.exp()[..., None]
    kd = k * Gam[..., -1, :, None]
    return q * e_gam, qb[..., chunk:, :] * e_gam, QK * Gam, A * Gam, kd
