"""Attention mixer: matches a naive reference, decodes exactly, and handles left padding."""

from __future__ import annotations

import math

import pytest
import torch

from paperlab.layers import MIXERS, Attention, KVCache
from paperlab.layers.attention import apply_rope


def _naive(layer: Attention, x: torch.Tensor) -> torch.Tensor:
    """Per-position loop: RoPE at absolute positions, explicit softmax over the causal prefix."""
    b, t, d = x.shape
    h, dh = layer.n_heads, layer.head_dim
    pos = torch.arange(t).expand(b, t)
    q = apply_rope(layer.q_proj(x).view(b, t, h, dh).transpose(1, 2), pos, base=layer.rope_base)
    k = apply_rope(layer.k_proj(x).view(b, t, h, dh).transpose(1, 2), pos, base=layer.rope_base)
    v = layer.v_proj(x).view(b, t, h, dh).transpose(1, 2)
    out = torch.zeros_like(q)
    for i in range(t):
        scores = q[:, :, i : i + 1] @ k[:, :, : i + 1].transpose(-1, -2) / math.sqrt(dh)
        out[:, :, i] = (scores.softmax(-1) @ v[:, :, : i + 1]).squeeze(2)
    return layer.o_proj(out.transpose(1, 2).reshape(b, t, d))


def _layer(d: int = 24, h: int = 3, dtype=torch.float64) -> Attention:
    torch.manual_seed(0)
    return Attention(d, h).to(dtype)


def test_registered() -> None:
    assert MIXERS["attention"] is Attention


@pytest.mark.parametrize("t", [1, 7], ids=["T1", "T7"])
def test_matches_naive_reference(t: int) -> None:
    layer = _layer()
    x = torch.randn(2, t, 24, dtype=torch.float64)
    y, state = layer(x)
    torch.testing.assert_close(y, _naive(layer, x), atol=1e-12, rtol=0)
    assert state.length == t and state.pos.tolist() == [t, t]


def test_rope_preserves_norm_and_is_relative() -> None:
    x = torch.randn(1, 2, 5, 8, dtype=torch.float64)
    y = torch.randn(1, 2, 5, 8, dtype=torch.float64)
    pos = torch.arange(5)[None]
    rx = apply_rope(x, pos, base=100.0)
    torch.testing.assert_close(rx.norm(dim=-1), x.norm(dim=-1), atol=1e-12, rtol=0)
    dots = apply_rope(x, pos, base=100.0) @ apply_rope(y, pos, base=100.0).transpose(-1, -2)
    shifted = apply_rope(x, pos + 37, base=100.0) @ apply_rope(y, pos + 37, base=100.0).transpose(-1, -2)
    torch.testing.assert_close(dots, shifted, atol=1e-10, rtol=0)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 1e-5)], ids=["f64", "f32"])
def test_token_by_token_and_split_equal_full(dtype, tol) -> None:
    layer = _layer(dtype=dtype)
    x = torch.randn(2, 9, 24, dtype=dtype)
    full, _ = layer(x)
    state, steps = None, []
    for i in range(9):
        y, state = layer(x[:, i : i + 1], state=state)
        steps.append(y)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=tol, rtol=0)
    a, s = layer(x[:, :4])
    b, _ = layer(x[:, 4:], state=s)
    torch.testing.assert_close(torch.cat((a, b), 1), full, atol=tol, rtol=0)


def test_left_padding_equals_unpadded_runs() -> None:
    layer = _layer()
    long, short = torch.randn(1, 6, 24, dtype=torch.float64), torch.randn(1, 3, 24, dtype=torch.float64)
    x = torch.cat((long, torch.cat((torch.randn(1, 3, 24, dtype=torch.float64), short), 1)))
    mask = torch.tensor([[1] * 6, [0, 0, 0, 1, 1, 1]])
    y, state = layer(x, attention_mask=mask)
    torch.testing.assert_close(y[0:1], layer(long)[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(y[1:, 3:], layer(short)[0], atol=1e-12, rtol=0)
    assert torch.equal(y[1, :3], torch.zeros(3, 24, dtype=torch.float64))
    assert state.pos.tolist() == [6, 3]
    nxt = torch.randn(2, 1, 24, dtype=torch.float64)  # decoding after a padded prefill continues each row
    y2, _ = layer(nxt, state=state)
    ref, _ = layer(torch.cat((short, nxt[1:]), 1))
    torch.testing.assert_close(y2[1], ref[0, -1:], atol=1e-12, rtol=0)


def test_state_size_counts_cache_bytes() -> None:
    layer = _layer(dtype=torch.float32)
    _, state = layer(torch.randn(3, 5, 24))
    kv_bytes = (state.k.numel() + state.v.numel()) * 4
    assert layer.state_size(3, seq_len=5) == kv_bytes + state.mask.numel() + 8 * 3


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="divisible"):
        Attention(10, 3)
    with pytest.raises(ValueError, match="even head size"):
        Attention(6, 2)
    layer = _layer()
    x = torch.randn(2, 4, 24, dtype=torch.float64)
    with pytest.raises(ValueError, match="shape"):
        layer(torch.randn(2, 4, 23, dtype=torch.float64))
    with pytest.raises(ValueError, match="attention_mask"):
        layer(x, attention_mask=torch.ones(2, 5))
    with pytest.raises(ValueError, match="0 .padding"):
        layer(x, attention_mask=torch.full((2, 4), 2))
    with pytest.raises(ValueError, match="KVCache"):
        layer(x, state=[torch.zeros(1)])
    _, state = layer(x)
    with pytest.raises(ValueError, match="expected"):
        layer(x[:1], state=state)
    assert isinstance(state, KVCache)
