"""Shared test setup: CPU-first, strict, deterministic."""

from __future__ import annotations

import os

import pytest
import torch


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run tests marked slow (minutes each)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # `make test` stays under 10 minutes on 2 cores: tests marked slow (full-grid refits, long coverage
    # simulations) run with --runslow or PAPERLAB_SLOW=1.
    run_slow = config.getoption("--runslow") or os.environ.get("PAPERLAB_SLOW") == "1"
    no_gpu = pytest.mark.skip(reason="needs a CUDA device")
    slow = pytest.mark.skip(reason="slow: run with --runslow or PAPERLAB_SLOW=1")
    for item in items:
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(no_gpu)
        if "slow" in item.keywords and not run_slow:
            item.add_marker(slow)


@pytest.fixture(autouse=True)
def _threads():
    # Test tensors are tiny: one thread is faster than two (no spin/sync cost, far less sensitive to a loaded
    # machine; per-token passes spin-wait badly with two) and fixes the reduction order, so results repeat bit
    # for bit. Restored afterwards, so a test that sets its own count cannot leak it.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
