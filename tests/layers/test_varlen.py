"""Packed sequences (``cu_seqlens``) in the mixers: a packed row of 3 sequences equals running each alone
(outputs, gradients w.r.t. the input and every parameter), the returned state continues each sequence, short
convs and RoPE restart at each start, and misuse is refused."""

from __future__ import annotations

import pytest
import torch

from paperlab.layers import Attention, DeltaNetMixer
from paperlab.layers.conv import ShortConv
from paperlab.layers.deltanet import DELTANET_MODES

LENGTHS = (5, 1, 9)
D = 24


def _cu(lengths=LENGTHS):
    return torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()])


def _make(name, dtype, **kw):
    torch.manual_seed(0)  # test-local: nn.Linear init draws from the global generator
    if name == "attention":
        return Attention(D, 2).to(dtype)
    return DeltaNetMixer(D, 2, mode=name, chunk_size=4, **kw).to(dtype)  # chunks of 4 cut through (5, 1, 9)


def _check_packed_equals_alone(m, dtype, lengths=LENGTHS):
    tol = {"atol": 1e-10, "rtol": 0} if dtype == torch.float64 else {"atol": 1e-5, "rtol": 1e-5}
    gen = torch.Generator().manual_seed(1)
    T = sum(lengths)
    x = torch.randn(1, T, D, generator=gen, dtype=torch.float64).to(dtype).requires_grad_()
    cot = torch.randn(1, T, D, generator=gen, dtype=torch.float64).to(dtype)
    params = list(m.parameters())
    y, state = m(x, cu_seqlens=_cu(lengths))
    got = torch.autograd.grad((y * cot).sum(), [x, *params], allow_unused=True)  # b_proj: unused by some modes
    cu = _cu(lengths).tolist()
    ys, loss = [], 0.0
    for a, b in zip(cu[:-1], cu[1:], strict=True):
        yn, _ = m(x[:, a:b])
        ys.append(yn)
        loss = loss + (yn * cot[:, a:b]).sum()
    want = torch.autograd.grad(loss, [x, *params], allow_unused=True)
    torch.testing.assert_close(y, torch.cat(ys, 1), **tol)
    names = ["x", *(n for n, _ in m.named_parameters())]
    for name, a, b in zip(names, got, want, strict=True):
        assert (a is None) == (b is None), name
        if a is not None:
            torch.testing.assert_close(a, b, **tol, msg=lambda msg, n=name: f"grad {n}: {msg}")
    # The returned state holds the sequences as a batch of N: one more token each continues every sequence.
    with torch.no_grad():
        nxt = torch.randn(len(lengths), 1, D, generator=gen, dtype=torch.float64).to(dtype)
        y_next, _ = m(nxt, state=state)
        for n, (a, b) in enumerate(zip(cu[:-1], cu[1:], strict=True)):
            y_alone, _ = m(torch.cat([x[:, a:b], nxt[n:n + 1]], 1))
            torch.testing.assert_close(y_next[n, 0], y_alone[0, -1], **tol)
    return (y - torch.cat(ys, 1)).abs().max().item()


@pytest.mark.parametrize("name", [*DELTANET_MODES, "attention"])
def test_packed_equals_each_sequence_alone_fp64(name):
    _check_packed_equals_alone(_make(name, torch.float64), torch.float64)


@pytest.mark.parametrize("name,kw", [("kla", {}), ("gdn", {"seq_factor": "1/t", "gate_mode": "single"}),
                                     ("attention", {})], ids=["kla", "gdn-1/t-single", "attention"])
def test_packed_equals_each_sequence_alone_fp32(name, kw):
    _check_packed_equals_alone(_make(name, torch.float32, **kw), torch.float32)


@pytest.mark.parametrize("kw", [{"seq_factor": "1/sqrt(t)"}, {"conv_size": 1}, {"conv_size": 7}],
                         ids=["sqrt-t", "conv1", "conv7"])
def test_packed_positions_and_conv_windows_restart(kw):
    """1/sqrt(t) counts from 1 in each sequence; conv windows wider than a sequence (7 > 5, 1) and none (1)."""
    _check_packed_equals_alone(_make("kla", torch.float64, **kw), torch.float64, lengths=(2, 6, 1, 3))


def test_short_conv_packed_equals_per_sequence_and_caches():
    torch.manual_seed(0)
    conv = ShortConv(6, 4).double()
    x = torch.randn(1, sum(LENGTHS), 6, dtype=torch.float64)
    y, cache = conv(x, cu_seqlens=_cu())
    assert cache.shape == (3, 6, 3)
    cu = _cu().tolist()
    for n, (a, b) in enumerate(zip(cu[:-1], cu[1:], strict=True)):
        yn, cn = conv(x[:, a:b])
        torch.testing.assert_close(y[:, a:b], yn, atol=1e-14, rtol=0)
        torch.testing.assert_close(cache[n], cn[0], atol=0, rtol=0)
    with pytest.raises(ValueError, match="ShortConv: cu_seqlens .* cannot be combined with a cache or a mask"):
        conv(x, cu_seqlens=_cu(), cache=cache[:1])


@pytest.mark.parametrize("name", ["kla", "attention"])
def test_packed_misuse_is_refused(name):
    m = _make(name, torch.float64)
    x = torch.randn(1, sum(LENGTHS), D, dtype=torch.float64)
    cu = _cu()
    _, state = m(x[:, :3])
    with pytest.raises(ValueError, match="cu_seqlens .* cannot be combined with a decode state"):
        m(x, cu_seqlens=cu, state=state)
    pad = torch.ones(1, x.shape[1], dtype=torch.long)
    pad[0, 0] = 0
    with pytest.raises(ValueError, match="cu_seqlens cannot be combined with a padding attention_mask"):
        m(x, cu_seqlens=cu, attention_mask=pad)
    y, _ = m(x, cu_seqlens=cu, attention_mask=torch.ones_like(pad))  # no padding: allowed
    torch.testing.assert_close(y, m(x, cu_seqlens=cu)[0], atol=0, rtol=0)
    with pytest.raises(ValueError, match="cu_seqlens packs N sequences into one row: the batch size must be 1"):
        m(x.expand(2, -1, -1), cu_seqlens=cu)
    with pytest.raises(ValueError, match="cu_seqlens must start at 0, increase strictly and end at T = 15"):
        m(x, cu_seqlens=torch.tensor([0, 5, 14]))
    with pytest.raises(TypeError, match="cu_seqlens must be a 1-D integer torch.Tensor"):
        m(x, cu_seqlens=[0, 5, 15])
