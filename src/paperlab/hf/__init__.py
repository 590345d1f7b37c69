"""Hugging Face integration: paperlab's causal LM (KLA, GDN, attention, ...) as a ``transformers`` model.

Importing ``paperlab.hf`` registers ``PaperlabConfig`` (model_type ``"paperlab"``) and ``PaperlabForCausalLM``
with ``AutoConfig`` / ``AutoModelForCausalLM``; ``import paperlab`` alone never imports ``transformers``.
Needs the extra ``pip install 'paperlab[hf]'`` (``transformers.Trainer`` also needs ``accelerate``); without it
this package still imports, and using any of its classes raises ``ImportError`` naming that command.

| name | what |
|---|---|
| ``PaperlabConfig`` | the ``LMConfig`` fields as a ``PreTrainedConfig`` (``lm_config()``, ``from_lm_config``) |
| ``PaperlabForCausalLM`` | ``forward(input_ids, attention_mask, cache, labels)``, ``generate``, ``save_pretrained`` |
| ``PaperlabCache`` | the per-layer decode state (recurrent matrix, conv caches, KV cache) as a ``transformers.Cache`` |
| ``from_lm`` / ``to_lm`` / ``from_run`` | convert an ``LM`` (or a ``paperlab lm train`` folder) and back |
| ``load_lm`` | an ``LM`` from a ``save_pretrained`` folder, read with safetensors alone |
| ``to_fla_gated_deltanet`` / ``from_fla_gated_deltanet`` | a delta-rule mixer's weights in fla's naming |
"""

from __future__ import annotations

from paperlab.hf._compat import AVAILABLE, INSTALL_HINT, require_transformers
from paperlab.hf.cache import PaperlabCache, PaperlabCacheLayer
from paperlab.hf.configuration import PaperlabConfig
from paperlab.hf.convert import from_lm, from_run, load_lm, to_lm
from paperlab.hf.fla import from_fla_gated_deltanet, to_fla_gated_deltanet
from paperlab.hf.modeling import PaperlabForCausalLM

__all__ = ["AVAILABLE", "INSTALL_HINT", "PaperlabCache", "PaperlabCacheLayer", "PaperlabConfig",
           "PaperlabForCausalLM", "from_fla_gated_deltanet", "from_lm", "from_run", "load_lm", "register",
           "require_transformers", "to_fla_gated_deltanet", "to_lm"]


def register() -> None:
    """Register the config and model with ``AutoConfig`` / ``AutoModelForCausalLM`` (done on import; idempotent)."""
    require_transformers("paperlab.hf.register")
    from transformers import AutoConfig, AutoModelForCausalLM  # (pip install 'paperlab[hf]')

    AutoConfig.register(PaperlabConfig.model_type, PaperlabConfig, exist_ok=True)
    AutoModelForCausalLM.register(PaperlabConfig, PaperlabForCausalLM, exist_ok=True)


if AVAILABLE:
    register()
