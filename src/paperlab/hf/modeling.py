"""``PaperlabForCausalLM``: paperlab's causal ``LM`` (any mixer: KLA, GDN, attention, ...) as a Hugging Face model.

It wraps one ``paperlab.models.LM`` (``self.model``), so its state dict keys are ``model.`` + the LM's own
(``model.embedding.weight``, ``model.blocks.0.mixer.q_proj.weight``, ...), and its forward computes exactly what
``LM.forward`` computes. The decode state lives in a ``PaperlabCache``; ``generate`` works with greedy, sampled and
beam decoding (not assisted decoding: a recurrent state cannot be rolled back). The loss with ``labels`` is
Hugging Face's causal-LM loss (labels shifted inside, ``-100`` ignored), so ``transformers.Trainer`` trains it.

Needs the extra: ``pip install 'paperlab[hf]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from paperlab.hf._compat import AVAILABLE, missing_base
from paperlab.hf.cache import PaperlabCache
from paperlab.hf.configuration import PaperlabConfig
from paperlab.models.lm import LM

if TYPE_CHECKING or AVAILABLE:
    from transformers import Cache, GenerationMixin, PreTrainedModel
    from transformers.modeling_outputs import CausalLMOutputWithPast
else:
    Cache = missing_base("Cache")
    GenerationMixin = missing_base("GenerationMixin")
    PreTrainedModel = missing_base("PreTrainedModel")

__all__ = ["PaperlabForCausalLM"]

# Keyword arguments that the loss takes (Trainer passes num_items_in_batch), and flags that are accepted when off.
_LOSS_KWARGS = ("num_items_in_batch", "ignore_index", "shift_labels")
_OFF_FLAGS = ("output_attentions", "output_hidden_states", "position_ids")


class PaperlabForCausalLM(PreTrainedModel, GenerationMixin):
    """A paperlab ``LM`` with Hugging Face's model API: ``from_pretrained``/``save_pretrained`` (safetensors),
    ``generate``, ``Trainer``, ``AutoModelForCausalLM`` (after ``import paperlab.hf``).

    Args:
        config: a ``PaperlabConfig`` (``PaperlabConfig.from_lm_config(lm_config)`` turns an ``LMConfig`` into one).
    """

    config_class = PaperlabConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _no_split_modules = ["Block"]
    _tied_weights_keys = {"model.lm_head.weight": "model.embedding.weight"}
    # recurrent state: generate refuses assisted decoding, which needs to roll the cache back (transformers < 5.25
    # reads this flag; later releases read the cache's is_croppable, False for PaperlabCache)
    _is_stateful = True

    def __init__(self, config: PaperlabConfig) -> None:
        super().__init__(config)
        self.model = LM(config.lm_config())
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        """Nothing to do: ``LM`` initialises its own weights (the KLA authors' scheme) when it is built."""

    def get_input_embeddings(self) -> nn.Embedding:
        """The token embedding ``model.embedding``."""
        return self.model.embedding

    def set_input_embeddings(self, value: nn.Module) -> None:
        """Replace the token embedding (same vocabulary size and width)."""
        self._check_same_shape(self.model.embedding.weight, value)
        self.model.embedding = value

    def get_output_embeddings(self) -> nn.Linear:
        """The LM head ``model.lm_head`` (the embedding matrix when the weights are tied)."""
        return self.model.lm_head

    def set_output_embeddings(self, new_embeddings: nn.Module) -> None:
        """Replace the LM head (same shape)."""
        self._check_same_shape(self.model.lm_head.weight, new_embeddings)
        self.model.lm_head = new_embeddings

    @staticmethod
    def _check_same_shape(old: torch.Tensor, new: nn.Module) -> None:
        weight = getattr(new, "weight", None)
        if not isinstance(weight, torch.Tensor) or weight.shape != old.shape:
            raise ValueError(f"the new module must have a weight of shape {tuple(old.shape)} (the LM's vocabulary "
                             "size is fixed by its config)")

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                cache: Cache | None = None, inputs_embeds: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, use_cache: bool | None = None,
                logits_to_keep: int | torch.Tensor = 0, return_dict: bool | None = None,
                past_key_values: Cache | None = None, **kwargs: Any) -> Any:
        """Next-token logits for ``input_ids [B, T]`` (or ``inputs_embeds [B, T, D]``), continuing ``cache``.

        Args:
            input_ids: ``[B, T]`` token ids; exactly one of ``input_ids`` / ``inputs_embeds``.
            attention_mask: ``[B, T]`` or ``[B, past + T]`` (Hugging Face's full-length mask), 1 for real tokens and
                0 for padding (left padding for generation; right padding is fine for training).
            cache: a ``PaperlabCache`` from an earlier call (an empty cache of another class is replaced by one);
                ``past_key_values`` is accepted as its older name.
            labels: ``[B, T]`` targets (shifted inside, ``-100`` ignored); the loss is Hugging Face's causal-LM
                cross-entropy (``num_items_in_batch`` from ``Trainer`` is honoured).
            use_cache: return the cache (default: ``config.use_cache`` outside training).
            logits_to_keep: compute the logits of the last ``logits_to_keep`` positions only (0: all).
            return_dict: False returns a tuple ``(loss?, logits, cache?)``.

        Returns:
            ``CausalLMOutputWithPast(loss, logits, cache)``.
        """
        cache = self._cache(cache, past_key_values, use_cache)
        loss_kwargs = self._loss_kwargs(kwargs)
        steps = (input_ids if input_ids is not None else inputs_embeds).shape[1]  # type: ignore[union-attr]
        mask = self._step_mask(attention_mask, steps, cache)
        state = cache.lm_state() if isinstance(cache, PaperlabCache) else None
        h, new_state = self.model.hidden_states(input_ids, inputs_embeds=inputs_embeds, state=state,
                                                attention_mask=mask)
        if isinstance(cache, PaperlabCache):
            cache.store(new_state, steps)
        if isinstance(logits_to_keep, int):
            h = h[:, -logits_to_keep:] if logits_to_keep > 0 else h
        else:
            h = h[:, logits_to_keep]
        logits = self.model.logits(h)
        loss = None
        if labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **loss_kwargs)
        out = CausalLMOutputWithPast(loss=loss, logits=logits, cache=cache)
        use_dict = return_dict if return_dict is not None else self.config.return_dict
        return out if use_dict else out.to_tuple()

    def _cache(self, cache: Cache | None, past_key_values: Cache | None, use_cache: bool | None) -> Cache | None:
        """The ``PaperlabCache`` to read and write (None without a cache)."""
        if past_key_values is not None:
            if cache is not None:
                raise ValueError("pass the cache as `cache` or as `past_key_values`, not both")
            cache = past_key_values
        if use_cache is None:
            use_cache = bool(self.config.use_cache) and not self.training
        if cache is None:
            return PaperlabCache(self.model.config) if use_cache else None
        if isinstance(cache, PaperlabCache):
            if cache.lm_config != self.model.config:
                raise ValueError("the cache belongs to a model with another config")
            return cache
        if isinstance(cache, Cache) and cache.get_seq_length() == 0:
            return PaperlabCache(self.model.config)  # e.g. the empty DynamicCache that generate() makes
        raise ValueError(f"cache must be a PaperlabCache (from an earlier call) or an empty Cache, got "
                         f"{type(cache).__name__}" + (" holding states" if isinstance(cache, Cache) else ""))

    @staticmethod
    def _loss_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(k for k, v in kwargs.items()
                         if k not in _LOSS_KWARGS and not (k in _OFF_FLAGS and (v is None or v is False)))
        if unknown:
            hint = "; position ids come from the attention mask" if "position_ids" in unknown else ""
            raise TypeError(f"PaperlabForCausalLM.forward got unsupported arguments {unknown}{hint}")
        return {k: v for k, v in kwargs.items() if k in _LOSS_KWARGS}

    @staticmethod
    def _step_mask(attention_mask: torch.Tensor | None, steps: int, cache: Cache | None) -> torch.Tensor | None:
        """The ``[B, steps]`` mask of the new steps (None when every step is real: the same result, computed the
        way ``LM.generate`` does)."""
        if attention_mask is None:
            return None
        if not isinstance(attention_mask, torch.Tensor) or attention_mask.dim() != 2:
            raise ValueError("attention_mask must be a 2-D [B, T] tensor of 0/1 (a 4-D mask is not supported)")
        if attention_mask.is_floating_point():  # some collators build float masks; LM takes bool or integer 0/1
            if not ((attention_mask == 0) | (attention_mask == 1)).all():
                raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token)")
            attention_mask = attention_mask.long()
        past = cache.get_seq_length() if cache is not None else 0
        if attention_mask.shape[1] == past + steps:
            attention_mask = attention_mask[:, past:]
        elif attention_mask.shape[1] != steps:
            raise ValueError(f"attention_mask has {attention_mask.shape[1]} columns; expected the {steps} new steps "
                             f"or all {past + steps} (past + new)")
        return None if bool((attention_mask == 1).all()) else attention_mask
