"""Sequence mixers and blocks: ``nn.Module`` wrappers over ``paperlab.ops``.

``MIXERS`` maps a mixer name to a constructor ``(d_model, n_heads, **opts) -> nn.Module`` whose ``forward(x, *,
state=None, attention_mask=None)`` returns ``(y, state)`` (see notes/contracts.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from torch import nn

from paperlab.layers.attention import Attention, KVCache
from paperlab.layers.deltanet import DELTANET_MODES, DeltaNetMixer, DeltaNetState
from paperlab.layers.mlp import SwiGLU
from paperlab.layers.norm import GatedRMSNorm, RMSNorm

__all__ = ["MIXERS", "Attention", "DeltaNetMixer", "DeltaNetState", "GatedRMSNorm", "KVCache", "RMSNorm",
           "SwiGLU", "make_mixer"]

# Every DeltaNetMixer mode ("kla", "gdn", "kla_no_qnorm", "kaczmarz", "longhorn", "no_norm", ...) + attention.
MIXERS: dict[str, Callable[..., nn.Module]] = {
    **{mode: functools.partial(DeltaNetMixer, mode=mode) for mode in DELTANET_MODES},
    "attention": Attention,
}


def make_mixer(name: str, d_model: int, n_heads: int, **opts) -> nn.Module:
    """Build ``MIXERS[name](d_model, n_heads, **opts)``; an unknown name lists the valid ones."""
    if name not in MIXERS:
        raise ValueError(f"mixer={name!r} is not valid; choose one of {sorted(MIXERS)}")
    return MIXERS[name](d_model, n_heads, **opts)
