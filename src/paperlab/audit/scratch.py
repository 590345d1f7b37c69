"""Reusable memory for the kernel blocks of SMI audits (arXiv 2602.01150; a speed detail of our implementation).

A kernel block that lives only inside one ``fit`` or ``estimate`` (tens of MB for a few thousand points) costs
one page fault per 4 KB when it is freshly allocated: 30-170 ms of system CPU per audit on a small VM, a third
of a 1-d audit. Inside :func:`reuse_scratch` those blocks go to per-thread buffers that later audits in the
same thread reuse (grown when needed); leaving the outermost ``with`` releases them. Outside it (the default)
:func:`buffer` allocates fresh memory, which is freed when the audit returns, so nothing outlives the auditor
that asked for it. Use the context around a loop of many audits::

    with reuse_scratch():
        for model in models:
            SMI().fit(m, n).estimate(f)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["buffer", "buffer_of", "reuse_scratch", "reusing", "scratch_bytes"]

_LOCAL = threading.local()


def _state() -> dict:
    if not hasattr(_LOCAL, "state"):
        _LOCAL.state = {"depth": 0, "bufs": {}, "owners": {}}
    return _LOCAL.state


@contextmanager
def reuse_scratch() -> Iterator[None]:
    """Keep kernel scratch blocks of SMI audits in this thread for reuse until the outermost ``with`` exits."""
    state = _state()
    state["depth"] += 1
    try:
        yield
    finally:
        state["depth"] -= 1
        if state["depth"] == 0:
            state["bufs"].clear()
            state["owners"].clear()


def reusing() -> bool:
    """Whether this thread is inside :func:`reuse_scratch`."""
    return _state()["depth"] > 0


def buffer(slot: str, rows: int, cols: int, dtype: torch.dtype, *, owner: object = None) -> torch.Tensor:
    """A ``[rows, cols]`` block: the thread's buffer ``slot`` inside :func:`reuse_scratch` (``owner`` marks who
    wrote it last, see :func:`buffer_of`), else fresh memory."""
    state = _state()
    if not state["depth"]:
        return torch.empty(rows, cols, dtype=dtype)
    buf = state["bufs"].get(slot)
    if buf is None or buf.dtype != dtype or buf.numel() < rows * cols:
        buf = state["bufs"][slot] = torch.empty(rows * cols, dtype=dtype)
    state["owners"][slot] = owner
    return buf[:rows * cols].view(rows, cols)


def buffer_of(slot: str, owner: object, rows: int, cols: int) -> torch.Tensor | None:
    """The block ``slot`` if ``owner`` wrote it last in this thread and it is still kept (content intact)."""
    state = _state()
    if owner is None or state["owners"].get(slot) is not owner:
        return None
    return state["bufs"][slot][:rows * cols].view(rows, cols)


def scratch_bytes() -> int:
    """Bytes held by this thread's scratch buffers (0 outside :func:`reuse_scratch`)."""
    return sum(b.numel() * b.element_size() for b in _state()["bufs"].values())
