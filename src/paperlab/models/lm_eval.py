"""Perplexity of an ``LM`` on a token stream, at the training context and far beyond it.

Every context length is evaluated by running the model over each window in chunks and carrying the state
(recurrent state for KLA/GDN: memory O(chunk), not O(T^2); KV cache for attention, whose RoPE positions simply
keep counting). Chunked evaluation equals the full forward pass (tested), so the chunk size only trades memory
for speed. Every token is scored exactly once; nothing is padded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from paperlab._validate import check_int

__all__ = ["evaluate_lengths", "evaluate_ppl"]


def _wide(logits: torch.Tensor) -> torch.Tensor:
    """Logits in at least fp32 (bf16 logits lose the loss's low digits); fp64 stays fp64."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32))


def _metrics(nll: float, count: int, context: int) -> dict[str, float]:
    loss = nll / count
    return {"context": context, "tokens": count, "loss": loss, "ppl": math.exp(min(loss, 700.0)),
            "bits_per_token": loss / math.log(2)}


@torch.no_grad()
def evaluate_ppl(model: nn.Module, tokens: torch.Tensor, *, context: int, chunk: int | None = None,
                 batch_size: int = 8, max_windows: int | None = None) -> dict[str, float]:
    """Mean next-token loss over non-overlapping windows of ``context`` tokens.

    Args:
        model: an ``LM``.
        tokens: ``[N]`` long token stream; window ``i`` predicts ``tokens[i*context + 1 : (i+1)*context + 1]``
            from the preceding tokens of the same window (state starts fresh per window).
        context: window length.
        chunk: steps per forward call inside a window, carrying the state (default: the whole window).
        batch_size: windows per forward call.
        max_windows: evaluate only the first windows.

    Returns:
        ``{"context", "tokens", "loss" (nats/token), "ppl", "bits_per_token"}``.
    """
    check_int("context", context, minimum=1)
    chunk = context if chunk is None else check_int("chunk", chunk, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
        raise ValueError("tokens must be a 1-D tensor of token ids")
    n_windows = (tokens.numel() - 1) // context
    if max_windows is not None:
        n_windows = min(n_windows, check_int("max_windows", max_windows, minimum=1))
    if n_windows < 1:
        raise ValueError(f"need at least context + 1 = {context + 1} tokens, got {tokens.numel()}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    nll, count = 0.0, 0
    try:
        for first in range(0, n_windows, batch_size):
            rows = torch.arange(first, min(first + batch_size, n_windows))
            idx = rows[:, None] * context + torch.arange(context + 1)
            windows = tokens[idx].to(device)
            state = None
            for s in range(0, context, chunk):
                end = min(s + chunk, context)
                logits, state = model(windows[:, s:end], state=state)
                target = windows[:, s + 1 : end + 1]
                nll += float(F.cross_entropy(_wide(logits).flatten(0, 1), target.flatten(), reduction="sum"))
                count += target.numel()
    finally:
        model.train(was_training)
    return _metrics(nll, count, context)


@torch.no_grad()
def evaluate_lengths(model: nn.Module, tokens: torch.Tensor, *, train_len: int,
                     factors: Sequence[int] = (1, 2, 4, 8, 16), chunk: int | None = None, batch_size: int = 8,
                     max_tokens: int | None = None) -> list[dict[str, float]]:
    """Perplexity at ``factor x train_len`` contexts, all on the same scored tokens.

    The stream is cut to the largest whole number of ``max(factors) * train_len`` windows (at most
    ``max_tokens`` scored tokens), so every length scores exactly the same targets and only the context
    available to each prediction changes.

    Returns:
        one dict per factor: ``evaluate_ppl``'s keys plus ``"factor"``.
    """
    check_int("train_len", train_len, minimum=1)
    if not factors:
        raise ValueError("factors must be non-empty")
    for f in factors:
        check_int("factor", f, minimum=1)
    longest = max(factors) * train_len
    available = tokens.numel() - 1
    if max_tokens is not None:
        available = min(available, check_int("max_tokens", max_tokens, minimum=1))
    usable = (available // longest) * longest
    if usable == 0:
        raise ValueError(f"the longest context {longest} needs at least {longest + 1} tokens "
                         f"(have {tokens.numel()}, max_tokens={max_tokens})")
    stream = tokens[: usable + 1]
    rows = []
    for f in factors:
        ctx = f * train_len
        result = evaluate_ppl(model, stream, context=ctx, chunk=chunk or train_len,
                              batch_size=max(1, batch_size // f))
        rows.append({"factor": f, **result})
    return rows
