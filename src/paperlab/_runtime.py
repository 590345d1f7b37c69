"""Process-level runtime settings shared by experiments and benchmarks."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import torch

from paperlab._validate import check_int

__all__ = ["spawn_pool", "torch_threads"]


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


def spawn_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes that exit when the process that made them dies.

    Spawned, not forked: a forked child would inherit the parent's torch/OpenMP thread pools. Each worker
    watches its parent: a killed ``paperlab reproduce`` would otherwise leave its workers training on, and a
    rerun with ``--resume`` would then share the cores, and the checkpoint files, with them.
    """
    check_int("workers", workers, minimum=1)
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_exit_with_parent, initargs=(os.getpid(),))


def _exit_with_parent(parent: int, *, poll: float = 1.0) -> None:
    def watch() -> None:
        while os.getppid() == parent:  # an orphan is re-parented (to init or a subreaper)
            time.sleep(poll)
        os._exit(1)

    threading.Thread(target=watch, name="paperlab-exit-with-parent", daemon=True).start()
