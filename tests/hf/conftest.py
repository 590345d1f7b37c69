"""Tiny paperlab LMs for the Hugging Face tests (d_model 16, 2 layers: each builds in milliseconds)."""

from __future__ import annotations

import pytest
import torch

from paperlab.models import LM, LMConfig

V = 41
MIXERS = ("kla", "gdn", "attention")


def tiny_lm(mixer: str = "kla", *, seed: int = 0, dtype: torch.dtype = torch.float32, **kw) -> LM:
    """A seeded 2-layer LM with d_model 16 (the b_proj biases moved off 0 so that eta is not 0.5 everywhere)."""
    torch.manual_seed(seed)
    cfg = LMConfig(vocab_size=V, d_model=kw.pop("d_model", 16), n_layers=kw.pop("n_layers", 2), n_heads=2,
                   mixer=mixer, mlp_ratio=2.0, **kw)
    lm = LM(cfg).to(dtype).eval()
    with torch.no_grad():
        for name, p in lm.named_parameters():
            if name.endswith("b_proj.bias"):
                p.normal_(0.0, 0.5)
    return lm


@pytest.fixture
def ids() -> torch.Tensor:
    return torch.randint(0, V, (2, 9), generator=torch.Generator().manual_seed(3))
