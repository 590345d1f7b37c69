"""One thread for the reasoning tests: tiny per-token passes spin-wait badly with 2 threads on a shared box."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
