"""Sequence mixers and blocks: ``nn.Module`` wrappers over ``paperlab.ops``.

``MIXERS`` maps a mixer name to a constructor ``(d_model, n_heads, **opts) -> nn.Module``. Every mixer follows
one contract, which ``paperlab.models.lm`` relies on:

- ``forward(x [B, T, D], *, state=None, attention_mask=None) -> (y [B, T, D], state)``.
- ``state`` is opaque to callers: ``None`` means the empty state; pass the returned one back to continue the
  sequence, so a split run with the state carried (or token-by-token decoding) equals one pass. It is a
  ``DeltaNetState`` for ``DeltaNetMixer`` (conv caches and a fixed-size ``[B, H, K, V]`` recurrent matrix) and a
  growing ``KVCache`` for ``Attention`` (written in place into preallocated storage when decoding).
- ``initial_state(batch, *, max_len=0)`` gives the state ``None`` stands for, with room for ``max_len`` tokens
  (a KV cache allocates it at its first write; the recurrent state has a fixed size).
- ``attention_mask [B, T]`` holds 1 (or True) for real tokens and 0 for padding, with padding on the left;
  padding never changes what real tokens see (the recurrent state and conv caches skip padded steps, and
  attention masks padded keys), so a padded batch equals per-sequence runs.
- ``state_size(batch, ...)`` gives the bytes of decode state (``Attention`` also needs ``seq_len``).
- ``forward(..., cu_seqlens=...)`` runs packed sequences (flash-linear-attention's varlen convention, see
  ``paperlab.layers.varlen``): ``x [1, T, D]`` holds N sequences with cumulative starts ``cu_seqlens [N + 1]``,
  each computed as if alone; the returned state continues them as a batch of N. Not with a state or padding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from paperlab.layers.attention import Attention, KVCache
from paperlab.layers.deltanet import DELTANET_MODES, DeltaNetMixer, DeltaNetState, NonFiniteActivationError
from paperlab.layers.mlp import SwiGLU
from paperlab.layers.norm import GatedRMSNorm, RMSNorm

__all__ = ["MIXERS", "Attention", "DeltaNetMixer", "DeltaNetState", "GatedRMSNorm", "KVCache",
           "NonFiniteActivationError", "RMSNorm", "SwiGLU", "check_mixer_options", "make_mixer"]

# Every DeltaNetMixer mode ("kla", "gdn", "kla_no_qnorm", "kaczmarz", "longhorn", "no_norm", ...) + attention.
MIXERS: dict[str, Callable[..., nn.Module]] = {
    **{mode: functools.partial(DeltaNetMixer, mode=mode) for mode in DELTANET_MODES},
    "attention": Attention,
}


def check_mixer_options(name: str, options: Mapping[str, Any]) -> None:
    """Refuse ``options`` that change what the mixer ``name`` selects: a keyword its ``MIXERS`` entry binds
    (``mode`` of the DeltaNetMixer names) given another value (``mixer="kla", mode="gdn"`` would build GDN).
    The bound value itself is allowed (redundant)."""
    entry = MIXERS[name]
    bound = entry.keywords if isinstance(entry, functools.partial) else {}
    for key, value in options.items():
        if key in bound and value != bound[key]:
            hint = f"; use mixer={value!r} instead" if isinstance(value, str) and value in MIXERS else ""
            raise ValueError(f"mixer_options {key}={value!r} contradicts mixer={name!r}, which is {key}="
                             f"{bound[key]!r}{hint}")


def make_mixer(name: str, d_model: int, n_heads: int, **opts) -> nn.Module:
    """Build ``MIXERS[name](d_model, n_heads, **opts)``; an unknown name lists the valid ones, and an option
    that contradicts the name (see ``check_mixer_options``) raises ValueError."""
    if name not in MIXERS:
        raise ValueError(f"mixer={name!r} is not valid; choose one of {sorted(MIXERS)}")
    check_mixer_options(name, opts)
    return MIXERS[name](d_model, n_heads, **opts)
