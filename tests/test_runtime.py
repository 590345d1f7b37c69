"""The process helpers: a torch thread count that is restored, worker pools that die with their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from paperlab._runtime import spawn_pool, torch_threads

_PARENT = """
import os, time
from paperlab._runtime import spawn_pool
pool = spawn_pool(1)
print(pool.submit(os.getpid).result(), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    if status.exists():  # a zombie nobody reaped has exited
        return "\nState:\tZ" not in status.read_text()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_torch_threads_restores_the_count():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), torch_threads(1):
        assert torch.get_num_threads() == 1
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before


@pytest.mark.parametrize(("workers", "error", "message"), [
    (0, ValueError, r"workers must be >= 1, got 0"), (-1, ValueError, r"workers must be >= 1, got -1"),
    (True, TypeError, r"workers must be an int, got bool"), (1.5, TypeError, r"workers must be an int, got float"),
    ("2", TypeError, r"workers must be an int, got str")])
def test_spawn_pool_rejects_bad_worker_counts(workers, error, message):
    with pytest.raises(error, match=message):
        spawn_pool(workers)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX re-parenting")
def test_spawn_pool_workers_exit_when_the_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    try:
        worker = int(parent.stdout.readline())
        assert _alive(worker)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker), "the pool's worker outlived its killed parent"
    finally:
        parent.kill()
        parent.stdout.close()
