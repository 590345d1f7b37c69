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
def _threads() -> None:
    # Test tensors are tiny: one thread is faster than two (no spin/sync cost, far less sensitive to a loaded
    # machine) and fixes the reduction order, so results repeat bit for bit.
    torch.set_num_threads(1)
