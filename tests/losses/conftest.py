"""Tiny FFT ops run ~100x slower with 2 threads on a loaded 2-core machine (FreLE spec pitfall 3): use one."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)
