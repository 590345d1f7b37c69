"""DeltaNetMixer (KLA / GDN / ablations), ShortConv and the RMSNorms: decoding equals one pass, padding is exact."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
import torch.nn.functional as F

import paperlab.layers.deltanet as deltanet_mod
from paperlab.layers.conv import ShortConv
from paperlab.layers.deltanet import DELTANET_MODES, DeltaNetMixer, DeltaNetState, NonFiniteActivationError
from paperlab.layers.norm import GatedRMSNorm, RMSNorm


def _mixer(mode="kla", dtype=torch.float64, seed=0, **kw):
    torch.manual_seed(seed)  # test-local: nn.Linear init draws from the global generator
    return DeltaNetMixer(24, 2, mode=mode, chunk_size=8, **kw).to(dtype)


def _left_padded(B=3, T=11, D=24, dtype=torch.float64):
    x = torch.randn(B, T, D, dtype=dtype, generator=torch.Generator().manual_seed(1))
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, :3] = 0
    mask[2, :T - 1] = 0  # a single real token
    return x, mask


def _decode(m, x, mask):
    state, ys = None, []
    for t in range(x.shape[1]):
        y, state = m(x[:, t:t + 1], state=state, attention_mask=mask[:, t:t + 1])
        ys.append(y)
    return torch.cat(ys, 1), state


@pytest.mark.parametrize("mode", DELTANET_MODES)
def test_decode_equals_full_forward_with_left_padding_fp64(mode):
    m = _mixer(mode)
    x, mask = _left_padded()
    y, st = m(x, attention_mask=mask)
    y_dec, st_dec = _decode(m, x, mask)
    keep = mask.bool()
    torch.testing.assert_close(y_dec[keep], y[keep], atol=1e-12, rtol=0)
    torch.testing.assert_close(st_dec.recurrent, st.recurrent, atol=1e-12, rtol=0)
    for b in range(3):  # a padded batch equals each sequence alone
        yb, sb = m(x[b:b + 1, keep[b]])
        torch.testing.assert_close(yb[0], y[b, keep[b]], atol=1e-12, rtol=0)
        torch.testing.assert_close(sb.recurrent[0], st.recurrent[b], atol=1e-12, rtol=0)


@pytest.mark.parametrize("kw", [{"mode": "kla"}, {"mode": "gdn", "seq_factor": "1/sqrt(t)"},
                                {"mode": "kla", "gate_mode": "single", "seq_factor": "1/log(1+t)"}],
                         ids=["kla", "gdn-sqrt", "kla-single-log"])
def test_decode_and_split_equal_full_forward_fp32(kw):
    m = _mixer(dtype=torch.float32, **kw)
    x, mask = _left_padded(dtype=torch.float32, T=19)
    y, st = m(x, attention_mask=mask)
    y_dec, st_dec = _decode(m, x, mask)
    keep = mask.bool()
    torch.testing.assert_close(y_dec[keep], y[keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(st_dec.recurrent, st.recurrent, atol=1e-5, rtol=1e-5)
    ya, sa = m(x[:, :7], attention_mask=mask[:, :7])
    yb, sb = m(x[:, 7:], state=sa, attention_mask=mask[:, 7:])
    torch.testing.assert_close(torch.cat([ya, yb], 1)[keep], y[keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sb.position, keep.sum(1))


def test_padding_leaves_state_unchanged_and_branches_are_chosen_by_length():
    m = _mixer()
    x, _ = _left_padded()
    _, st = m(x)
    _, st_pad = m(x, state=st, attention_mask=torch.zeros(3, 11))
    for name in ("conv_q", "conv_k", "conv_v", "recurrent", "position"):
        assert torch.equal(getattr(st_pad, name), getattr(st, name)), name
    with mock.patch.object(deltanet_mod, "delta_rule_step", wraps=deltanet_mod.delta_rule_step) as step, \
            mock.patch.object(deltanet_mod, "delta_rule_chunk", wraps=deltanet_mod.delta_rule_chunk) as chunk:
        m(x)
        m(x[:, :1])
    assert chunk.call_count == 1 and step.call_count == 1


def test_kla_layer_uses_raw_keys_and_kla_beta():
    """In kla mode the op sees L2-normalized q, raw k and beta = eta / (||k||^2 + eps)."""
    m = _mixer("kla", eps=1e-3)
    x, _ = _left_padded()
    seen, chunk = {}, deltanet_mod.delta_rule_chunk

    def spy(q, k, v, g, beta, **kw):
        seen.update(q=q, k=k, beta=beta, g=g)
        return chunk(q, k, v, g, beta, **kw)

    with mock.patch.object(deltanet_mod, "delta_rule_chunk", side_effect=spy):
        m(x)
    torch.testing.assert_close(seen["q"].norm(dim=-1), torch.ones_like(seen["q"][..., 0]), atol=1e-4, rtol=0)
    k2 = seen["k"].square().sum(-1)
    assert not torch.allclose(k2, torch.ones_like(k2))
    eta = torch.sigmoid(m.b_proj(x))
    torch.testing.assert_close(seen["beta"], eta / (k2 + 1e-3))
    assert (seen["g"] <= 0).all()


def test_parameter_count_no_decay_and_state_size():
    d, H = 24, 2
    m = DeltaNetMixer(d, H)
    dk, dv, w = m.head_dim_k, m.head_dim_v, 4
    assert (dk, dv) == (9, 18)  # 0.75 d / H, 1.5 d / H
    want = 2 * d * H * dk + 2 * d * H * dv + H * dv * d + (d * H + H) + d * H + 2 * H + (2 * H * dk + H * dv) * w + dv
    assert sum(p.numel() for p in m.parameters()) == want
    assert m.no_weight_decay() == {"A_log", "dt_bias"}
    _, st = m(torch.randn(5, 3, d))
    nbytes = sum(t.numel() * t.element_size() for t in (st.conv_q, st.conv_k, st.conv_v, st.recurrent, st.position))
    assert m.state_size(5) == nbytes
    assert isinstance(st, DeltaNetState)


def test_gate_init_matches_spec():
    m = DeltaNetMixer(32, 4)
    A = m.A_log.exp()
    dt = F.softplus(m.dt_bias)
    assert ((A > 0) & (A <= 16)).all() and ((dt >= 1e-3 - 1e-9) & (dt <= 0.1 + 1e-9)).all()
    assert torch.equal(m.b_proj.bias, torch.zeros(4))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match=r"mode='kda' is not valid; choose one of \['kla', 'gdn'"):
        DeltaNetMixer(24, 2, mode="kda")
    # the authors' "k_norm_only" computes what "kaczmarz" computes; one name, the one saying what it computes
    with pytest.raises(ValueError, match=r"mode='k_norm_only' is not valid; choose one of .*'kaczmarz'"):
        DeltaNetMixer(24, 2, mode="k_norm_only")
    with pytest.raises(ValueError, match="d_model=25 must be divisible by n_heads=2"):
        DeltaNetMixer(25, 2)
    with pytest.raises(ValueError, match="seq_factor"):
        DeltaNetMixer(24, 2, seq_factor="t")
    m = _mixer()
    with pytest.raises(ValueError, match=r"x must be \[B, T, 24\]"):
        m(torch.randn(2, 3, 16, dtype=torch.float64))
    _, st = m(torch.randn(2, 3, 24, dtype=torch.float64))
    with pytest.raises(ValueError, match="state does not fit"):
        m(torch.randn(3, 1, 24, dtype=torch.float64), state=st)
    with pytest.raises(ValueError, match="attention_mask must be"):
        m(torch.randn(2, 3, 24, dtype=torch.float64), attention_mask=torch.ones(2, 4))


def test_short_conv_cache_equals_causal_conv():
    conv = ShortConv(5, 4, activation=None).double()
    x = torch.randn(2, 9, 5, dtype=torch.float64)
    ref = F.conv1d(F.pad(x.transpose(1, 2), (3, 0)), conv.weight, groups=5).transpose(1, 2)
    y, _ = conv(x)
    torch.testing.assert_close(y, ref, atol=1e-12, rtol=0)
    cache, ys = None, []
    for t in range(9):
        yt, cache = conv(x[:, t:t + 1], cache=cache)
        ys.append(yt)
    torch.testing.assert_close(torch.cat(ys, 1), ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(cache, x[:, -3:].transpose(1, 2), atol=0, rtol=0)


def test_rms_norms():
    x = torch.randn(3, 4, 8, dtype=torch.float64)
    n = RMSNorm(8).double()
    torch.testing.assert_close(n(x).square().mean(-1), torch.ones(3, 4, dtype=torch.float64), atol=1e-5, rtol=0)
    gate = torch.randn(3, 4, 8, dtype=torch.float64)
    gn = GatedRMSNorm(8).double()
    torch.testing.assert_close(gn(x, gate), gn(x) * F.silu(gate))
    assert n(x.bfloat16()).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="eps must be"):
        RMSNorm(8, eps=0)


def _spec_kla_forward(m, x):
    """Independent KLA/GDN layer forward written from the spec (section 1), fp64, token by token."""
    B, T, _ = x.shape
    H, dk, dv = m.n_heads, m.head_dim_k, m.head_dim_v

    def conv_silu(u, conv):  # depthwise causal conv (k=4, no bias) + SiLU, via F.conv1d
        w = conv.weight  # [C, 1, K]
        z = F.pad(u.transpose(1, 2), (w.shape[-1] - 1, 0))
        return F.silu(F.conv1d(z, w, groups=w.shape[0])).transpose(1, 2)

    q = conv_silu(x @ m.q_proj.weight.T, m.conv_q).reshape(B, T, H, dk)
    k = conv_silu(x @ m.k_proj.weight.T, m.conv_k).reshape(B, T, H, dk)
    v = conv_silu(x @ m.v_proj.weight.T, m.conv_v).reshape(B, T, H, dv)
    def l2(u):  # L2 norm with fla's 1e-6 inside the square root
        return u / torch.sqrt(u.square().sum(-1, keepdim=True) + 1e-6)

    q = l2(q) * dk ** -0.5  # q-tilde = (q / ||q||) d_k^{-1/2}
    eta = torch.sigmoid(x @ m.b_proj.weight.T + m.b_proj.bias)  # [B, T, H]
    if m.mode == "gdn":
        k, beta = l2(k), eta
    else:  # kla: raw k, beta = eta / (||k||^2 + eps)
        beta = eta / (k.square().sum(-1) + m.eps)
    gdt = -torch.exp(m.A_log) * F.softplus(x @ m.a_proj.weight.T + m.dt_bias)
    S = torch.zeros(B, H, dk, dv, dtype=x.dtype)
    outs = []
    for t in range(T):
        S = torch.exp(gdt[:, t])[..., None, None] * S
        e = v[:, t] - torch.einsum("bhkv,bhk->bhv", S, k[:, t])
        S = S + beta[:, t, :, None, None] * k[:, t, :, :, None] * e[:, :, None, :]
        outs.append(torch.einsum("bhkv,bhk->bhv", S, q[:, t]))
    o = torch.stack(outs, 1)  # [B, T, H, dv]
    o = o * torch.rsqrt(o.square().mean(-1, keepdim=True) + 1e-5) * m.norm.weight
    o = o * F.silu((x @ m.g_proj.weight.T).reshape(B, T, H, dv))
    return o.reshape(B, T, H * dv) @ m.o_proj.weight.T


@pytest.mark.parametrize("mode", ["kla", "gdn"])
def test_layer_matches_independent_spec_forward(mode):
    # Regression check for the MQAR investigation (docs/kla.md): the layer equals a from-the-spec re-implementation.
    m = _mixer(mode)
    assert m.eps == 1e-6 and m.norm.eps == 1e-5
    assert torch.equal(m.b_proj.bias, torch.zeros(2, dtype=torch.float64))  # eta = 0.5 at init
    A = m.A_log.exp()
    assert bool(((A > 0) & (A <= 16)).all())
    dt = F.softplus(m.dt_bias)
    assert bool(((dt >= 1e-3 - 1e-12) & (dt <= 0.1 + 1e-12)).all())
    x = torch.randn(2, 13, 24, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        m.b_proj.bias.normal_()  # move eta away from 0.5 so beta's eta factor is exercised
        y, _ = m(x)
        torch.testing.assert_close(y, _spec_kla_forward(m, x), atol=1e-12, rtol=0)


@pytest.mark.parametrize("mode", sorted(DELTANET_MODES))
def test_empty_batch_gives_empty_outputs(mode):
    layer = DeltaNetMixer(d_model=8, n_heads=2, mode=mode)
    y, state = layer(torch.randn(0, 5, 8))
    assert y.shape == (0, 5, 8)
    y, _ = layer(torch.randn(0, 1, 8), state=state)
    assert y.shape == (0, 1, 8)


def test_nan_activations_raise_an_error_that_is_also_a_floating_point_error() -> None:
    # a training loop that stops on FloatingPointError (a diverged run) also stops on activations gone NaN
    layer = DeltaNetMixer(d_model=16, n_heads=2, mode="no_norm")
    x = torch.randn(1, 8, 16)
    x[0, 3] = float("nan")
    with pytest.raises(NonFiniteActivationError, match="refused the inputs computed from x") as info:
        layer(x)
    assert isinstance(info.value, FloatingPointError) and isinstance(info.value, ValueError)
