"""Causal softmax attention with rotary position embeddings (RoPE) and a KV cache.

Our Transformer baseline for the KLA experiments (not in arXiv 2605.08587; context for decode and length
extrapolation); it follows the mixer contract ``forward(x, *, state=None, attention_mask=None) -> (y, state)``.

Left padding: each sequence's positions count only its real tokens (position = number of real tokens before
it, plus those already in the cache), so a padded batch gives the same outputs as one sequence at a time.
Padded keys are masked out and padded query rows output zeros; the cache keeps their (masked) slots, so
padding never changes what real tokens see.

Decoding writes each step's keys into preallocated cache storage instead of concatenating (a ``torch.cat`` per
step copies the whole cache: at 16K tokens that copy took about 58% of a decode step, twice the attention).
Under ``torch.autocast`` the cache holds keys in the autocast dtype; RoPE angles are computed in fp32 for any
input below fp32 (bf16 rounds position 1000 to a multiple of 4, turning the fastest pair by up to 2 radians).

Packed sequences (``cu_seqlens``, B = 1): a block-diagonal causal mask and RoPE positions restarting at 0 at each
sequence start; the returned cache holds the N sequences as a left-padded batch of N, ready to continue them.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from paperlab._validate import check_int, check_positive
from paperlab.layers.varlen import PackedSeqs, check_packed_call

__all__ = ["Attention", "KVCache", "apply_rope", "check_attention_mask"]


class _Storage:
    """Preallocated keys / values ``[B, H, capacity, Dh]`` and mask ``[B, capacity]`` shared by the caches that
    view a prefix of them. ``views`` holds those caches weakly: a cache may write past its end in place exactly
    when no live cache already uses those slots (so an older state stays valid to branch from)."""

    __slots__ = ("k", "mask", "v", "views")

    def __init__(self, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> None:
        self.k, self.v, self.mask = k, v, mask
        self.views: weakref.WeakSet[KVCache] = weakref.WeakSet()


@dataclass(frozen=True, eq=False)
class KVCache:
    """Keys (already rotated) and values of every cached step, plus which slots are real tokens.

    Attributes:
        k, v: ``[B, H, L, Dh]`` (views of a larger preallocated storage when decoding without autograd).
        mask: ``[B, L]`` bool, True for real tokens (padded slots stay masked forever).
        pos: ``[B]`` long, number of real tokens seen so far (the next token's RoPE position).
        reserve: slots to allocate, at least, when storage is first allocated (``Attention.initial_state``).
    """

    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor
    pos: torch.Tensor
    reserve: int = 0
    _storage: _Storage | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self._storage is not None:
            self._storage.views.add(self)

    @property
    def length(self) -> int:
        """Number of cached slots ``L`` (real and padded)."""
        return self.k.shape[2]

    @property
    def capacity(self) -> int:
        """Slots allocated: ``L`` plus the room left for in-place appends."""
        return self.length if self._storage is None else self._storage.k.shape[2]

    def append(self, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> KVCache:
        """This cache followed by ``k, v [B, H, T, Dh]`` and ``mask [B, T]``, with ``pos [B]`` as its position.

        Without autograd the new slots are written into the storage, in place when it has room and no live
        cache uses them yet, otherwise into fresh storage of at least twice the capacity (amortized O(1) per
        token). When autograd records (an input requires grad) the cache is concatenated instead, so no tensor
        saved for backward is ever overwritten.
        """
        n, t = self.length, k.shape[2]
        if torch.is_grad_enabled() and any(x.requires_grad for x in (k, v, self.k, self.v)):
            # .to: an empty initial cache is in the weights' dtype, the keys may come in the autocast dtype
            return KVCache(torch.cat((self.k.to(k.dtype), k), 2), torch.cat((self.v.to(v.dtype), v), 2),
                           torch.cat((self.mask, mask), 1), pos, reserve=self.reserve)
        st = self._storage
        if (st is None or st.k.dtype != k.dtype or n + t > st.k.shape[2] or any(c.length > n for c in st.views)
                or (st.k.is_inference() and not torch.is_inference_mode_enabled())):
            st = self._grow(n + t, dtype=k.dtype)  # (inference tensors may only be written in inference mode)
        st.k[:, :, n:n + t] = k
        st.v[:, :, n:n + t] = v
        st.mask[:, n:n + t] = mask
        return KVCache(st.k[:, :, :n + t], st.v[:, :, :n + t], st.mask[:, :n + t], pos, reserve=self.reserve,
                       _storage=st)

    def _grow(self, needed: int, *, dtype: torch.dtype) -> _Storage:
        """Fresh storage for ``needed`` slots at least (doubling the capacity) holding this cache's slots."""
        b, h, n, dh = self.k.shape
        cap = max(needed, self.reserve, 2 * self.capacity)
        k, v = (x.new_empty((b, h, cap, dh), dtype=dtype) for x in (self.k, self.v))
        mask = self.mask.new_zeros((b, cap))
        k[:, :, :n] = self.k
        v[:, :, :n] = self.v
        mask[:, :n] = self.mask
        return _Storage(k, v, mask)


def check_attention_mask(attention_mask: torch.Tensor | None, batch: int, steps: int,
                         device: torch.device) -> torch.Tensor:
    """Return ``attention_mask`` as a ``[B, T]`` bool tensor (all True when None).

    Raises ValueError for a wrong shape, or values other than 0/1.
    """
    if attention_mask is None:
        return torch.ones(batch, steps, dtype=torch.bool, device=device)
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a torch.Tensor, got {type(attention_mask).__name__}")
    if tuple(attention_mask.shape) != (batch, steps):
        raise ValueError(f"attention_mask must have shape [B, T] = {(batch, steps)}, "
                         f"got {tuple(attention_mask.shape)}")
    if attention_mask.dtype != torch.bool:
        if attention_mask.is_floating_point() or attention_mask.is_complex():
            raise ValueError(f"attention_mask must be bool or integer 0/1, got dtype {attention_mask.dtype}")
        if not ((attention_mask == 0) | (attention_mask == 1)).all():
            raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token)")
        attention_mask = attention_mask.bool()
    return attention_mask.to(device)


