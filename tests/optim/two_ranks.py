"""Run a test's worker on two gloo ranks (CPU), for the DDP and FSDP2 tests."""

from __future__ import annotations

import datetime
import socket
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def init_rank(rank: int, port: int) -> None:
    """Join the two-rank gloo group on ``port`` (one torch thread; a 60 s rendezvous timeout)."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))


def close_rank() -> None:
    """Leave the group together: a barrier, then the group torn down. Without the barrier a rank that finished
    first tore gloo down while the other still used it, which aborted that rank ("terminate called without an
    active exception", SIGABRT) on a loaded machine."""
    if not dist.is_initialized():
        return
    try:
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_two(worker: Callable[..., None], *args: Any, what: str, deadline_s: float = 60.0) -> None:
    """Run ``worker(rank, port, *args)`` on two spawned processes. A rendezvous that stalls (a port taken
    between choosing and binding it) is retried once on a new port instead of hanging the suite, and so is a
    rank killed by a signal: gloo's teardown still aborted a rank now and then on the loaded 2-core machine
    (SIGABRT, "terminate called without an active exception", 1 of ~1600 tests in a session-12 suite run, not
    reproduced in 3 reruns). A worker that raises fails at once; one that dies by a signal twice fails too."""
    for attempt in range(2):
        ctx = mp.start_processes(worker, args=(_free_port(), *args), nprocs=2, join=False, start_method="spawn")
        start = time.monotonic()
        try:
            while not ctx.join(timeout=1.0):
                if time.monotonic() - start > deadline_s:
                    for proc in ctx.processes:
                        proc.kill()
                    break
            else:
                return
        except mp.ProcessExitedException:
            if attempt:
                raise
    raise AssertionError(f"two-rank {what} did not finish within {deadline_s:g} s, twice")
