"""Decoder-only language model around any registered sequence mixer (KLA, arXiv 2605.08587; per the authors' code).

Pre-norm blocks ``x += Mixer(RMSNorm x); x += SwiGLU(RMSNorm x)``, a final RMSNorm and an LM head (tied to the
embedding by default). No positional encoding outside the mixer: the attention mixer applies RoPE itself.
Init (per the KLA authors' code): embeddings and linear weights N(0, 0.02), linear biases 0, and the
output projections (``o_proj`` of the mixer, ``down_proj`` of the MLP) scaled by 1/sqrt(2 n_layers).

The state returned by ``forward`` is an ``LMState``: a list with one opaque per-layer state (KV cache or
recurrent state) that remembers the config it belongs to.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from paperlab._validate import check_bool, check_choice, check_int, check_positive
from paperlab.layers import MIXERS, RMSNorm, SwiGLU, check_mixer_options, make_mixer
from paperlab.layers.attention import check_attention_mask
from paperlab.models.generate import generate

__all__ = ["LM", "LMConfig", "LMState"]


@dataclass(frozen=True, kw_only=True)
class LMConfig:
    """Architecture of an ``LM``.

    Args:
        vocab_size: number of token ids ``V``.
        d_model: width ``D``.
        n_layers: number of blocks.
        n_heads: heads of the mixer.
        mixer: a key of ``paperlab.layers.MIXERS`` ("kla", "gdn", the other DeltaNetMixer modes, "attention").
        mlp_ratio: SwiGLU inner width = round(mlp_ratio * D).
        tie_embeddings: share the embedding matrix with the LM head.
        norm_eps: eps of the block and final RMSNorms.
        max_seq_len: the context the model is built for (attention computes RoPE for any position, so
            long-context evaluation may go beyond it).
        init_std: std of the normal init of embeddings and linear weights.
        mixer_options: extra keyword options of the mixer constructor (e.g. ``{"expand_v": 4.0}``); options
            that contradict ``mixer`` (``{"mode": "gdn"}`` with ``mixer="kla"``) raise ValueError.
    """

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    mixer: str = "kla"
    mlp_ratio: float = 4.0
    tie_embeddings: bool = True
    norm_eps: float = 1e-6
    max_seq_len: int = 2048
    init_std: float = 0.02
    mixer_options: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        check_int("vocab_size", self.vocab_size, minimum=1)
        check_int("d_model", self.d_model, minimum=1)
        check_int("n_layers", self.n_layers, minimum=1)
        check_int("n_heads", self.n_heads, minimum=1)
        check_choice("mixer", self.mixer, MIXERS)
        check_positive("mlp_ratio", self.mlp_ratio)
        check_bool("tie_embeddings", self.tie_embeddings)
        check_positive("norm_eps", self.norm_eps)
        check_int("max_seq_len", self.max_seq_len, minimum=1)
        check_positive("init_std", self.init_std)
        if not isinstance(self.mixer_options, dict):
            raise TypeError(f"mixer_options must be a dict, got {type(self.mixer_options).__name__}")
        check_mixer_options(self.mixer, self.mixer_options)
        object.__setattr__(self, "mixer_options", dict(self.mixer_options))

    @property
    def mlp_hidden(self) -> int:
        """SwiGLU inner width."""
        return max(1, round(self.mlp_ratio * self.d_model))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (inverse: ``from_dict``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LMConfig:
        """Build from ``to_dict`` output; unknown keys raise ValueError listing the valid ones."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown LMConfig keys {unknown}; valid: {sorted(names)}")
        return cls(**data)


class LMState(list):
    """Per-layer states of one ``LM`` (a list, opaque to callers) tagged with the model's config."""

    def __init__(self, layers: list[Any], config: LMConfig) -> None:
        super().__init__(layers)
        self.config = config


