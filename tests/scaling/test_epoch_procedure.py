"""Chinchilla approach 3 on Epoch's points equals Epoch AI's procedure; the default start count finds its optimum.

Epoch's notebook (Besiroglu et al. 2024, arXiv 2404.10102): log L_hat = LSE(a - alpha log N, b - beta log D, e),
objective = sum of Huber_1e-3(log L_hat - log L) over the 240 points left after dropping the 5 highest-loss runs,
L-BFGS-B from each of 4,500 grid starts, the lowest objective wins.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import huber, logsumexp

from paperlab.scaling.fit import DEFAULT_STARTS, LawFitter, fit_law

# The full grid's optimum (all 4,500 starts; test_full_grid_optimum_is_the_pinned_one recomputes it): objective
# and theta = (a, b, e, alpha, beta).
FULL_GRID_OBJECTIVE = 0.001018274017800598
FULL_GRID_THETA = (6.169246325076957, 7.670156778030031, 0.5973068136333591, 0.34731049596943836,
                   0.36717243481275497)


def _epoch_objective(theta: np.ndarray, lN: np.ndarray, lD: np.ndarray, y: np.ndarray) -> float:
    """Epoch's objective written as in their notebook (scipy's huber and logsumexp), independent of ours."""
    a, b, e, alpha, beta = theta
    pred = logsumexp(np.stack([a - alpha * lN, b - beta * lD, np.full_like(lN, e)]), axis=0)
    return float(huber(1e-3, pred - y).sum())


def test_chinchilla_refit_equals_epochs_procedure(epoch):
    fitter = LawFitter("chinchilla").fit(epoch.N, epoch.D, epoch.loss)
    lN, lD, y = np.log(epoch.N), np.log(epoch.D), np.log(epoch.loss)
    ours = fitter.result_.objective
    assert ours == pytest.approx(0.00101827, abs=1e-6)
    assert _epoch_objective(fitter.theta_, lN, lD, y) == pytest.approx(ours, rel=1e-12)
    # Epoch's optimiser (L-BFGS-B, scipy defaults) on Epoch's objective, started at our optimum, stays there
    res = minimize(_epoch_objective, fitter.theta_, args=(lN, lD, y), method="L-BFGS-B")
    np.testing.assert_allclose(res.x, fitter.theta_, atol=1e-5)
    assert res.fun >= ours * (1 - 1e-9)


def test_default_starts_reach_the_full_grid_optimum_fast(epoch):
    t0 = time.process_time()
    fitter = LawFitter("chinchilla").fit(epoch.N, epoch.D, epoch.loss)
    cpu = time.process_time() - t0
    assert fitter.result_.n_starts == DEFAULT_STARTS
    assert fitter.result_.objective == pytest.approx(FULL_GRID_OBJECTIVE, rel=1e-9)
    np.testing.assert_allclose(fitter.theta_, FULL_GRID_THETA, rtol=0, atol=1e-5)
    assert cpu < 1.0, f"default fit took {cpu:.2f} CPU-s"


@pytest.mark.slow
def test_full_grid_optimum_is_the_pinned_one(epoch):
    # recomputes FULL_GRID_*: L-BFGS-B from every one of the 4,500 starts (1-4 minutes, more on a busy machine)
    res = fit_law("chinchilla", N=epoch.N, D=epoch.D, loss=epoch.loss, n_starts=None)
    assert res.n_starts == 4500
    assert res.objective == pytest.approx(FULL_GRID_OBJECTIVE, rel=1e-9)
    default = fit_law("chinchilla", N=epoch.N, D=epoch.D, loss=epoch.loss)
    for key, value in default.params.items():
        assert value == pytest.approx(res.params[key], rel=1e-5)
