"""Sampling from an ``LM``: one prefill pass, then one token at a time with the carried state.

The state is the recurrent state for KLA/GDN (O(1) work per token in the context length) and the KV cache for
attention. Randomness: row ``b`` of the batch draws from its own generator seeded with ``seed + b``, so a
batched call gives the same tokens as calling with the ``b``-th prompt alone and ``seed + b`` (and greedy
decoding, ``temperature=0``, gives the same tokens as one prompt at a time).

Non-finite logits (a diverged checkpoint) raise instead of decoding to an arbitrary id, and a temperature is
0 (greedy) or at least ``MIN_TEMPERATURE``: below it ``logits / temperature`` overflows for ordinary logits
(1e-320 gives inf), and sampling is already greedy in effect.
"""

from __future__ import annotations

import torch
from torch import nn
from tqdm.auto import tqdm

from paperlab._validate import check_int, check_positive
from paperlab.layers.attention import check_attention_mask

__all__ = ["MIN_TEMPERATURE", "generate", "sample_next"]

MIN_TEMPERATURE = 1e-4  # float32 logits (|z| < 3.4e38) over it stay finite in float64
_MAX_SEED = 2**64 - 1  # the largest seed torch.Generator.manual_seed takes


def _check_temperature(temperature: float) -> float:
    temperature = check_positive("temperature", temperature, allow_zero=True)
    if 0 < temperature < MIN_TEMPERATURE:
        raise ValueError(f"temperature must be 0 (greedy) or >= {MIN_TEMPERATURE}, got {temperature!r}")
    return temperature


def _check_logits_shape(logits: object) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a [B, V] torch.Tensor, got {type(logits).__name__}")
    if logits.dim() != 2 or logits.shape[1] == 0:
        raise ValueError(f"logits must have shape [B, V] with V >= 1, got {tuple(logits.shape)}")
    if logits.dtype == torch.bool or logits.is_complex():
        raise ValueError(f"logits must be real numbers, got dtype {logits.dtype}")
    return logits


def _check_generators(generators: object, batch: int) -> list[torch.Generator]:
    if not isinstance(generators, (list, tuple)) or not all(isinstance(g, torch.Generator) for g in generators):
        got = type(generators).__name__ if not isinstance(generators, (list, tuple)) else (
            f"a {type(generators).__name__} of {sorted({type(g).__name__ for g in generators})}")
        raise TypeError(f"generators must be a list of torch.Generator (one per row) when sampling "
                        f"(temperature > 0), got {got}")
    if len(generators) != batch:
        raise ValueError(f"generators must hold one torch.Generator per row of logits: {batch} rows, got "
                         f"{len(generators)} generators")
    return list(generators)


def _check_logits(logits: torch.Tensor, step: int | None = None) -> None:
    if not torch.isfinite(logits).all():
        rows = torch.nonzero(~torch.isfinite(logits).all(-1)).flatten().tolist()
        at = "" if step is None else f" at step {step}"
        raise ValueError(f"logits contain NaN or inf{at} in batch rows {rows[:5]} (shape {tuple(logits.shape)}): "
                         "the model has diverged or its checkpoint is damaged; nothing can be sampled")


def sample_next(logits: torch.Tensor, *, temperature: float, top_k: int | None,
                generators: list[torch.Generator] | None) -> torch.Tensor:
    """Pick one token per row of ``logits [B, V]``.

    ``temperature == 0`` is greedy (argmax); otherwise sample from ``softmax(logits / temperature)`` restricted
    to the ``top_k`` largest logits, by inverse CDF with one uniform draw per row from ``generators[b]``.
    Returns ``[B]`` long (``[0]`` for an empty batch). Raises ValueError on non-finite logits,
    ``0 < temperature < MIN_TEMPERATURE``, ``top_k < 1`` or logits that are not ``[B, V]`` with ``V >= 1``, and
    TypeError/ValueError when sampling without one generator per row.
    """
    _check_temperature(temperature)
    _check_logits_shape(logits)
    if top_k is not None:
        check_int("top_k", top_k, minimum=1)
    _check_logits(logits)
    if temperature == 0:
        return logits.argmax(-1)
    generators = _check_generators(generators, logits.shape[0])
    if logits.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long, device=logits.device)
    scaled = logits.double() / temperature
    if top_k is not None and top_k < scaled.shape[-1]:
        threshold = scaled.topk(top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < threshold, float("-inf"))
    cdf = torch.softmax(scaled, dim=-1).cumsum(-1)
    u = torch.stack([torch.rand((), generator=g, dtype=torch.float64, device=g.device) for g in generators])
    idx = torch.searchsorted(cdf, (u * cdf[:, -1]).to(cdf.device)[:, None]).squeeze(-1)
    return idx.clamp_max(logits.shape[-1] - 1)


