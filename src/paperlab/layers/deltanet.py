"""Gated DeltaNet / Kaczmarz Linear Attention mixer (KLA, arXiv 2605.08587; layer and variants per the authors' code).

One layer serves GDN, KLA and every ablation of the authors' ``norm_mode`` table; ``mode`` names what is computed:

| mode               | q / k            | beta                          |
|--------------------|------------------|-------------------------------|
| ``kla`` (default)  | L2 / raw         | eta / (||k||^2 + eps)         |
| ``gdn``            | L2 / L2          | eta                           |
| ``kla_no_qnorm``   | raw / raw        | eta / (||k||^2 + eps)         |
| ``kaczmarz``       | raw / raw        | 1 / (||k||^2 + eps) (the authors' ``k_norm_only``, the paper's "w/o Q-Norm") |
| ``no_norm``        | raw / raw        | eta                           |
| ``seq_only``       | raw / raw        | 1 / t                         |
| ``learned_scalar`` | raw / raw        | eta / (softplus(c) ||k||^2 + eps), c0 = softplus^-1(1) |
| ``longhorn``       | raw / raw        | eta / (1 + eta ||k||^2)       |
| ``deltanet_softmax`` | softmax / softmax (no SiLU) | eta; decay logsigmoid(a) / 16 |

``eta = sigmoid(b_proj x)``; decay ``g = -exp(A_log) softplus(a_proj x + dt_bias)`` (Mamba2 style) or, with
``gate_mode="single"``, ``alpha = 1 - eta``. ``seq_factor`` multiplies beta by 1/t, 1/sqrt(t) or 1/log(1+t) with
t the absolute (1-based) position of the token among real tokens (the authors' code counts within each forward
call; we count across calls so decoding equals one pass). Per the authors' code, not the paper text.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from paperlab._validate import check_positive
from paperlab.layers.conv import ShortConv
from paperlab.layers.norm import GatedRMSNorm
from paperlab.layers.varlen import PackedSeqs, check_packed_call
from paperlab.ops.delta_rule import delta_rule_chunk, delta_rule_step
from paperlab.ops.delta_rule._checks import check_eps, check_mask_values

__all__ = ["DELTANET_MODES", "DeltaNetMixer", "DeltaNetState", "GATE_MODES", "NonFiniteActivationError", "SEQ_FACTORS"]

# mode -> (q norm, k norm, beta rule)
_MODES: dict[str, tuple[str, str, str]] = {
    "kla": ("l2", "raw", "kla"),
    "gdn": ("l2", "l2", "eta"),
    "kla_no_qnorm": ("raw", "raw", "kla"),
    "kaczmarz": ("raw", "raw", "kaczmarz"),
    "no_norm": ("raw", "raw", "eta"),
    "seq_only": ("raw", "raw", "inv_t"),
    "learned_scalar": ("raw", "raw", "learned"),
    "longhorn": ("raw", "raw", "longhorn"),
    "deltanet_softmax": ("softmax", "softmax", "eta"),
}
DELTANET_MODES = tuple(_MODES)
SEQ_FACTORS = ("none", "1/t", "1/sqrt(t)", "1/log(1+t)")
GATE_MODES = ("mamba2", "single")


class NonFiniteActivationError(ValueError, FloatingPointError):
    """The layer's own activations (decays, keys) became NaN/inf or overflowed, e.g. an unnormalised model run past
    the lengths it was trained on. A ``ValueError`` (the op refused its inputs) and a ``FloatingPointError`` (a
    numeric failure), so a training loop or an evaluation can treat it as a diverged model."""


@dataclass(frozen=True)
class DeltaNetState:
    """Decode state of one DeltaNetMixer: conv caches ``[B, C, conv_size - 1]``, the recurrent matrix
    ``[B, H, K, V]`` (fp32, fp64 for fp64 models) and the count of real tokens seen ``[B]`` (int64)."""

    conv_q: torch.Tensor
    conv_k: torch.Tensor
    conv_v: torch.Tensor
    recurrent: torch.Tensor
    position: torch.Tensor


def _l2(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.square().sum(-1, keepdim=True) + 1e-6)


def _autocast_off(device: torch.device) -> contextlib.AbstractContextManager[object]:
    """Autocast switched off on ``device`` while it is on (its matmuls would run in bf16/fp16); else a no-op."""
    if torch.amp.is_autocast_available(device.type) and torch.is_autocast_enabled(device.type):
        return torch.autocast(device.type, enabled=False)
    return contextlib.nullcontext()


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _head_dim(name: str, given: object, expand_name: str, expand: object, d_model: int, n_heads: int) -> int:
    """``given`` if set, else ``int(expand * d_model) // n_heads``; the errors name the argument that was passed."""
    if given is not None:
        return _check_int(name, given, 1)
    check_positive(expand_name, expand)
    dim = int(expand * d_model) // n_heads  # type: ignore[operator]  # a finite number > 0 (checked above)
    if dim < 1:
        raise ValueError(f"{expand_name}={expand!r} gives {name} = int({expand!r} * d_model={d_model}) // "
                         f"n_heads={n_heads} = {dim}, but it must be >= 1; raise {expand_name} or pass {name}")
    return dim


