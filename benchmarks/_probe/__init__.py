"""The case tables of ``probe_inputs.py``, one module per area; :func:`build_cases` collects them."""

from __future__ import annotations

from _probe.common import CASES, Case
from _probe.files import checkpoint_cases, data_cases, io_cases
from _probe.models import layer_cases, model_cases, ops_cases
from _probe.stats import audit_cases, reasoning_cases, scaling_cases
from _probe.training import loss_cases, optim_cases, train_cases

__all__ = ["Case", "build_cases"]


def build_cases() -> list[Case]:
    """Every case, in a fixed order (building runs no case; a few baselines are fitted once here)."""
    CASES.clear()
    for section in (ops_cases, layer_cases, model_cases, optim_cases, loss_cases, audit_cases, scaling_cases,
                    reasoning_cases, train_cases, checkpoint_cases, io_cases, data_cases):
        section()
    return list(CASES)
