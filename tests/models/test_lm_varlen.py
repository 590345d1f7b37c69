"""LM with packed sequences (``cu_seqlens``): logits and gradients equal each sequence alone; the returned
state continues all N sequences as a batch."""

from __future__ import annotations

import pytest
import torch

from paperlab.models import LM, LMConfig

V = 37


@pytest.mark.parametrize("mixer", ["kla", "attention"])
def test_packed_lm_equals_each_sequence_alone(mixer):
    torch.manual_seed(0)
    model = LM(LMConfig(vocab_size=V, d_model=16, n_layers=2, n_heads=2, mixer=mixer, mlp_ratio=2.0,
                        mixer_options={"chunk_size": 4} if mixer != "attention" else {})).double()
    lengths = (5, 1, 9)
    cu = torch.tensor([0, 5, 6, 15])
    ids = torch.randint(0, V, (1, sum(lengths)), generator=torch.Generator().manual_seed(1))
    logits, state = model(ids, cu_seqlens=cu)
    params = list(model.parameters())
    got = torch.autograd.grad(logits.logsumexp(-1).sum(), params)
    alone = [model(ids[:, a:b])[0] for a, b in zip(cu[:-1].tolist(), cu[1:].tolist(), strict=True)]
    torch.testing.assert_close(logits, torch.cat(alone, 1), atol=1e-10, rtol=0)
    want = torch.autograd.grad(sum(a.logsumexp(-1).sum() for a in alone), params)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    with torch.no_grad():
        nxt = torch.randint(0, V, (3, 1), generator=torch.Generator().manual_seed(2))
        step, _ = model(nxt, state=state)
        for n, (a, b) in enumerate(zip(cu[:-1].tolist(), cu[1:].tolist(), strict=True)):
            full, _ = model(torch.cat([ids[:, a:b], nxt[n:n + 1]], 1))
            torch.testing.assert_close(step[n, 0], full[0, -1], atol=1e-10, rtol=0)
    with pytest.raises(ValueError, match="cannot be combined with a decode state"):
        model(ids, cu_seqlens=cu, state=state)