class DeltaNetMixer(nn.Module):
    """KLA / Gated DeltaNet sequence mixer: ``forward(x [B, T, D], *, state, attention_mask) -> (y, state)``.

    Args:
        d_model: model width D (divisible by n_heads).
        n_heads: number of heads H.
        mode: one of ``DELTANET_MODES`` (table above); default ``"kla"``.
        head_dim_k, head_dim_v: per-head key / value sizes; default ``expand_k * D / H`` and ``expand_v * D / H``.
        expand_k, expand_v: 0.75 and 1.5 as in the authors' code.
        conv_size: short-conv length (default 4; the decode cache holds conv_size - 1 tokens).
        eps: the epsilon in ``||k||^2 + eps`` (default 1e-6; the write gain peaks at eta / (2 sqrt(eps))); finite
            and ``>= torch.finfo(torch.float32).tiny`` (~1.18e-38), so a zero key gives a finite beta.
        norm_eps: eps of the output RMSNorm (default 1e-5; a finite number > 0).
        seq_factor: one of ``SEQ_FACTORS``; gate_mode: one of ``GATE_MODES``.
        chunk_size: chunk length of ``delta_rule_chunk`` for full sequences (T == 1 uses ``delta_rule_step``).
    """

    def __init__(self, d_model: int, n_heads: int, *, mode: str = "kla", head_dim_k: int | None = None,
                 head_dim_v: int | None = None, expand_k: float = 0.75, expand_v: float = 1.5, conv_size: int = 4,
                 eps: float = 1e-6, norm_eps: float = 1e-5, seq_factor: str = "none", gate_mode: str = "mamba2",
                 chunk_size: int = 64) -> None:
        super().__init__()
        _check_int("d_model", d_model, 1)
        _check_int("n_heads", n_heads, 1)
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        for name, val, choices in (("mode", mode, DELTANET_MODES), ("seq_factor", seq_factor, SEQ_FACTORS),
                                   ("gate_mode", gate_mode, GATE_MODES)):
            if val not in choices:
                raise ValueError(f"{name}={val!r} is not valid; choose one of {list(choices)}")
        check_eps(eps)
        check_positive("norm_eps", norm_eps)
        dk = _head_dim("head_dim_k", head_dim_k, "expand_k", expand_k, d_model, n_heads)
        dv = _head_dim("head_dim_v", head_dim_v, "expand_v", expand_v, d_model, n_heads)
        self.d_model, self.n_heads, self.mode, self.head_dim_k, self.head_dim_v = d_model, n_heads, mode, dk, dv
        self.eps, self.seq_factor, self.gate_mode = float(eps), seq_factor, gate_mode
        self.chunk_size = _check_int("chunk_size", chunk_size, 1)
        self.q_norm, self.k_norm, self.beta_rule = _MODES[mode]
        H = n_heads
        self.q_proj = nn.Linear(d_model, H * dk, bias=False)
        self.k_proj = nn.Linear(d_model, H * dk, bias=False)
        self.v_proj = nn.Linear(d_model, H * dv, bias=False)
        self.g_proj = nn.Linear(d_model, H * dv, bias=False)
        self.o_proj = nn.Linear(H * dv, d_model, bias=False)
        self.b_proj = nn.Linear(d_model, H, bias=True)
        nn.init.zeros_(self.b_proj.bias)  # eta ~ 0.5 at init
        qk_act = None if mode == "deltanet_softmax" else "silu"
        conv_size = _check_int("conv_size", conv_size, 1)
        self.conv_q = ShortConv(H * dk, conv_size, activation=qk_act)
        self.conv_k = ShortConv(H * dk, conv_size, activation=qk_act)
        self.conv_v = ShortConv(H * dv, conv_size, activation="silu")
        self.norm = GatedRMSNorm(dv, eps=norm_eps)
        if gate_mode == "mamba2":
            self.a_proj = nn.Linear(d_model, H, bias=False)
            if mode != "deltanet_softmax":
                self._init_mamba2_decay(H)
        if self.beta_rule == "learned":
            self.c = nn.Parameter(torch.full((H,), math.log(math.e - 1.0)))  # softplus(c0) = 1

    def _init_mamba2_decay(self, H: int) -> None:
        # A ~ U(0, 16) (kept away from 0 so log A is finite); dt log-uniform in [1e-3, 0.1], floored at 1e-4.
        A = torch.empty(H).uniform_(0, 16).clamp_min(1e-4)
        dt = torch.exp(torch.empty(H).uniform_(math.log(1e-3), math.log(0.1))).clamp_min(1e-4)
        self.A_log = nn.Parameter(A.log())
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)
        self.A_log._no_weight_decay = True  # type: ignore[attr-defined]
        self.dt_bias._no_weight_decay = True  # type: ignore[attr-defined]

    def no_weight_decay(self) -> set[str]:
        """Names of parameters that get no weight decay (A_log and dt_bias, as in the authors' code)."""
        return {n for n, p in self.named_parameters() if getattr(p, "_no_weight_decay", False)}

    def state_size(self, batch: int) -> int:
        """Bytes of decode state for ``batch`` sequences: conv caches + fp32 recurrent matrix + positions."""
        _check_int("batch", batch, 1)
        H, dk, dv = self.n_heads, self.head_dim_k, self.head_dim_v
        item = self.q_proj.weight.element_size()
        conv = (2 * H * dk + H * dv) * (self.conv_q.kernel_size - 1) * item
        rec = H * dk * dv * max(item, 4)
        return batch * (conv + rec + 8)

    def initial_state(self, batch: int, *, max_len: int = 0) -> DeltaNetState:
        """The zero state (what ``state=None`` means). ``max_len`` is part of the mixer contract (attention
        preallocates its cache for it); the recurrent state has a fixed size, so it allocates nothing more."""
        _check_int("max_len", max_len, 0)
        w = self.q_proj.weight
        H, dk, dv = self.n_heads, self.head_dim_k, self.head_dim_v
        rec_dtype = torch.promote_types(w.dtype, torch.float32)
        return DeltaNetState(
            conv_q=self.conv_q.empty_cache(batch), conv_k=self.conv_k.empty_cache(batch),
            conv_v=self.conv_v.empty_cache(batch),
            recurrent=torch.zeros(batch, H, dk, dv, dtype=rec_dtype, device=w.device),
            position=torch.zeros(batch, dtype=torch.long, device=w.device),
        )

    def _check_x(self, x: object) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a [B, T, {self.d_model}] torch.Tensor, got {type(x).__name__}")
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must be [B, T, {self.d_model}], got {tuple(x.shape)}")
        dtype = self.q_proj.weight.dtype
        if not x.is_floating_point():
            raise ValueError(f"x must be a floating tensor in the layer's dtype {dtype}, got {x.dtype}")
        autocast = torch.amp.is_autocast_available(x.device.type) and torch.is_autocast_enabled(x.device.type)
        if x.dtype != dtype and not autocast:
            raise ValueError(f"x has dtype {x.dtype} but the layer's parameters are {dtype}: cast x "
                             f"(x.to({dtype})) or the layer (layer.to({x.dtype}))")

    def _check_state(self, state: object, batch: int) -> DeltaNetState:
        if not isinstance(state, DeltaNetState):
            raise ValueError(f"state must be a DeltaNetState from this layer, got {type(state).__name__}")
        want = (batch, self.n_heads, self.head_dim_k, self.head_dim_v)
        if tuple(state.recurrent.shape) != want or state.conv_q.shape != (batch, *self.conv_q.empty_cache(1).shape[1:]):
            raise ValueError(f"state does not fit this layer and batch: recurrent {tuple(state.recurrent.shape)}, "
                             f"expected {want}")
        return state

    def _decay(self, x: torch.Tensor, eta_logit: torch.Tensor) -> torch.Tensor:
        dtype = torch.promote_types(x.dtype, torch.float32)  # gates in fp32 (fp64 for fp64 models)
        if self.gate_mode == "single":
            return F.logsigmoid(-eta_logit.to(dtype))  # alpha = 1 - sigmoid(b)
        a = self.a_proj(x).to(dtype)
        if self.mode == "deltanet_softmax":
            return F.logsigmoid(a) / 16
        return -self.A_log.to(dtype).exp() * F.softplus(a + self.dt_bias.to(dtype))

    def _beta(self, eta: torch.Tensor, k: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """eta ``[B, T, H]`` (fp32), raw k ``[B, T, H, K]``, 1-based positions t ``[B, T]`` -> beta (fp32)."""
        dtype = torch.promote_types(k.dtype, torch.float32)
        eta = eta.to(dtype)
        k2 = k.to(dtype).square().sum(-1)
        rule = self.beta_rule
        if rule == "kla":
            beta = eta / (k2 + self.eps)
        elif rule == "kaczmarz":
            beta = 1.0 / (k2 + self.eps)
        elif rule == "inv_t":
            beta = (1.0 / t.to(dtype))[..., None].expand_as(eta)
        elif rule == "learned":
            beta = eta / (F.softplus(self.c.to(dtype)) * k2 + self.eps)
        elif rule == "longhorn":
            beta = eta / (1.0 + eta * k2)
        else:
            beta = eta
        tf = t.to(dtype)[..., None]
        if self.seq_factor == "1/t":
            beta = beta / tf
        elif self.seq_factor == "1/sqrt(t)":
            beta = beta / tf.sqrt()
        elif self.seq_factor == "1/log(1+t)":
            beta = beta / torch.log1p(tf)
        return beta

    def _qk(self, x: torch.Tensor, how: str) -> torch.Tensor:
        if how == "l2":
            return _l2(x)
        if how == "softmax":
            return x.softmax(-1)
        return x

    def forward(self, x: torch.Tensor, *, state: DeltaNetState | None = None,
                attention_mask: torch.Tensor | None = None,
                cu_seqlens: torch.Tensor | None = None) -> tuple[torch.Tensor, DeltaNetState]:
        """Mix ``x [B, T, D]``; ``attention_mask [B, T]`` (1 = real token, 0 = padding, padding on the left).

        ``x`` must be floating, in the layer's dtype (any dtype autocast casts, while it is on);
        ``attention_mask`` bool or 0/1.

        ``cu_seqlens`` (``[N + 1]`` cumulative starts of N sequences packed into ``x [1, T, D]``, as in
        flash-linear-attention's layers): each sequence runs as if alone (zero state, zero conv window and
        positions restarting at 1 at its start). It cannot be combined with ``state`` or a padding
        ``attention_mask``; the returned state is that of the N sequences as a batch of N.

        Returns ``(y [B, T, D], state)``; padded steps leave the recurrent state and conv caches unchanged.
        """
        self._check_x(x)
        B, T, _ = x.shape
        packed = None
        if cu_seqlens is not None:
            check_packed_call("DeltaNetMixer", state=state, attention_mask=None)
            packed = PackedSeqs.from_cu_seqlens(cu_seqlens, B, T, x.device)
        state = self.initial_state(B) if state is None else self._check_state(state, B)
        mask = None
        if attention_mask is not None:
            if not isinstance(attention_mask, torch.Tensor):
                raise TypeError(f"attention_mask must be a [B, T] torch.Tensor, got {type(attention_mask).__name__}")
            if attention_mask.shape != (B, T):
                raise ValueError(f"attention_mask must be [B, T] = {(B, T)}, got {tuple(attention_mask.shape)}")
            check_mask_values("attention_mask", attention_mask)  # a host sync for non-bool masks only
            mask = attention_mask.to(torch.bool)
            if packed is not None:
                check_packed_call("DeltaNetMixer", state=None, attention_mask=mask)
                mask = None  # all ones: nothing to mask
            else:
                x = x * mask[..., None].to(x.dtype)
        H, dk, dv = self.n_heads, self.head_dim_k, self.head_dim_v
        if packed is not None:
            q, cq = self.conv_q.forward_packed(self.q_proj(x), packed)
            k, ck = self.conv_k.forward_packed(self.k_proj(x), packed)
            v, cv = self.conv_v.forward_packed(self.v_proj(x), packed)
        else:
            q, cq = self.conv_q(self.q_proj(x), cache=state.conv_q, mask=mask)
            k, ck = self.conv_k(self.k_proj(x), cache=state.conv_k, mask=mask)
            v, cv = self.conv_v(self.v_proj(x), cache=state.conv_v, mask=mask)
        # The q/k feature maps, beta and the delta rule run in fp32 (fp64 for fp64 models) with autocast off:
        # under autocast the op's matmuls would run in bf16/fp16 (on mixed dtypes), while the recurrent state
        # sums over the whole sequence and needs fp32. For fp32 models every cast is a no-op.
        out_dtype = v.dtype  # the projections' dtype: the model's, or the autocast dtype
        dtype = torch.promote_types(out_dtype, torch.float32)
        q = self._qk(q.view(B, T, H, dk).to(dtype), self.q_norm)
        k = self._qk(k.view(B, T, H, dk).to(dtype), self.k_norm)
        v = v.view(B, T, H, dv).to(dtype)
        eta_logit = self.b_proj(x)
        if packed is not None:
            t = packed.pos[None] + 1  # 1-based position within each packed sequence
        else:
            real = torch.ones(B, T, dtype=torch.long, device=x.device) if mask is None else mask.long()
            t = state.position[:, None] + real.cumsum(1)  # 1-based position among real tokens
        beta = self._beta(torch.sigmoid(eta_logit.to(torch.promote_types(x.dtype, torch.float32))), k,
                          t.clamp_min(1))
        g = self._decay(x, eta_logit)
        S0 = state.recurrent
        with _autocast_off(x.device):
            try:
                o, S = self._delta_rule(q, k, v, g, beta, S0, mask, packed)
            except ValueError as exc:  # the op's data checks (NaN decays, overflowing keys) name its own inputs
                raise NonFiniteActivationError(f"the delta rule refused the inputs computed from x (NaN/inf in x, or x "
                                               f"so large that its keys overflow {k.dtype}): {exc}") from exc
        y = self.norm(o.to(out_dtype), self.g_proj(x).view(B, T, H, dv))
        y = self.o_proj(y.reshape(B, T, H * dv))
        position = packed.lengths if packed is not None else t[:, -1] if T else state.position
        new = DeltaNetState(conv_q=cq, conv_k=ck, conv_v=cv, recurrent=S, position=position)
        return y, new

    def _delta_rule(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
                    S0: torch.Tensor, mask: torch.Tensor | None,
                    packed: PackedSeqs | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """One step (T == 1, ``delta_rule_step``) or the chunked op; returns ``(o [B, T, H, V], S)``. Packed
        sequences start from zeros and give one final state each, ``[N, H, K, V]``."""
        if packed is not None:
            o, S_packed = delta_rule_chunk(q, k, v, g, beta, output_final_state=True, chunk_size=self.chunk_size,
                                           cu_seqlens=packed.cu_seqlens)
            assert S_packed is not None  # output_final_state=True always returns it
            return o, S_packed
        if q.shape[1] == 1:
            o, S = delta_rule_step(q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta[:, 0], S0,
                                   mask=None if mask is None else mask[:, 0])
            o = o[:, None]
        else:
            o, S_final = delta_rule_chunk(q, k, v, g, beta, initial_state=S0, output_final_state=True, mask=mask,
                                          chunk_size=self.chunk_size)
            assert S_final is not None  # output_final_state=True always returns it
            S = S_final
        return o, S

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, mode={self.mode!r}, head_dim_k={self.head_dim_k}, "
                f"head_dim_v={self.head_dim_v}, seq_factor={self.seq_factor!r}, gate_mode={self.gate_mode!r}")
