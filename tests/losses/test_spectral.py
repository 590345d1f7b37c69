"""Spectral-bias tooling: band edges, band errors, per-bin error and the tracker."""

from __future__ import annotations

import math

import pytest
import torch

from paperlab.losses import SpectralBiasTracker, band_slices, per_bin_relative_error, spectral_band_errors


def test_bands_for_h96():
    b = band_slices(96)
    assert (b["LF"].start, b["LF"].stop) == (0, 5)
    assert (b["MF"].start, b["MF"].stop) == (5, 25)
    assert (b["HF"].start, b["HF"].stop) == (25, 49)
    assert (b["GF"].start, b["GF"].stop) == (0, 49)
    with pytest.raises(ValueError, match="bands"):
        band_slices(96, bands=(0.5, 0.1))


def test_band_errors_locate_a_planted_error():
    h = 96
    target = torch.zeros(4, h, 2)
    t = torch.arange(h, dtype=torch.float32)
    pred_hf = target + torch.sin(2 * math.pi * 40 * t / h).reshape(1, h, 1)  # bin 40: HF
    errs = spectral_band_errors(pred_hf, target)
    assert errs["LF"] < 1e-4 and errs["MF"] < 1e-4 and errs["HF"] > 1.0
    # one bin of 24 HF bins with |diff| = H/2: RMSE over the band = (H/2) / sqrt(24)
    assert errs["HF"] == pytest.approx(48 / math.sqrt(24), rel=1e-5)
    assert errs["GF"] == pytest.approx(48 / math.sqrt(49), rel=1e-5)
    pred_lf = target + torch.sin(2 * math.pi * 2 * t / h).reshape(1, h, 1)
    errs = spectral_band_errors(pred_lf, target, metric="amplitude")
    assert errs["LF"] > 1.0 and errs["HF"] < 1e-4


def test_per_bin_relative_error():
    h = 32
    t = torch.arange(h, dtype=torch.float64)
    target = (torch.sin(2 * math.pi * 3 * t / h) + torch.sin(2 * math.pi * 7 * t / h)).reshape(1, h, 1)
    pred = (torch.sin(2 * math.pi * 3 * t / h) + 0.5 * torch.sin(2 * math.pi * 7 * t / h)).reshape(1, h, 1)
    rel = per_bin_relative_error(pred, target)
    assert rel.shape == (17,)
    assert rel[3].item() == pytest.approx(0.0, abs=1e-9)
    assert rel[7].item() == pytest.approx(0.5, abs=1e-9)


def test_tracker_records_each_call():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(600, 8, 2, generator=g), torch.randn(600, 16, 2, generator=g)
    model = torch.nn.Sequential(torch.nn.Flatten(1), torch.nn.Linear(16, 32), torch.nn.Unflatten(1, (16, 2)))
    tracker = SpectralBiasTracker(x, y)
    assert tracker.inputs.shape[0] == 512
    m1 = tracker(model)
    tracker(model)
    assert set(m1) == {"band_LF", "band_MF", "band_HF", "band_GF"}
    assert tracker.heatmap().shape == (2, 9)
    with torch.no_grad():
        ref = spectral_band_errors(model(x[:512]), y[:512])
    assert m1["band_HF"] == pytest.approx(ref["HF"])
