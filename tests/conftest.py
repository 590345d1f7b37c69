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
    # Two cores on the reference machine; fixing the count keeps timings and reductions repeatable.
    torch.set_num_threads(2)
