"""Sequence mixers and blocks: ``nn.Module`` wrappers over ``paperlab.ops``.

``MIXERS`` maps a mixer name to a constructor ``(d_model, n_heads, **opts) -> nn.Module`` whose ``forward(x, *,
state=None, attention_mask=None)`` returns ``(y, state)`` (see notes/contracts.md).
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from paperlab.layers.attention import Attention, KVCache
from paperlab.layers.mlp import SwiGLU

__all__ = ["MIXERS", "Attention", "KVCache", "SwiGLU", "make_mixer"]

MIXERS: dict[str, Callable[..., nn.Module]] = {"attention": Attention}


def make_mixer(name: str, d_model: int, n_heads: int, **opts) -> nn.Module:
    """Build ``MIXERS[name](d_model, n_heads, **opts)``; an unknown name lists the valid ones."""
    if name not in MIXERS:
        raise ValueError(f"mixer={name!r} is not valid; choose one of {sorted(MIXERS)}")
    return MIXERS[name](d_model, n_heads, **opts)
