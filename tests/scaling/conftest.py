"""Fixtures for the public Chinchilla points (skipped when the shared data folder is absent)."""

from __future__ import annotations

import pytest

from paperlab.data import DatasetNotFoundError


def _load(fn, **kw):
    try:
        return fn(**kw)
    except DatasetNotFoundError as err:
        pytest.skip(f"data not available: {err}")


@pytest.fixture(scope="session")
def epoch():
    from paperlab.scaling.data import load_epoch

    return _load(load_epoch, drop_highest=5)


@pytest.fixture(scope="session")
def epoch_all():
    from paperlab.scaling.data import load_epoch

    return _load(load_epoch)


@pytest.fixture(scope="session")
def kyo():
    from paperlab.scaling.data import load_kyo

    return _load(load_kyo)
