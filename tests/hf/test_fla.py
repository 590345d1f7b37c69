"""A DeltaNetMixer's weights in fla's GatedDeltaNet naming: the round trip, and a GDN mixer computes what fla's
layer computes from those weights (fla's layer re-implemented here in plain PyTorch with its naive recurrence,
since fla itself needs triton)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from paperlab.hf.fla import FLA_NAMES, fla_config, from_fla_gated_deltanet, to_fla_gated_deltanet  # noqa: E402
from paperlab.layers import DeltaNetMixer  # noqa: E402


def _mixer(mode: str = "gdn", seed: int = 0) -> DeltaNetMixer:
    torch.manual_seed(seed)
    return DeltaNetMixer(16, 2, mode=mode).double()


def _short_conv(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """fla's ShortConvolution without a cache: a depthwise causal nn.Conv1d (left padding K - 1), then SiLU."""
    T, K = x.shape[1], weight.shape[-1]
    y = F.conv1d(x.transpose(1, 2), weight, padding=K - 1, groups=weight.shape[0])[..., :T]
    return F.silu(y.transpose(1, 2))


def fla_gated_deltanet(sd: dict[str, torch.Tensor], x: torch.Tensor, *, num_heads: int, head_dim: int,
                       expand_v: float, norm_eps: float, **_: object) -> torch.Tensor:
    """fla's GatedDeltaNet forward (use_gate, use_short_conv, in-kernel q/k L2 norm) with the naive recurrence
    ``S = e^g S; u = beta (v - S^T k); S += k u^T; o = S^T (q / sqrt(K))``."""
    B, T, _ = x.shape
    H, K, Vd = num_heads, head_dim, int(head_dim * expand_v)
    l2 = lambda t: t * torch.rsqrt(t.square().sum(-1, keepdim=True) + 1e-6)  # noqa: E731
    q = l2(_short_conv(x @ sd["q_proj.weight"].T, sd["q_conv1d.weight"]).view(B, T, H, K))
    k = l2(_short_conv(x @ sd["k_proj.weight"].T, sd["k_conv1d.weight"]).view(B, T, H, K))
    v = _short_conv(x @ sd["v_proj.weight"].T, sd["v_conv1d.weight"]).view(B, T, H, Vd)
    beta = torch.sigmoid(x @ sd["b_proj.weight"].T)
    g = -sd["A_log"].exp() * F.softplus(x @ sd["a_proj.weight"].T + sd["dt_bias"])
    S = x.new_zeros(B, H, K, Vd)
    out = []
    for t in range(T):
        S = S * g[:, t].exp()[..., None, None]
        u = beta[:, t, :, None] * (v[:, t] - torch.einsum("bhk,bhkv->bhv", k[:, t], S))
        S = S + k[:, t, :, :, None] * u[:, :, None, :]
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, t] * K**-0.5, S))
    o = torch.stack(out, 1)
    gate = (x @ sd["g_proj.weight"].T).view(B, T, H, Vd)
    o = o * torch.rsqrt(o.square().mean(-1, keepdim=True) + norm_eps) * sd["o_norm.weight"] * F.silu(gate)
    return o.reshape(B, T, H * Vd) @ sd["o_proj.weight"].T


def test_gdn_mixer_computes_fla_gated_deltanet_from_the_converted_weights() -> None:
    mixer = _mixer("gdn")
    sd = to_fla_gated_deltanet(mixer)
    assert set(sd) == set(FLA_NAMES.values())
    cfg = fla_config(mixer)
    assert cfg["head_dim"] == 6 and cfg["expand_v"] == 2.0 and cfg["conv_size"] == 4
    x = torch.randn(2, 11, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours, _ = mixer(x)
        theirs = fla_gated_deltanet(sd, x, **cfg)
    torch.testing.assert_close(ours, theirs, atol=1e-10, rtol=0)


def test_fla_round_trip_and_refusals() -> None:
    mixer, other = _mixer("gdn", 0), _mixer("gdn", 1)
    from_fla_gated_deltanet(other, to_fla_gated_deltanet(mixer))
    for (name, a), b in zip(mixer.state_dict().items(), other.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    kla = _mixer("kla")
    with pytest.raises(ValueError, match="another function"):
        to_fla_gated_deltanet(kla)
    back = from_fla_gated_deltanet(_mixer("kla", 2), to_fla_gated_deltanet(kla, check_function=False),
                                   check_function=False)  # KLA keeps the same tensors (fla's layer computes GDN)
    assert all(torch.equal(a, b) for a, b in zip(kla.state_dict().values(), back.state_dict().values(), strict=True))
    with torch.no_grad():
        mixer.b_proj.bias.fill_(0.3)
    with pytest.raises(ValueError, match="no bias"):
        to_fla_gated_deltanet(mixer)
    bad = to_fla_gated_deltanet(other)
    bad.pop("A_log")
    with pytest.raises(ValueError, match=r"missing \['A_log'\]"):
        from_fla_gated_deltanet(other, bad)
    with pytest.raises(ValueError, match="shapes do not match"):
        from_fla_gated_deltanet(DeltaNetMixer(16, 2, mode="gdn", expand_v=3.0), to_fla_gated_deltanet(other))
    with pytest.raises(ValueError, match="Mamba2 decay"):
        to_fla_gated_deltanet(DeltaNetMixer(16, 2, gate_mode="single"))


@pytest.mark.gpu
def test_real_fla_gated_deltanet_loads_the_converted_weights_and_agrees() -> None:
    """On a GPU with fla installed: fla's own GatedDeltaNet (its triton kernels) built from ``fla_config`` and
    loaded with the converted weights computes the paperlab GDN mixer's output (bf16-level tolerance)."""
    fla_layers = pytest.importorskip("fla.layers")
    mixer = DeltaNetMixer(64, 2, mode="gdn").cuda()
    with torch.no_grad():
        mixer.b_proj.bias.zero_()  # fla's b_proj has no bias
    layer = fla_layers.GatedDeltaNet(**fla_config(mixer), mode="chunk").cuda()
    layer.load_state_dict(to_fla_gated_deltanet(mixer))
    x = torch.randn(2, 128, 64, device="cuda")
    ours = mixer(x)[0]
    theirs = layer(x)[0]
    torch.testing.assert_close(theirs.float(), ours.float(), atol=2e-2, rtol=2e-2)
