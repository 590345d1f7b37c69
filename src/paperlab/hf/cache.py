"""``PaperlabCache``: a ``transformers.Cache`` holding the decode state of a paperlab ``LM``, one layer each.

paperlab's mixers keep an opaque per-layer state and return a new one from every call (``DeltaNetState``: three
short-conv caches, the ``[B, H, K, V]`` recurrent matrix and the count of real tokens, for KLA, GDN and the other
delta-rule modes; ``KVCache``: keys, values, padding mask and RoPE positions, for attention). A
``PaperlabCacheLayer`` stores that state whole, so a Hugging Face forward with the cache computes exactly what
``LM.forward(ids, state=...)`` does. Beam search (``reorder_cache``) and batch expansion
(``batch_repeat_interleave``, ``batch_select_indices``) act on every tensor of the state. Rolling a recurrent
state back is impossible, so ``crop`` raises (``is_croppable`` is False: no assisted decoding).

Needs the extra: ``pip install 'paperlab[hf]'``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from paperlab.hf._compat import AVAILABLE, missing_base
from paperlab.layers import DeltaNetState, KVCache
from paperlab.models.lm import LMConfig, LMState

if TYPE_CHECKING or AVAILABLE:
    from transformers.cache_utils import Cache, CacheLayerMixin
else:
    Cache = missing_base("Cache")
    CacheLayerMixin = missing_base("CacheLayerMixin")

__all__ = ["PaperlabCache", "PaperlabCacheLayer", "map_layer_state"]


def map_layer_state(state: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``state`` (a ``DeltaNetState``, ``KVCache`` or None) with ``fn`` applied to each of its tensors.

    The result owns new tensors (a ``KVCache`` loses its preallocated storage and regrows it on its next append).
    """
    if state is None:
        return None
    if isinstance(state, KVCache):
        return KVCache(k=fn(state.k), v=fn(state.v), mask=fn(state.mask), pos=fn(state.pos), reserve=state.reserve)
    if isinstance(state, DeltaNetState):
        return DeltaNetState(**{f.name: fn(getattr(state, f.name)) for f in dataclasses.fields(state)})
    raise TypeError(f"unknown paperlab layer state {type(state).__name__}; expected DeltaNetState or KVCache")


class PaperlabCacheLayer(CacheLayerMixin):
    """One layer's paperlab state (``state``: None before the first forward) and the number of steps it has seen
    (``seen``: real and padded, the length Hugging Face's attention mask has; ``get_seq_length``)."""

    is_compileable = False
    is_croppable = False
    supports_early_init = False

    def __init__(self) -> None:
        super().__init__()
        self.state: Any = None
        self.seen = 0

    def __repr__(self) -> str:
        kind = "empty" if self.state is None else type(self.state).__name__
        return f"PaperlabCacheLayer({kind}, seen={self.seen})"

    def set_state(self, state: Any, steps: int) -> None:
        """Store the state a mixer returned after ``steps`` more steps."""
        self.state = state
        self.seen += steps
        self.is_initialized = state is not None
        if isinstance(state, KVCache):  # for callers that look at Hugging Face's attributes
            self.keys, self.values = state.k, state.v

    def _map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        self.state = map_layer_state(self.state, fn)
        if isinstance(self.state, KVCache):
            self.keys, self.values = self.state.k, self.state.v

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Nothing to allocate: the mixer creates its state at its first call."""

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Not used: paperlab's mixers return their whole state, which ``PaperlabForCausalLM`` stores here."""
        raise NotImplementedError("a PaperlabCacheLayer is written by PaperlabForCausalLM.forward, not by update()")

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """``(kv_length, kv_offset)`` for ``query_length`` new steps."""
        return self.seen + query_length, 0

    def get_seq_length(self) -> int:
        """Steps seen so far (real and padded)."""
        return self.seen

    def get_max_length(self) -> int:
        """-1: no maximum (the recurrent state is fixed-size; the KV cache grows)."""
        return -1

    @property
    def batch_size(self) -> int:
        """Rows of the stored state (-1 before the first forward)."""
        if isinstance(self.state, KVCache):
            return int(self.state.k.shape[0])
        if isinstance(self.state, DeltaNetState):
            return int(self.state.recurrent.shape[0])
        return -1

    def reset(self) -> None:
        """Forget the state (the next forward starts a new sequence)."""
        self.state, self.seen, self.is_initialized = None, 0, False
        self.keys = None
        self.values = None

    def offload(self) -> None:
        """Move the state to the CPU."""
        self._map(lambda t: t.to("cpu", non_blocking=True))

    def prefetch(self) -> None:
        """Nothing to do: the mixers move nothing back; keep the model and the cache on one device."""

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Keep the rows ``beam_idx`` (beam search)."""
        self._map(lambda t: t.index_select(0, beam_idx.to(t.device)))

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Repeat each row ``repeats`` times."""
        self._map(lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep the rows ``indices``."""
        self._map(lambda t: t[indices.to(t.device)])

    def crop(self, tokens_to_remove: int) -> None:
        """Refused: a recurrent state cannot be rolled back (so assisted decoding is not supported)."""
        raise NotImplementedError("a paperlab cache cannot be cropped: the recurrent state and the conv caches "
                                  "cannot be rolled back to an earlier step")


class PaperlabCache(Cache):
    """The decode state of a paperlab ``LM`` as a ``transformers.Cache``: one ``PaperlabCacheLayer`` per block.

    ``PaperlabForCausalLM.forward`` creates one when ``use_cache`` is on and none is passed (it also takes over an
    empty cache of another class, such as the ``DynamicCache`` that ``generate`` makes), reads it with
    ``lm_state()`` and writes the new state back with ``store()``.

    Args:
        config: the model's ``PaperlabConfig`` or ``LMConfig``.
        state: an ``LMState`` from ``LM.forward`` to start from (its steps counted as ``seen``), or None.
        seen: steps (real and padded) that ``state`` has consumed.
    """

    def __init__(self, config: Any, *, state: LMState | None = None, seen: int = 0) -> None:
        lm_config = config if isinstance(config, LMConfig) else config.lm_config()
        super().__init__(layers=[PaperlabCacheLayer() for _ in range(lm_config.n_layers)])
        self.lm_config = lm_config
        if state is not None:
            self.store(state, seen)

    def lm_state(self) -> LMState | None:
        """The state to pass to ``LM.forward`` (None while the cache is empty)."""
        layers = [layer.state for layer in self._paperlab_layers()]
        if all(s is None for s in layers):
            return None
        return LMState(layers, self.lm_config)

    def store(self, state: LMState, steps: int) -> None:
        """Keep ``state`` (returned by ``LM.forward`` after ``steps`` more steps)."""
        if not isinstance(state, LMState) or state.config != self.lm_config or len(state) != len(self.layers):
            raise ValueError("state must be an LMState of the model this cache belongs to")
        for layer, layer_state in zip(self._paperlab_layers(), state, strict=True):
            layer.set_state(layer_state, steps)

    def _paperlab_layers(self) -> list[PaperlabCacheLayer]:
        layers = [layer for layer in self.layers if isinstance(layer, PaperlabCacheLayer)]
        if len(layers) != len(self.layers):
            raise TypeError("a PaperlabCache holds only PaperlabCacheLayer layers")
        return layers
