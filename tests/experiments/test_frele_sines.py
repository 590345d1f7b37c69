"""The synthetic sines study of FreLE: the Ricker activation, low-before-high on sines, seeded models."""

from __future__ import annotations

import math

import pytest
import torch

from paperlab.experiments.frele.sines import Ricker, epochs_to_threshold, fit_sines, make_sines_model, sines_task


def test_ricker_constants():
    assert Ricker().c == pytest.approx(math.pi ** 0.25 / math.sqrt(15))
    assert Ricker(c="textbook")(torch.zeros(1)).item() == pytest.approx(2 / (math.sqrt(3) * math.pi ** 0.25))
    with pytest.raises(ValueError, match="a must"):
        Ricker(a=0.0)


def test_low_frequency_converges_first_tanh_mlp():
    """Spectral bias (FreLE Fig. 1): seed 0, tanh MLP, 400 epochs: epochs to 10 % error k1 < k2 < k3."""
    x, y = sines_task((1.0, 1.0, 1.0))
    fit = fit_sines(make_sines_model("mlp", activation="tanh", seed=0), x, y, epochs=400)
    first = epochs_to_threshold(fit.errors, threshold=0.1)
    assert None not in first and first[0] < first[1] < first[2]
    assert fit.errors.shape == (400, 3)


def test_sines_model_seed_is_reproducible():
    a = make_sines_model("lstm", activation="ricker", hidden=8, seed=3)
    b = make_sines_model("lstm", activation="ricker", hidden=8, seed=3)
    x = torch.linspace(0, 1, 5)
    assert torch.equal(a(x), b(x))
