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


def _decode_steps(layer: Attention, x: torch.Tensor, state: KVCache) -> tuple[torch.Tensor, list[KVCache]]:
    ys, states = [], []
    for i in range(x.shape[1]):
        y, state = layer(x[:, i : i + 1], state=state)
        ys.append(y)
        states.append(state)
    return torch.cat(ys, 1), states


def test_preallocated_cache_is_written_in_place_and_equals_full_forward() -> None:
    layer = _layer()
    x = torch.randn(2, 12, 24, dtype=torch.float64)
    full, _ = layer(x)
    with torch.no_grad():
        _, state = layer(x[:, :4], state=layer.initial_state(2, max_len=12))
        assert (state.length, state.capacity) == (4, 12)
        ptr = state.k.untyped_storage().data_ptr()
        ys = []
        for i in range(4, 12):
            y, state = layer(x[:, i : i + 1], state=state)
            ys.append(y)
            # the step wrote into the storage allocated for 12 tokens: no reallocation, no copy of the cache
            assert state.k.untyped_storage().data_ptr() == ptr and state.capacity == 12
    torch.testing.assert_close(torch.cat(ys, 1), full[:, 4:], atol=1e-12, rtol=0)
    assert state.k.shape == (2, 3, 12, 8) and state.pos.tolist() == [12, 12]
    assert layer.initial_state(0, max_len=4).k.shape == (0, 3, 0, 8)  # an empty batch is allowed


def test_cache_without_reserve_grows_by_doubling() -> None:
    layer = _layer()
    x = torch.randn(1, 45, 24, dtype=torch.float64)
    full, _ = layer(x)
    with torch.no_grad():
        _, state = layer(x[:, :5])
        y, states = _decode_steps(layer, x[:, 5:], state)
    torch.testing.assert_close(y, full[:, 5:], atol=1e-12, rtol=0)
    # 40 steps from 5 tokens: capacity 5 -> 10 -> 20 -> 40 -> 80, four allocations (amortized O(1) per token)
    assert sorted({s.capacity for s in states}) == [10, 20, 40, 80]
    assert len({s.k.untyped_storage().data_ptr() for s in states}) == 4


def test_branching_from_an_older_state_copies_instead_of_overwriting() -> None:
    layer = _layer()
    x = torch.randn(1, 6, 24, dtype=torch.float64)
    a_tok, b_tok = torch.randn(1, 1, 24, dtype=torch.float64), torch.randn(1, 1, 24, dtype=torch.float64)
    with torch.no_grad():
        _, state = layer(x, state=layer.initial_state(1, max_len=16))
        _, after_a = layer(a_tok, state=state)
        _, after_b = layer(b_tok, state=state)  # slot 6 is used by the live after_a: b gets new storage
        nxt = torch.randn(1, 1, 24, dtype=torch.float64)
        ya, _ = layer(nxt, state=after_a)
        yb, _ = layer(nxt, state=after_b)
    torch.testing.assert_close(ya, layer(torch.cat((x, a_tok, nxt), 1))[0][:, -1:], atol=1e-12, rtol=0)
    torch.testing.assert_close(yb, layer(torch.cat((x, b_tok, nxt), 1))[0][:, -1:], atol=1e-12, rtol=0)
    assert after_a.k.untyped_storage().data_ptr() != after_b.k.untyped_storage().data_ptr()
    with torch.no_grad():  # once no other state uses the slot, stepping again from `state` writes in place
        ptr = state.k.untyped_storage().data_ptr()
        del after_a, ya
        _, again = layer(a_tok, state=state)
    assert again.k.untyped_storage().data_ptr() == ptr


def test_split_forward_with_autograd_concatenates_and_backpropagates() -> None:
    layer = _layer()
    x = torch.randn(2, 9, 24, dtype=torch.float64, requires_grad=True)
    cot = torch.randn(2, 9, 24, dtype=torch.float64)
    full, _ = layer(x)
    g_full = torch.autograd.grad((full * cot).sum(), [x, *layer.parameters()])
    a, state = layer(x[:, :4], state=layer.initial_state(2, max_len=9))
    b, state = layer(x[:, 4:], state=state)
    assert state.capacity == state.length == 9  # concatenated: nothing saved for backward is written in place
    g_split = torch.autograd.grad((torch.cat((a, b), 1) * cot).sum(), [x, *layer.parameters()])
    for g1, g2 in zip(g_split, g_full, strict=True):
        torch.testing.assert_close(g1, g2, atol=1e-12, rtol=0)


def test_cache_filled_in_inference_mode_continues_outside_it() -> None:
    layer = _layer()
    x = torch.randn(1, 5, 24, dtype=torch.float64)
    with torch.inference_mode():
        _, state = layer(x[:, :4], state=layer.initial_state(1, max_len=8))
    with torch.no_grad():
        y, _ = layer(x[:, 4:], state=state)
    torch.testing.assert_close(y, layer(x)[0][:, 4:], atol=1e-12, rtol=0)
