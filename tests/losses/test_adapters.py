"""neuralforecast / darts adapters: the real packages where installed (``make forecast-check`` installs them
and sets PAPERLAB_REQUIRE_FORECAST=1, so there a missing package fails instead of skipping), plus the adapters'
own logic against a stand-in where they are not."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from paperlab.losses import frele_loss


def need(module: str):
    """Import ``module``, or skip; under PAPERLAB_REQUIRE_FORECAST=1 a missing package is a failure."""
    if os.environ.get("PAPERLAB_REQUIRE_FORECAST") == "1":
        import importlib

        return importlib.import_module(module)
    return pytest.importorskip(module)


def _series(n: int = 400) -> np.ndarray:
    """Two seasonalities (24 and 8 steps) plus a little noise: variance ~0.63."""
    t = np.arange(n)
    noise = 0.05 * np.random.default_rng(0).standard_normal(n)
    return np.sin(t * 2 * np.pi / 24) + 0.5 * np.sin(t * 2 * np.pi / 8) + noise


_QUIET = {"enable_progress_bar": False, "logger": False, "enable_model_summary": False, "accelerator": "cpu"}
# Lightning's own deprecation notices and data-loader hints: not the adapters' concern
_THIRD_PARTY = [pytest.mark.filterwarnings("ignore::FutureWarning:pytorch_lightning"),
                pytest.mark.filterwarnings("ignore::FutureWarning:lightning_fabric"),
                pytest.mark.filterwarnings("ignore::UserWarning:pytorch_lightning"),
                pytest.mark.filterwarnings("ignore:.pin_memory. argument:UserWarning"),
                pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def third_party(fn):
    for mark in _THIRD_PARTY:
        fn = mark(fn)
    return fn


@third_party
def test_neuralforecast_model_learns_with_frele():
    """End to end: a neuralforecast DLinear trained with the FreLE loss forecasts the held-out 12 steps."""
    need("neuralforecast")
    import pandas as pd
    from neuralforecast import NeuralForecast
    from neuralforecast.models import DLinear

    from paperlab.losses.adapters import neuralforecast_loss

    y = _series()
    df = pd.DataFrame({"unique_id": "a", "ds": pd.date_range("2020-01-01", periods=len(y), freq="h"), "y": y})
    model = DLinear(h=12, input_size=48, loss=neuralforecast_loss(), max_steps=100, learning_rate=1e-2,
                    random_seed=0, **_QUIET)
    nf = NeuralForecast(models=[model], freq="h")
    nf.fit(df.iloc[:-12])
    mse = float(((nf.predict()["DLinear"].to_numpy() - y[-12:]) ** 2).mean())
    assert mse < 0.05 * y.var()  # measured 0.0033 against a variance of 0.63


@third_party
def test_darts_model_learns_with_frele():
    """End to end: a darts DLinearModel trained with ``loss_fn=darts_loss()`` forecasts the held-out 12 steps."""
    need("darts")
    from darts import TimeSeries
    from darts.models import DLinearModel

    from paperlab.losses.adapters import darts_loss

    y = _series()
    model = DLinearModel(input_chunk_length=48, output_chunk_length=12, loss_fn=darts_loss(), n_epochs=5,
                         random_state=0, optimizer_kwargs={"lr": 1e-2}, pl_trainer_kwargs=_QUIET)
    model.fit(TimeSeries.from_values(y[:-12].astype(np.float32)), verbose=False)
    mse = float(((model.predict(12, verbose=False).values().ravel() - y[-12:]) ** 2).mean())
    assert mse < 0.05 * y.var()


def test_neuralforecast_adapter_matches_frele_and_masks():
    need("neuralforecast")
    from paperlab.losses.adapters import neuralforecast_loss

    g = torch.Generator().manual_seed(0)
    y, y_hat = torch.randn(2, 12, 3, generator=g), torch.randn(2, 12, 3, generator=g)
    loss = neuralforecast_loss()
    torch.testing.assert_close(loss(y=y, y_hat=y_hat, mask=torch.ones_like(y)), frele_loss(y_hat, y, delta=0.3))
    mask = torch.ones_like(y)
    mask[0, :, 0] = 0  # a fully masked series contributes nothing
    assert torch.isfinite(loss(y=y, y_hat=y_hat, mask=mask))


def test_darts_adapter_is_frele_module():
    need("darts")
    from paperlab.losses.adapters import darts_loss

    loss = darts_loss(delta=0.5)
    loss.reduction = "none"
    assert loss(torch.zeros(2, 2), torch.ones(2, 2)).shape == (2, 2)


def test_missing_package_gives_install_hint(monkeypatch):
    import sys

    from paperlab.losses import adapters

    monkeypatch.setitem(sys.modules, "darts", None)
    with pytest.raises(ImportError, match="pip install darts"):
        adapters.darts_loss()


@pytest.fixture
def fake_neuralforecast(monkeypatch):
    """A stand-in for neuralforecast.losses.pytorch with the BasePointLoss constructor the adapter calls, so
    the adapter's own logic (masking, horizon weights, pickling) is tested where neuralforecast is absent."""
    import sys
    import types

    class BasePointLoss(torch.nn.Module):
        def __init__(self, horizon_weight=None, outputsize_multiplier=1, output_names=None):
            super().__init__()
            self.horizon_weight, self.outputsize_multiplier = horizon_weight, outputsize_multiplier
            self.output_names = output_names

    module = types.ModuleType("neuralforecast.losses.pytorch")
    module.BasePointLoss = BasePointLoss
    for name in ("neuralforecast", "neuralforecast.losses"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "neuralforecast.losses.pytorch", module)
    return module


def test_neuralforecast_loss_logic_and_pickling(fake_neuralforecast):
    import pickle

    from paperlab.losses.adapters import neuralforecast_loss

    g = torch.Generator().manual_seed(1)
    y, y_hat = torch.randn(2, 12, 3, generator=g), torch.randn(2, 12, 3, generator=g)
    loss = neuralforecast_loss(delta=0.4, time_loss="mse")
    torch.testing.assert_close(loss(y=y, y_hat=y_hat), frele_loss(y_hat, y, delta=0.4, time_loss="mse"))
    again = pickle.loads(pickle.dumps(loss))  # ray-based tuning pickles the loss
    torch.testing.assert_close(again(y=y, y_hat=y_hat), loss(y=y, y_hat=y_hat))
    weighted = neuralforecast_loss(horizon_weight=torch.linspace(0, 1, 12))
    assert torch.isfinite(pickle.loads(pickle.dumps(weighted))(y=y, y_hat=y_hat))


def test_real_neuralforecast_loss_pickles():
    need("neuralforecast")
    import pickle

    from paperlab.losses.adapters import neuralforecast_loss

    g = torch.Generator().manual_seed(2)
    y, y_hat = torch.randn(2, 12, 3, generator=g), torch.randn(2, 12, 3, generator=g)
    loss = neuralforecast_loss(delta=0.6)
    torch.testing.assert_close(pickle.loads(pickle.dumps(loss))(y=y, y_hat=y_hat), loss(y=y, y_hat=y_hat))
