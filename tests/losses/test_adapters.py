"""neuralforecast / darts adapters: tested only where the packages are installed."""

from __future__ import annotations

import pytest
import torch

from paperlab.losses import frele_loss


def test_neuralforecast_adapter_matches_frele_and_masks():
    pytest.importorskip("neuralforecast")
    from paperlab.losses.adapters import neuralforecast_loss

    g = torch.Generator().manual_seed(0)
    y, y_hat = torch.randn(2, 12, 3, generator=g), torch.randn(2, 12, 3, generator=g)
    loss = neuralforecast_loss()
    torch.testing.assert_close(loss(y=y, y_hat=y_hat, mask=torch.ones_like(y)), frele_loss(y_hat, y, delta=0.3))
    mask = torch.ones_like(y)
    mask[0, :, 0] = 0  # a fully masked series contributes nothing
    assert torch.isfinite(loss(y=y, y_hat=y_hat, mask=mask))


def test_darts_adapter_is_frele_module():
    pytest.importorskip("darts")
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
