"""Shared test setup: CPU-first, strict, deterministic."""

from __future__ import annotations

import pytest
import torch


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _threads():
    # Test tensors are tiny: one thread is faster than two (no spin/sync cost, far less sensitive to a loaded
    # machine; per-token passes spin-wait badly with two) and fixes the reduction order, so results repeat bit
    # for bit. Restored afterwards, so a test that sets its own count cannot leak it.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
