"""Forecasting backbones: the [B, L, C] -> [B, H, C] contract, RevIN round trip, DLinear's decomposition, training."""

from __future__ import annotations

import pytest
import torch

from paperlab.data.ltsf import synthetic_seasonal
from paperlab.models.forecast import FORECASTERS, DLinear, RevIN, build_forecaster
from paperlab.models.forecast_train import ForecastTrainConfig, evaluate_forecaster, fit_forecaster, predict


@pytest.mark.parametrize("name", sorted(FORECASTERS))
@pytest.mark.parametrize("lhc", [(96, 24, 3), (36, 7, 1)], ids=["L96-H24-C3", "L36-H7-C1"])
def test_contract_and_seed(name, lhc):
    l, h, c = lhc
    m1 = build_forecaster(name, lookback=l, horizon=h, channels=c, seed=1).eval()
    m2 = build_forecaster(name, lookback=l, horizon=h, channels=c, seed=1).eval()
    x = torch.randn(2, l, c, generator=torch.Generator().manual_seed(0))
    y = m1(x)
    assert y.shape == (2, h, c) and torch.isfinite(y).all()
    assert torch.equal(y, m2(x))
    with pytest.raises(ValueError, match="expects x"):
        m1(torch.randn(2, l + 1, c))


@pytest.mark.parametrize("name", ["rlinear", "patchtst", "itransformer"])
def test_normalised_models_are_shift_equivariant(name):
    """RevIN / series normalisation: adding a constant to the input shifts the forecast by it."""
    m = build_forecaster(name, lookback=32, horizon=8, channels=2, seed=0).eval()
    x = torch.randn(3, 32, 2, dtype=torch.float32, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(m(x + 5.0), m(x) + 5.0, rtol=1e-4, atol=1e-4)


def test_revin_round_trip():
    rev = RevIN(3)
    x = torch.randn(4, 20, 3) * 3 + 2
    z = rev(x, "norm")
    torch.testing.assert_close(z.mean(dim=1), torch.zeros(4, 3), atol=1e-5, rtol=0)
    torch.testing.assert_close(rev(z, "denorm"), x, atol=1e-4, rtol=1e-5)


def test_dlinear_initial_forecast_is_window_mean_plus_bias():
    m = DLinear(24, 6, 2)
    with torch.no_grad():
        m.seasonal.bias.zero_()
        m.trend.bias.zero_()
    x = torch.randn(3, 24, 2)
    # seasonal + trend = x, both mapped by the same averaging weight: the output is the window mean
    torch.testing.assert_close(m(x), x.mean(dim=1, keepdim=True).expand(-1, 6, -1), atol=1e-5, rtol=1e-5)


def test_fit_improves_and_stops_on_validation():
    data = synthetic_seasonal(horizon=24, lookback=48, n_rows=1200, channels=2, seed=0)
    m = build_forecaster("dlinear", lookback=48, horizon=24, channels=2, seed=0)
    before = evaluate_forecaster(m, data, "test")
    fit = fit_forecaster(m, data, loss="frele", config=ForecastTrainConfig(epochs=3, batch_size=32), seed=0)
    after = evaluate_forecaster(m, data, "test")
    assert after["mse"] < 0.7 * before["mse"]
    assert 1 <= fit.epochs_run <= 3 and "val_mse" in fit.best
    assert len(fit.train.evals) == fit.epochs_run
    lrs = [h["lr"] for h in fit.train.history]
    assert lrs[0] == pytest.approx(5e-3) and lrs[-1] == pytest.approx(5e-3 * 0.5 ** (fit.epochs_run - 1))
    pred, target = predict(m, data, "test")
    assert pred.shape == target.shape == (data.n_windows("test"), 24, 2)
    inv = evaluate_forecaster(m, data, "test", inverse=True)
    scale = float((data.std ** 2).mean())
    assert inv["mse"] == pytest.approx(after["mse"] * scale, rel=0.5)  # same errors, original units
