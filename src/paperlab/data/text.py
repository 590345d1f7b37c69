"""Text corpora for language modelling and seeded contiguous-window batching.

Corpora (deterministic train/val splits):
- ``pydoc``: the documentation topics that ship with Python (``pydoc_data.topics``, ~465 kB, no download),
  joined in key order; first 90% train, last 10% val.
- ``tinyshakespeare``: first 90% train, last 10% val (our KLA experiment E3).
- ``wikitext2``: only the validation and test files are available; train on ``test.txt``, validate on
  ``valid.txt`` (our KLA experiment E3).

Batches are contiguous windows of a token stream, so no padding token is ever scored.
"""

from __future__ import annotations

import numbers
import os
from pydoc_data.topics import topics as _pydoc_topics

import torch

from paperlab._validate import check_choice, check_int
from paperlab.data.registry import DatasetNotFoundError
from paperlab.data.registry import path as data_path

__all__ = ["CORPORA", "SPLITS", "TextBatches", "available_corpus", "encode_text", "load_text"]

CORPORA = ("pydoc", "tinyshakespeare", "wikitext2")
SPLITS = ("train", "val")
TRAIN_FRACTION = 0.9


def _split(text: str, split: str) -> str:
    cut = int(len(text) * TRAIN_FRACTION)
    return text[:cut] if split == "train" else text[cut:]


def load_text(name: str = "pydoc", split: str = "train", *, root: str | os.PathLike | None = None) -> str:
    """The ``split`` ("train" or "val") of corpus ``name`` as one string.

    ``root`` overrides where data files are searched (see ``paperlab.data.path``).
    """
    check_choice("name", name, CORPORA)
    check_choice("split", split, SPLITS)
    if name == "pydoc":
        return _split("".join(_pydoc_topics[k] for k in sorted(_pydoc_topics)), split)
    if name == "tinyshakespeare":
        return _split(data_path("tinyshakespeare", root=root).read_text(encoding="utf-8"), split)
    role = "test" if split == "train" else "valid"
    return data_path("wikitext2", role, root=root).read_text(encoding="utf-8")


def available_corpus(name: str, *, fallback: str = "pydoc", root: str | os.PathLike | None = None) -> str:
    """``name`` if its data files are found, else ``fallback`` (the built-in corpus, which needs no download).

    Experiments call this so that a machine without data still runs; they say in their notes which corpus ran.
    ``fallback`` must be one of :data:`CORPORA` too (checked whether or not it is needed).
    """
    check_choice("name", name, CORPORA)
    check_choice("fallback", fallback, CORPORA)
    try:
        if name == "tinyshakespeare":
            data_path("tinyshakespeare", root=root)
        elif name == "wikitext2":
            data_path("wikitext2", "valid", root=root)
            data_path("wikitext2", "test", root=root)
    except DatasetNotFoundError:
        return fallback
    return name


def encode_text(tokenizer, text: str) -> torch.Tensor:
    """``tokenizer.encode(text)`` as a 1-D long tensor ``[N]``."""
    return torch.tensor(tokenizer.encode(text), dtype=torch.long)


class TextBatches:
    """``step -> (inputs [b, T], targets [b, T])`` of random contiguous windows; a pure function of the step.

    Row ``i`` of step ``s`` is the window starting at a position drawn from a generator seeded by
    ``(seed, s)``, so resuming at any step reproduces the same batches. With ``world_size > 1`` the global
    batch of ``batch_size`` rows is drawn identically on every rank and rank ``r`` takes rows
    ``[r * b, (r + 1) * b)`` with ``b = batch_size / world_size`` (DDP then averages to the global batch).

    Args:
        tokens: ``[N]`` long token stream with ``N > seq_len``.
        batch_size: global number of windows per step.
        seq_len: window length ``T`` (targets are inputs shifted by one).
        seed: base seed.
        rank, world_size: this process's share of the global batch.
    """

    def __init__(self, tokens: torch.Tensor, *, batch_size: int, seq_len: int, seed: int = 0, rank: int = 0,
                 world_size: int = 1) -> None:
        check_int("batch_size", batch_size, minimum=1)
        check_int("seq_len", seq_len, minimum=1)
        check_int("seed", seed, minimum=0)
        check_int("world_size", world_size, minimum=1)
        check_int("rank", rank, minimum=0)
        if rank >= world_size:
            raise ValueError(f"rank must be < world_size={world_size}, got {rank}")
        if batch_size % world_size:
            raise ValueError(f"batch_size={batch_size} must be divisible by world_size={world_size}")
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1 or tokens.dtype != torch.long:
            raise ValueError("tokens must be a 1-D torch.long tensor")
        if tokens.numel() <= seq_len:
            raise ValueError(f"need more than seq_len={seq_len} tokens, got {tokens.numel()}")
        self.tokens, self.batch_size, self.seq_len, self.seed = tokens, batch_size, seq_len, seed
        self.rank, self.world_size = rank, world_size

    def starts(self, step: int) -> torch.Tensor:
        """Window start positions ``[batch_size]`` of the global batch at ``step`` (an int; a generator seed
        beyond torch's 64-bit range, e.g. at step 2**70, is taken modulo 2**64)."""
        given: object = step  # callers may pass anything; numpy integers are ints too
        if isinstance(given, bool) or not isinstance(given, numbers.Integral):
            raise TypeError(f"step must be an int, got {type(given).__name__} {given!r}")
        seed = self.seed * 1_000_003 + int(given)
        if not -(2**63) <= seed < 2**64:  # torch.Generator.manual_seed's range
            seed %= 2**64
        gen = torch.Generator().manual_seed(seed)
        return torch.randint(0, self.tokens.numel() - self.seq_len, (self.batch_size,), generator=gen)

    def __call__(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        local = self.batch_size // self.world_size
        starts = self.starts(step)[self.rank * local : (self.rank + 1) * local]
        idx = starts[:, None] + torch.arange(self.seq_len + 1)
        windows = self.tokens[idx]
        return windows[:, :-1], windows[:, 1:]
