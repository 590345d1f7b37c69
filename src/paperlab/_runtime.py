"""Process-level runtime settings shared by experiments and benchmarks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int = 1) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, restoring the previous count after (even on error).

    The experiments use one: their models are small, and on a loaded 2-core machine the per-step kernels
    spin-wait with two threads (measured 10-50x more CPU per step); one thread also fixes reduction order.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1 (torch threads), got {n!r}")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