def apply_rope(x: torch.Tensor, pos: torch.Tensor, *, base: float) -> torch.Tensor:
    """Rotate feature pairs ``(i, i + Dh/2)`` of ``x [B, H, T, Dh]`` by ``pos [B, T] * base^(-2i/Dh)``.

    The angles and the rotation are computed in fp32 for inputs below fp32 and in ``x``'s dtype otherwise
    (float64 stays exact), for any position (no table limit); the result has ``x``'s dtype.
    """
    half = x.shape[-1] // 2
    dtype = torch.promote_types(x.dtype, torch.float32)
    inv_freq = base ** (-torch.arange(half, device=x.device, dtype=dtype) / half)
    angles = pos.to(dtype)[:, None, :, None] * inv_freq  # [B, 1, T, Dh/2]
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., :half].to(dtype), x[..., half:].to(dtype)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).to(x.dtype)


class Attention(nn.Module):
    """Multi-head causal softmax attention with RoPE, a KV cache and left-padding support.

    Args:
        d_model: model width ``D``; must be divisible by ``n_heads`` with an even head size.
        n_heads: number of heads ``H`` (head size ``Dh = D / H``).
        rope_base: RoPE frequency base (10000 as in RoFormer / Llama).
    """

    def __init__(self, d_model: int, n_heads: int, *, rope_base: float = 10000.0) -> None:
        super().__init__()
        check_int("d_model", d_model, minimum=1)
        check_int("n_heads", n_heads, minimum=1)
        check_positive("rope_base", rope_base)
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads} with an even head size "
                             f"(RoPE rotates feature pairs), got head size {d_model / n_heads:g}")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.rope_base = float(rope_base)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, rope_base={self.rope_base:g}"

    def state_size(self, batch: int, *, seq_len: int) -> int:
        """Bytes of the KV cache after ``seq_len`` cached tokens: ``2 * B * L * D`` elements (+ mask, pos)."""
        check_int("batch", batch, minimum=1)
        check_int("seq_len", seq_len, minimum=0)
        elem = self.o_proj.weight.element_size()
        return 2 * batch * seq_len * self.d_model * elem + batch * seq_len + 8 * batch

    def initial_state(self, batch: int, *, max_len: int = 0) -> KVCache:
        """The empty cache (what ``state=None`` means) that allocates room for ``max_len`` tokens at its first
        write, so decoding up to ``max_len`` tokens in all never copies the cache."""
        check_int("batch", batch, minimum=0)
        check_int("max_len", max_len, minimum=0)
        w = self.k_proj.weight
        empty = torch.zeros(batch, self.n_heads, 0, self.head_dim, dtype=w.dtype, device=w.device)
        return KVCache(k=empty, v=empty, mask=torch.zeros(batch, 0, dtype=torch.bool, device=w.device),
                       pos=torch.zeros(batch, dtype=torch.long, device=w.device), reserve=max_len)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, *, state: KVCache | None = None,
                attention_mask: torch.Tensor | None = None,
                cu_seqlens: torch.Tensor | None = None) -> tuple[torch.Tensor, KVCache]:
        """Attend causally over the cache and ``x``.

        Args:
            x: ``[B, T, D]``.
            state: the ``KVCache`` returned by a previous call or by ``initial_state`` (None: empty cache).
            attention_mask: ``[B, T]``, 1/True for real tokens, 0 for padding.
            cu_seqlens: ``[N + 1]`` cumulative starts of N sequences packed into ``x [1, T, D]`` (as in
                flash-linear-attention's layers): each attends only within itself, from position 0. Not with
                ``state`` or a padding ``attention_mask``.

        Returns:
            ``y [B, T, D]`` (zero at padded steps) and the extended ``KVCache`` (with ``cu_seqlens``: the cache
            of the N sequences as a left-padded batch of N).
        """
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape [B, T, {self.d_model}], got {tuple(x.shape)}")
        b, t, _ = x.shape
        mask = check_attention_mask(attention_mask, b, t, x.device)
        if cu_seqlens is not None:
            check_packed_call("Attention", state=state, attention_mask=mask)
            return self._forward_packed(x, PackedSeqs.from_cu_seqlens(cu_seqlens, b, t, x.device))
        past = self._check_state(state, x)
        start = past.pos if past is not None else torch.zeros(b, dtype=torch.long, device=x.device)
        pos = (start[:, None] + mask.long().cumsum(1) - 1).clamp_min(0)
        q = apply_rope(self._heads(self.q_proj(x)), pos, base=self.rope_base)
        k = apply_rope(self._heads(self.k_proj(x)), pos, base=self.rope_base)
        v = self._heads(self.v_proj(x))
        new_pos = start + mask.long().sum(1)
        if past is None:
            new_state = KVCache(k=k, v=v, mask=mask, pos=new_pos)
        else:
            # Under autocast the keys come out of k_proj in the autocast dtype, so check them, not x.
            if past.length and past.k.dtype != k.dtype:
                raise ValueError(f"state holds keys in {past.k.dtype} but this call computes them in {k.dtype} "
                                 "(keep autocast on, or off, for a whole sequence)")
            new_state = past.append(k, v, mask, new_pos)
        if past is None or not past.length:
            if attention_mask is None or bool(mask.all()):
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=self._allowed(mask, t))
        else:
            y = F.scaled_dot_product_attention(q, new_state.k, new_state.v,
                                               attn_mask=self._allowed(new_state.mask, t))
        y = y.transpose(1, 2).reshape(b, t, self.d_model) * mask[..., None].to(x.dtype)
        return self.o_proj(y), new_state

    def _forward_packed(self, x: torch.Tensor, packed: PackedSeqs) -> tuple[torch.Tensor, KVCache]:
        """``x [1, T, D]`` holding the sequences of ``packed``: block-diagonal causal attention, RoPE from 0 in
        each sequence. The cache lays sequence n right-aligned in ``max(lengths)`` slots (left padding)."""
        t = x.shape[1]
        pos = packed.pos[None]  # [1, T]
        q = apply_rope(self._heads(self.q_proj(x)), pos, base=self.rope_base)
        k = apply_rope(self._heads(self.k_proj(x)), pos, base=self.rope_base)
        v = self._heads(self.v_proj(x))
        steps = torch.arange(t, device=x.device)
        allowed = (steps[None, :] <= steps[:, None]) & (packed.seq[None, :] == packed.seq[:, None])  # [T, T]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed[None, None])
        idx, valid = packed.last_window(max(b - a for a, b in pairwise(packed.bounds)))
        keep = valid[:, None, :, None].to(k.dtype)
        # [1, H, T, Dh] -> [N, H, L, Dh]; padded slots are zeroed and stay masked
        k_cache, v_cache = (c[0][:, idx].transpose(0, 1) * keep for c in (k, v))
        cache = KVCache(k=k_cache, v=v_cache, mask=valid, pos=packed.lengths.clone())
        return self.o_proj(y.transpose(1, 2).reshape(1, t, self.d_model)), cache

    @staticmethod
    def _allowed(key_mask: torch.Tensor, t: int) -> torch.Tensor:
        """``[B, 1, T, L]`` bool: causal, real keys only, and each query's own slot (so pad rows are defined)."""
        total = key_mask.shape[1]
        offset = total - t
        qi = torch.arange(t, device=key_mask.device)[:, None] + offset
        kj = torch.arange(total, device=key_mask.device)[None, :]
        allowed = (kj <= qi)[None] & key_mask[:, None, :]
        allowed = allowed | (kj == qi)[None]
        return allowed[:, None]

    def _check_state(self, state: KVCache | None, x: torch.Tensor) -> KVCache | None:
        if state is None:
            return None
        if not isinstance(state, KVCache):
            raise ValueError(f"state must be the KVCache returned by Attention.forward, got {type(state).__name__}")
        expected = (x.shape[0], self.n_heads, state.length, self.head_dim)
        if tuple(state.k.shape) != expected:
            raise ValueError(f"state holds keys of shape {tuple(state.k.shape)}, expected [B, H, L, Dh] = "
                             f"{expected} for this layer and batch")
        return state
