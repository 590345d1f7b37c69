"""Conversions between paperlab's ``LM`` (and its training runs) and ``PaperlabForCausalLM``.

- ``from_lm(lm)``: a Hugging Face model with ``lm``'s weights (copied, or shared with ``copy=False``).
- ``to_lm(model)``: back to a plain ``LM``.
- ``from_run(path)``: a ``paperlab lm train`` folder (``config.json`` + ``checkpoint.pt``), or one checkpoint file
  with its ``LMConfig``.
- ``load_lm(folder)``: an ``LM`` from a ``save_pretrained`` folder, read with safetensors alone (no transformers).

The state dict of ``PaperlabForCausalLM`` is the LM's with the prefix ``model.``; with tied embeddings
``save_pretrained`` stores the matrix once (as ``model.embedding.weight``) and both loaders tie it again.
``from_lm``/``to_lm``/``from_run`` need the extra ``pip install 'paperlab[hf]'``; ``load_lm`` needs safetensors.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from paperlab.checkpoint import load_checkpoint
from paperlab.hf.configuration import PaperlabConfig
from paperlab.hf.modeling import PaperlabForCausalLM
from paperlab.models.lm import LM, LMConfig
from paperlab.models.lm_train import load_run

__all__ = ["PREFIX", "from_lm", "from_run", "load_lm", "to_lm"]

PREFIX = "model."  # PaperlabForCausalLM.base_model_prefix + "."


def _like(lm: LM) -> dict[str, Any]:
    p = next(lm.parameters())
    return {"device": p.device, "dtype": p.dtype}


def from_lm(lm: LM, *, copy: bool = True, **hf_fields: Any) -> PaperlabForCausalLM:
    """``lm`` as a ``PaperlabForCausalLM`` (same logits), on ``lm``'s device and dtype.

    Args:
        lm: a paperlab ``LM``.
        copy: copy the weights (default) or share them (the Hugging Face model then wraps ``lm`` itself).
        hf_fields: Hugging Face config fields such as ``eos_token_id``.
    """
    if not isinstance(lm, LM):
        raise TypeError(f"lm must be a paperlab LM, got {type(lm).__name__}")
    model = PaperlabForCausalLM(PaperlabConfig.from_lm_config(lm.config, **hf_fields))
    if copy:
        model.model.load_state_dict(lm.state_dict())
        model.to(**_like(lm))
    else:
        model.model = lm
    return model.train(lm.training)


def to_lm(model: PaperlabForCausalLM, *, copy: bool = True) -> LM:
    """The paperlab ``LM`` inside ``model``: a copy (default) or the wrapped module itself (``copy=False``)."""
    if not isinstance(model, PaperlabForCausalLM):
        raise TypeError(f"model must be a PaperlabForCausalLM, got {type(model).__name__}")
    if not copy:
        return model.model
    lm = LM(model.model.config)
    lm.load_state_dict(model.model.state_dict())
    return lm.to(**_like(model.model)).train(model.training)


def from_run(path: str | os.PathLike, *, config: LMConfig | None = None, **hf_fields: Any) -> PaperlabForCausalLM:
    """A ``PaperlabForCausalLM`` from paperlab's own files.

    Args:
        path: a ``paperlab lm train`` output folder, or a ``checkpoint.pt`` written by ``paperlab.checkpoint``.
        config: the ``LMConfig`` of a bare checkpoint file (a run folder records its own).
        hf_fields: Hugging Face config fields such as ``eos_token_id``.
    """
    path = Path(path)
    if path.is_dir():
        if config is not None:
            raise ValueError("a run folder records its config; pass config= only with a checkpoint file")
        lm, _ = load_run(path)
    else:
        if config is None:
            raise ValueError(f"{path} is not a run folder; a checkpoint file needs its LMConfig as config=")
        lm = LM(config)
        lm.load_state_dict(load_checkpoint(path)["model"])
        lm.eval()
    return from_lm(lm, copy=False, **hf_fields)


def _lm_config_from_json(data: dict[str, Any]) -> LMConfig:
    if data.get("model_type") != PaperlabConfig.model_type:
        raise ValueError(f"config.json has model_type {data.get('model_type')!r}, expected 'paperlab'")
    names = ("vocab_size", "d_model", "n_layers", "n_heads", "mixer", "mlp_ratio", "norm_eps", "max_seq_len",
             "init_std")
    fields: dict[str, Any] = {name: data[name] for name in names if name in data}
    fields["tie_embeddings"] = bool(data.get("tie_word_embeddings", True))
    fields["mixer_options"] = dict(data.get("mixer_options") or {})
    return LMConfig(**fields)


def _load_file(path: Path) -> dict[str, torch.Tensor]:
    try:
        from safetensors.torch import load_file
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"reading {path.name} needs safetensors: pip install 'paperlab[hf]'") from err
    return load_file(path)


def _read_weights(folder: Path) -> dict[str, torch.Tensor]:
    single = folder / "model.safetensors"
    if single.is_file():
        return _load_file(single)
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        raise FileNotFoundError(f"{folder} holds neither model.safetensors nor model.safetensors.index.json")
    weights: dict[str, torch.Tensor] = {}
    for shard in sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())):
        weights.update(_load_file(folder / shard))
    return weights


def load_lm(folder: str | os.PathLike) -> LM:
    """The paperlab ``LM`` saved by ``PaperlabForCausalLM.save_pretrained(folder)``, read with safetensors alone.

    Raises ``ValueError`` when a weight is missing or left over (tied embeddings may be stored once).
    """
    folder = Path(folder)
    config = _lm_config_from_json(json.loads((folder / "config.json").read_text(encoding="utf-8")))
    weights = {k.removeprefix(PREFIX): v for k, v in _read_weights(folder).items()}
    lm = LM(config)
    if config.tie_embeddings:
        weights.setdefault("lm_head.weight", weights.get("embedding.weight", torch.empty(0)))
    expected = set(lm.state_dict())
    missing, extra = sorted(expected - set(weights)), sorted(set(weights) - expected)
    if missing or extra:
        raise ValueError(f"{folder} does not match its config: missing weights {missing}, unexpected {extra}")
    lm.load_state_dict(weights)
    return lm.eval()
