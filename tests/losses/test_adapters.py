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