def _generators(batch: int, seed: int | None, device: torch.device) -> list[torch.Generator]:
    gens = []
    for b in range(batch):
        g = torch.Generator(device=device)
        if seed is None:
            g.seed()  # fresh OS entropy; never touches torch's global RNG
        else:
            g.manual_seed(seed + b)
        gens.append(g)
    return gens


@torch.no_grad()
def generate(model: nn.Module, input_ids: torch.Tensor, max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, seed: int | None = None, attention_mask: torch.Tensor | None = None,
             progress: bool = False) -> torch.Tensor:
    """Continue ``input_ids`` by ``max_new_tokens`` tokens.

    Args:
        model: an ``LM`` (``model(ids, state=, attention_mask=) -> (logits, state)`` and ``initial_state``).
        input_ids: ``[B, T]`` prompts, left-padded when their lengths differ.
        max_new_tokens: number of tokens to append.
        temperature: 0 for greedy decoding, >= ``MIN_TEMPERATURE`` to sample.
        top_k: sample only among the ``top_k`` most likely tokens (None: all).
        seed: row ``b`` samples with a generator seeded ``seed + b`` (None: fresh entropy); ``0 <= seed`` and
            ``seed + B - 1 < 2**64``.
        attention_mask: ``[B, T]``, 0 on the left padding of each prompt.
        progress: show a progress bar over the new tokens.

    Returns:
        ``[B, T + max_new_tokens]``: the prompts (with their padding) followed by the new tokens.

    Raises:
        ValueError: on bad arguments, and when the model's logits at some step contain NaN or inf.
    """
    if not isinstance(model, nn.Module) or not callable(getattr(model, "initial_state", None)):
        raise TypeError("model must be an LM (an nn.Module with model(ids, state=, attention_mask=) -> (logits, "
                        f"state) and initial_state(batch, max_len=)), got {type(model).__name__}")
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    _check_temperature(temperature)
    if top_k is not None:
        check_int("top_k", top_k, minimum=1)
    if seed is not None:
        check_int("seed", seed, minimum=0)
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.shape[1] == 0:
        shape = tuple(input_ids.shape) if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__
        raise ValueError(f"input_ids must be a [B, T] tensor with T >= 1, got {shape}")
    batch = input_ids.shape[0]
    if seed is not None and temperature != 0 and batch and seed + batch - 1 > _MAX_SEED:
        raise ValueError(f"seed must be at most 2**64 - B = {_MAX_SEED + 1 - batch} for a batch of B = {batch} "
                         f"(row b samples with seed + b, and a torch.Generator takes seeds below 2**64), got {seed}")
    if attention_mask is not None:
        mask = check_attention_mask(attention_mask, input_ids.shape[0], input_ids.shape[1], input_ids.device)
        if not mask[:, -1].all():
            raise ValueError("attention_mask must mark the last prompt position as real in every row "
                             "(pad prompts on the left)")
    gens = None if temperature == 0 else _generators(input_ids.shape[0], seed, input_ids.device)
    # Room for the whole text up front: attention KV caches are then written in place, never copied per step.
    state = model.initial_state(input_ids.shape[0], max_len=input_ids.shape[1] + max_new_tokens)  # type: ignore[operator]
    logits, state = model(input_ids, state=state, attention_mask=attention_mask)
    new = []
    for i in tqdm(range(max_new_tokens), desc="generate", disable=not progress, leave=False):
        _check_logits(logits[:, -1], step=i)
        token = sample_next(logits[:, -1], temperature=temperature, top_k=top_k, generators=gens)
        new.append(token)
        if i + 1 < max_new_tokens:
            logits, state = model(token[:, None], state=state)
    if not new:
        return input_ids.clone()
    return torch.cat((input_ids, torch.stack(new, 1).to(input_ids.dtype)), 1)
