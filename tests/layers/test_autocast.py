"""Every mixer under ``torch.autocast`` (bf16, fp16): forward, backward and decode stay close to fp32.

Errors are relative RMS, ``||a - b|| / ||b||``. bf16 keeps 8 significant bits (unit roundoff 2^-9 ~ 2e-3), fp16
11 (2^-12 ~ 2.4e-4); a mixer rounds about five times in the low dtype (projections, short conv, gate, output
projection), its gradients about twice as often, while the delta rule itself runs in fp32. Measured worst over
three seeds of kla / gdn / attention (24 wide, 19 steps): bf16 forward 1.6e-2, grads 2.9e-2; fp16 forward 2.0e-3,
grads 3.0e-3; decode vs one pass under autocast at most 5e-4. The bounds below leave about 2x.
"""

from __future__ import annotations

from unittest import mock

import pytest
import torch

import paperlab.layers.deltanet as deltanet_mod
from paperlab.layers import MIXERS, DeltaNetMixer

LOW = (torch.bfloat16, torch.float16)
TOL = {torch.bfloat16: {"forward": 3e-2, "grad": 6e-2, "decode": 5e-3},
       torch.float16: {"forward": 4e-3, "grad": 8e-3, "decode": 1e-3}}
IDS = [str(d).removeprefix("torch.") for d in LOW]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / b.norm())


def _mixer(name: str, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)  # test-local: nn.Linear init draws from the global generator
    opts = {} if name == "attention" else {"chunk_size": 8}
    return MIXERS[name](24, 2, **opts)


def _inputs(T: int = 19) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(3, T, 24, generator=torch.Generator().manual_seed(1))
    mask = torch.ones(3, T, dtype=torch.long)
    mask[1, :5] = 0  # left padding
    return x, mask


@pytest.mark.parametrize("dtype", LOW, ids=IDS)
@pytest.mark.parametrize("name", ["kla", "gdn", "attention"])
def test_forward_and_backward_close_to_fp32(name: str, dtype: torch.dtype) -> None:
    m = _mixer(name)
    x, _ = _inputs()
    x.requires_grad_(True)
    params = [p for p in m.parameters() if p.requires_grad]
    y32, _ = m(x)
    cot = torch.randn(y32.shape, generator=torch.Generator().manual_seed(2))
    g32 = torch.autograd.grad((y32 * cot).sum(), [x, *params])
    with torch.autocast("cpu", dtype=dtype):
        y, state = m(x)
    assert y.dtype == dtype
    g = torch.autograd.grad((y.float() * cot).sum(), [x, *params])
    assert _rel(y, y32) < TOL[dtype]["forward"]
    assert all(bool(t.isfinite().all()) for t in g)
    flat = _rel(torch.cat([t.flatten() for t in g]), torch.cat([t.flatten() for t in g32]))
    assert flat < TOL[dtype]["grad"], flat
    if isinstance(m, DeltaNetMixer):
        assert state.recurrent.dtype == torch.float32  # the recurrent state is kept in fp32
    else:
        assert state.k.dtype == dtype  # the KV cache holds the autocast dtype


@pytest.mark.parametrize("dtype", LOW, ids=IDS)
@pytest.mark.parametrize("name", sorted(MIXERS))
def test_decode_equals_forward_under_autocast(name: str, dtype: torch.dtype) -> None:
    m = _mixer(name)
    x, mask = _inputs()
    keep = mask.bool()
    with torch.no_grad(), torch.autocast("cpu", dtype=dtype):
        full, _ = m(x, attention_mask=mask)
        state, steps = m.initial_state(3, max_len=19), []
        for t in range(x.shape[1]):
            y, state = m(x[:, t : t + 1], state=state, attention_mask=mask[:, t : t + 1])
            steps.append(y)
    dec = torch.cat(steps, 1)
    assert dec.dtype == full.dtype == dtype
    assert _rel(dec[keep], full[keep]) < TOL[dtype]["decode"]


def test_delta_rule_gets_fp32_inputs_with_autocast_off() -> None:
    m = _mixer("kla")
    x, _ = _inputs()
    seen = []

    def spy(op):
        def run(q, k, v, g, beta, *args, **kw):
            seen.append(({t.dtype for t in (q, k, v, g, beta)}, torch.is_autocast_enabled("cpu")))
            return op(q, k, v, g, beta, *args, **kw)
        return run

    with mock.patch.object(deltanet_mod, "delta_rule_chunk", spy(deltanet_mod.delta_rule_chunk)), \
            mock.patch.object(deltanet_mod, "delta_rule_step", spy(deltanet_mod.delta_rule_step)), \
            torch.autocast("cpu", dtype=torch.bfloat16):
        _, state = m(x)
        m(x[:, :1], state=state)
        assert torch.is_autocast_enabled("cpu")  # switched off only around the op
    assert seen == [({torch.float32}, False)] * 2


def test_fp32_model_never_touches_autocast() -> None:
    # fp32 inputs without autocast take the path they took before autocast support: no cast, no autocast switch.
    m = _mixer("kla")
    x, _ = _inputs()
    with mock.patch.object(torch, "autocast", side_effect=AssertionError("autocast entered")):
        m(x)


def test_state_from_another_precision_raises() -> None:
    m = _mixer("attention")
    x, _ = _inputs()
    with torch.no_grad():
        _, state = m(x)
        with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(ValueError, match="keep autocast on"):
            m(x[:, :1], state=state)