class Block(nn.Module):
    """Pre-norm block: ``x += Mixer(RMSNorm x); x += SwiGLU(RMSNorm x)``."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        self.mixer_norm = RMSNorm(config.d_model, eps=config.norm_eps)
        self.mixer = make_mixer(config.mixer, config.d_model, config.n_heads, **config.mixer_options)
        self.mlp_norm = RMSNorm(config.d_model, eps=config.norm_eps)
        self.mlp = SwiGLU(config.d_model, config.mlp_hidden)

    def forward(self, x: torch.Tensor, *, state: Any, attention_mask: torch.Tensor | None,
                cu_seqlens: torch.Tensor | None = None):
        packed = {} if cu_seqlens is None else {"cu_seqlens": cu_seqlens}
        y, state = self.mixer(self.mixer_norm(x), state=state, attention_mask=attention_mask, **packed)
        x = x + y
        return x + self.mlp(self.mlp_norm(x)), state


class LM(nn.Module):
    """Language model: ``[B, T]`` token ids -> ``[B, T, V]`` next-token logits, with a carried state."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        if not isinstance(config, LMConfig):
            raise TypeError(f"config must be an LMConfig, got {type(config).__name__}")
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.final_norm = RMSNorm(config.d_model, eps=config.norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self._init_weights()
        if config.tie_embeddings:
            self.lm_head.weight = self.embedding.weight

    def _init_weights(self) -> None:
        std = self.config.init_std
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        nn.init.normal_(self.embedding.weight, std=std)
        scale = 1.0 / math.sqrt(2 * self.config.n_layers)
        with torch.no_grad():
            for block in self.blocks:
                assert isinstance(block, Block)  # a ModuleList yields plain Modules to the type checker
                block.mlp.down_proj.weight.mul_(scale)
                out = getattr(block.mixer, "o_proj", None)
                if isinstance(out, nn.Linear):
                    out.weight.mul_(scale)

    def num_parameters(self, *, non_embedding: bool = True) -> int:
        """Parameter count (tied weights counted once); ``non_embedding`` leaves out the embedding matrix."""
        total = sum(p.numel() for p in self.parameters())
        return total - self.embedding.weight.numel() if non_embedding else total

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Token embeddings ``[B, T, D]`` of ``input_ids [B, T]`` (the input of ``hidden_states``)."""
        return self.embedding(self._check_ids(input_ids))

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """LM head: ``h [..., D]`` (after the final norm) -> logits ``[..., V]``."""
        return self.lm_head(h)

    def hidden_states(self, input_ids: torch.Tensor | None = None, *, inputs_embeds: torch.Tensor | None = None,
                      state: LMState | None = None, attention_mask: torch.Tensor | None = None,
                      cu_seqlens: torch.Tensor | None = None) -> tuple[torch.Tensor, LMState]:
        """Run the blocks and the final norm.

        Args:
            input_ids: ``[B, T]`` integer ids in ``[0, V)``; exactly one of ``input_ids`` / ``inputs_embeds``.
            inputs_embeds: ``[B, T, D]`` in the model's dtype (e.g. ``embed(ids)`` or a fed-back hidden state).
            state: the state returned by a previous call on this model (None: start fresh).
            attention_mask: ``[B, T]``, 1 for real tokens and 0 for (left) padding of the new steps.
            cu_seqlens: ``[N + 1]`` cumulative starts of N sequences packed into one row (``B = 1``, as in
                flash-linear-attention): every mixer runs each sequence as if alone. Not with ``state`` or a
                padding mask; the returned state holds the N sequences as a batch of N.

        Returns:
            ``h [B, T, D]`` after the final norm, and the new ``LMState``.
        """
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        x = self.embed(input_ids) if input_ids is not None else self._check_embeds(inputs_embeds)
        mask = None if attention_mask is None else check_attention_mask(
            attention_mask, x.shape[0], x.shape[1], x.device)
        layer_states = self._check_state(state)
        new_states = []
        for block, layer_state in zip(self.blocks, layer_states, strict=True):
            x, layer_state = block(x, state=layer_state, attention_mask=mask, cu_seqlens=cu_seqlens)
            new_states.append(layer_state)
        return self.final_norm(x), LMState(new_states, self.config)

    def initial_state(self, batch: int, *, max_len: int = 0) -> LMState:
        """The empty state (what ``state=None`` means) for ``batch`` sequences, with each attention KV cache
        allocating room for ``max_len`` tokens at its first write, so decoding up to ``max_len`` tokens in all
        never copies a cache (``generate`` passes prompt + new tokens)."""
        mixers: list[Any] = [block.mixer for block in self.blocks]
        return LMState([m.initial_state(batch, max_len=max_len) for m in mixers], self.config)

    def forward(self, input_ids: torch.Tensor, *, state: LMState | None = None,
                attention_mask: torch.Tensor | None = None,
                cu_seqlens: torch.Tensor | None = None) -> tuple[torch.Tensor, LMState]:
        """``input_ids [B, T]`` -> ``(logits [B, T, V], state)``; feeding the state back continues the text.
        ``cu_seqlens``: packed sequences, see ``hidden_states``."""
        h, state = self.hidden_states(input_ids, state=state, attention_mask=attention_mask, cu_seqlens=cu_seqlens)
        return self.logits(h), state

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, *, temperature: float = 1.0,
                 top_k: int | None = None, seed: int | None = None,
                 attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Sample a continuation; see ``paperlab.models.generate.generate``. Returns ``[B, T + new]``."""
        return generate(self, input_ids, max_new_tokens, temperature=temperature, top_k=top_k, seed=seed,
                        attention_mask=attention_mask)

    def _check_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        if not isinstance(input_ids, torch.Tensor):
            raise ValueError(f"input_ids must be a torch.Tensor of token ids, got {type(input_ids).__name__}")
        if input_ids.dtype == torch.bool or input_ids.is_floating_point() or input_ids.is_complex():
            raise ValueError(f"input_ids must have an integer dtype (e.g. torch.long), got {input_ids.dtype}")
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape [B, T], got {tuple(input_ids.shape)}")
        if input_ids.numel() and (input_ids.min() < 0 or input_ids.max() >= self.config.vocab_size):
            raise ValueError(f"input_ids must lie in [0, vocab_size={self.config.vocab_size}), got range "
                             f"[{int(input_ids.min())}, {int(input_ids.max())}]")
        return input_ids.long()

    def _check_embeds(self, embeds: Any) -> torch.Tensor:
        if not isinstance(embeds, torch.Tensor):
            raise ValueError(f"inputs_embeds must be a torch.Tensor, got {type(embeds).__name__}")
        if embeds.dim() != 3 or embeds.shape[-1] != self.config.d_model:
            raise ValueError(f"inputs_embeds must have shape [B, T, {self.config.d_model}], "
                             f"got {tuple(embeds.shape)}")
        dtype = self.embedding.weight.dtype
        if embeds.dtype != dtype:
            raise ValueError(f"inputs_embeds dtype {embeds.dtype} does not match the model dtype {dtype}")
        return embeds

    def _check_state(self, state: LMState | None) -> list[Any]:
        if state is None:
            return [None] * self.config.n_layers
        if not isinstance(state, LMState):
            raise ValueError(f"state must be the LMState returned by this model, got {type(state).__name__}")
        if state.config != self.config:
            raise ValueError(f"state comes from a model with a different config ({state.config}); "
                             f"this model has {self.config}")
        if len(state) != self.config.n_layers:
            raise ValueError(f"state has {len(state)} layers, the model has {self.config.n_layers}")
        return list(state)
