"""Packed sequences (``cu_seqlens``) in the delta-rule ops: a packed row equals running each sequence alone
(outputs, per-sequence final states, gradients of every input), whatever the chunk size; bad bounds are refused."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from paperlab.ops import delta_rule_chunk, delta_rule_recurrent
from tests.ops.test_delta_rule import make_inputs

LENGTHS = (5, 1, 9)
H, K, V = 2, 4, 3


def _cu(lengths=LENGTHS):
    return torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()])


def _packed_inputs(dtype, lengths=LENGTHS, seed=0):
    q, k, v, g, beta, _ = make_inputs(1, sum(lengths), H, K, V, dtype=torch.float64, seed=seed, grad=False)
    h0 = torch.randn(len(lengths), H, K, V, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    return [t.to(dtype).requires_grad_() for t in (q, k, v, g, beta, h0)]


def _per_sequence(inputs, cu, *, mask=None):
    """Each sequence alone through the reference loop: its output slice and final state."""
    q, k, v, g, beta, h0 = inputs
    outs, states = [], []
    for n, (a, b) in enumerate(zip(cu[:-1].tolist(), cu[1:].tolist(), strict=True)):
        o, S = delta_rule_recurrent(q[:, a:b], k[:, a:b], v[:, a:b], g[:, a:b], beta[:, a:b],
                                    initial_state=None if h0 is None else h0[n:n + 1], output_final_state=True,
                                    mask=None if mask is None else mask[:, a:b])
        outs.append(o)
        states.append(S)
    return torch.cat(outs, 1), torch.cat(states)


def _grads(o, S, inputs, seed=3):
    gen = torch.Generator().manual_seed(seed)
    loss = (o * torch.randn(o.shape, generator=gen).to(o.dtype)).sum() + (S * torch.randn(
        S.shape, generator=gen).to(S.dtype)).sum()
    return torch.autograd.grad(loss, [t for t in inputs if t is not None])


def _tol(dtype):
    return {"atol": 1e-10, "rtol": 0} if dtype == torch.float64 else {"atol": 1e-5, "rtol": 1e-5}


CASES = [("recurrent", {}), ("chunk-C2", {"chunk_size": 2}), ("chunk-C4", {"chunk_size": 4}),
         ("chunk-C64", {"chunk_size": 64})]


@pytest.mark.parametrize("name,kw", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
def test_packed_equals_per_sequence_with_states_and_grads(name, kw, dtype):
    """Lengths (5, 1, 9): chunk sizes 2 and 4 cut through sequences, a length-1 sequence sits between two;
    each sequence has its own initial state and gets its own final state."""
    fn = delta_rule_recurrent if name == "recurrent" else delta_rule_chunk
    inputs, cu = _packed_inputs(dtype), _cu()
    q, k, v, g, beta, h0 = inputs
    o, S = fn(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu, **kw)
    o_ref, S_ref = _per_sequence(inputs, cu)
    assert o.shape == (1, sum(LENGTHS), H, V) and S.shape == (3, H, K, V)
    torch.testing.assert_close(o, o_ref, **_tol(dtype))
    torch.testing.assert_close(S, S_ref, **_tol(dtype))
    names = ("q", "k", "v", "g", "beta", "initial_state")
    for arg, a, b in zip(names, _grads(o, S, inputs), _grads(o_ref, S_ref, inputs), strict=True):
        torch.testing.assert_close(a, b, **_tol(dtype), msg=lambda m, n=arg: f"grad {n}: {m}")


def test_packed_chunk_zero_initial_states_resets_and_groups(monkeypatch):
    """No initial state (each sequence from zeros), a hard reset and a strong decay inside one sequence (the exact
    in-chunk path), and one chunk per group, so sequence starts and ends fall in different groups."""
    from paperlab.ops.delta_rule import chunk as chunk_mod

    monkeypatch.setattr(chunk_mod, "GROUP_MATRICES", H)
    lengths = (3, 7, 1, 6)
    inputs, cu = _packed_inputs(torch.float64, lengths, seed=5), _cu(lengths)
    q, k, v, g, beta, _ = inputs
    g = g.detach().clone()
    g[0, 5, 0] = -float("inf")
    g[0, 12:16, 1] *= 200.0
    g.requires_grad_()
    inputs = [q, k, v, g, beta, None]
    o_ref, S_ref = _per_sequence(inputs, cu)
    grads_ref = _grads(o_ref, S_ref, inputs)
    for C in (2, 3, 64):
        o, S = delta_rule_chunk(q, k, v, g, beta, output_final_state=True, cu_seqlens=cu, chunk_size=C)
        torch.testing.assert_close(o, o_ref, atol=1e-10, rtol=0)
        torch.testing.assert_close(S, S_ref, atol=1e-10, rtol=0)
        for a, b in zip(_grads(o, S, inputs), grads_ref, strict=True):
            torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    o, S = delta_rule_chunk(q, k, v, g, beta, cu_seqlens=cu)
    assert S is None


@pytest.mark.parametrize("fn", [delta_rule_recurrent, delta_rule_chunk], ids=["recurrent", "chunk"])
def test_packed_with_a_mask_skips_masked_steps_per_sequence(fn):
    inputs, cu = _packed_inputs(torch.float64), _cu()
    q, k, v, g, beta, h0 = inputs
    mask = torch.ones(1, sum(LENGTHS), dtype=torch.bool)
    mask[0, [0, 5, 8, 14]] = False  # a sequence's first and last step, and the whole length-1 sequence
    o, S = fn(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu, mask=mask)
    o_ref, S_ref = _per_sequence(inputs, cu, mask=mask)
    torch.testing.assert_close(o, o_ref, atol=1e-10, rtol=0)
    torch.testing.assert_close(S, S_ref, atol=1e-10, rtol=0)
    torch.testing.assert_close(S[1], h0[1].detach(), atol=0, rtol=0)  # fully masked: the state is unchanged


@pytest.mark.parametrize("fn", [delta_rule_recurrent, delta_rule_chunk], ids=["recurrent", "chunk"])
def test_bad_cu_seqlens_are_refused(fn):
    q, k, v, g, beta, h0 = (t.detach() for t in _packed_inputs(torch.float64))
    T = q.shape[1]
    bad = [
        ([0, 5, 6, T], TypeError, "cu_seqlens must be a 1-D integer torch.Tensor"),
        (torch.tensor([[0, T]]), ValueError, r"cu_seqlens must be a 1-D tensor \[N \+ 1\]"),
        (torch.tensor([0]), ValueError, r"cu_seqlens must be a 1-D tensor \[N \+ 1\] with N >= 1"),
        (torch.tensor([0.0, 5.0, float(T)]), ValueError, "cu_seqlens must have an integer dtype"),
        (torch.tensor([1, 5, T]), ValueError, "cu_seqlens must start at 0, increase strictly and end at T = 15"),
        (torch.tensor([0, 5, 5, T]), ValueError, "increase strictly"),
        (torch.tensor([0, 9, 5, T]), ValueError, "increase strictly"),
        (torch.tensor([0, 5, T - 1]), ValueError, "end at T = 15"),
        (torch.tensor([0, 5, T + 1]), ValueError, "end at T = 15"),
    ]
    for cu, exc, match in bad:
        with pytest.raises(exc, match=match):
            fn(q, k, v, g, beta, cu_seqlens=cu)
    with pytest.raises(ValueError, match="cu_seqlens packs N sequences into one row: the batch size must be 1"):
        two = [torch.cat([t, t]) for t in (q, k, v, g, beta)]
        fn(*two, cu_seqlens=_cu())
    with pytest.raises(ValueError, match=r"with cu_seqlens, initial_state holds one state per sequence: "
                                         r"\[N, H, K, V\] = \(3, 2, 4, 3\)"):
        fn(q, k, v, g, beta, initial_state=h0[:1], cu_seqlens=_cu())


def test_cu_seqlens_reaches_the_fla_kernel(monkeypatch):
    """backend="fla" hands cu_seqlens (as long, on q's device) and the per-sequence states to fla's kernel,
    checked with a stand-in module so this runs without CUDA or fla."""
    seen = {}

    def fake(q, k, v, g, beta, **kw):
        seen.update(kw)
        return v.clone(), kw["initial_state"]

    monkeypatch.setitem(sys.modules, "fla.ops.gated_delta_rule",
                        types.SimpleNamespace(chunk_gated_delta_rule=fake))
    q, k, v, g, beta, h0 = (t.detach().float() for t in _packed_inputs(torch.float64))
    cu = _cu().int()
    _, S = delta_rule_chunk(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu,
                            backend="fla")
    assert seen["cu_seqlens"].dtype == torch.long and seen["cu_seqlens"].tolist() == cu.tolist()
    assert S.shape == (3, H, K, V)
