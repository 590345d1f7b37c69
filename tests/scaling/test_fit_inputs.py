"""Law-fitter inputs: holdout as a mask or as indices, options a law does not use, exact (zero-residual) fits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from paperlab.scaling.fit import LawFitter, fit_law
from paperlab.scaling.laws import ChinchillaLaw, FrontierLaw


def _points(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    N = np.exp(rng.uniform(np.log(7e7), np.log(1.6e10), n))
    return N, np.exp(rng.uniform(np.log(1e18), np.log(1e22), n)) / (6 * N)


LAW = ChinchillaLaw(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)


def _loss(N, D, seed=1):
    return LAW(N, D) * np.exp(0.01 * np.random.default_rng(seed).standard_normal(len(N)))


def test_holdout_indices_equal_the_boolean_mask():
    N, D = _points()
    loss = _loss(N, D)
    idx = np.flatnonzero(6 * N * D > 1e21)
    mask = np.zeros(len(N), bool)
    mask[idx] = True
    by_mask = fit_law("chinchilla", N=N, D=D, loss=loss, holdout=mask, n_starts=2)
    by_index = fit_law("chinchilla", N=N, D=D, loss=loss, holdout=idx, n_starts=2)
    by_list = fit_law("chinchilla", N=N, D=D, loss=loss, holdout=[int(i) for i in idx], n_starts=2)
    assert 0 < by_mask.n_heldout == len(idx) < len(N) and by_mask.n_points == len(N) - len(idx)
    assert by_index == by_mask and by_list == by_mask
    assert fit_law("chinchilla", N=N, D=D, loss=loss, holdout=[], n_starts=2).n_heldout == 0  # no index: none


@pytest.mark.parametrize(("holdout", "match"), [
    (np.array([0.0, 1.0, 2.0]), "holdout must be a boolean mask or integer indices, got dtype float64"),
    (np.zeros(39, bool), "holdout as a boolean mask must have length 40"),
    (np.array([3, 40]), r"holdout indices must lie in \[0, 40\)"),
    (np.array([-1]), r"holdout indices must lie in \[0, 40\)"),
    (np.zeros((40, 1), bool), "holdout must be a 1-D"),
], ids=["float", "short-mask", "index-too-big", "negative-index", "2-D"])
def test_bad_holdout_raises_naming_holdout(holdout, match):
    N, D = _points()
    with pytest.raises(ValueError, match=match):
        fit_law("chinchilla", N=N, D=D, loss=_loss(N, D), holdout=holdout)


@pytest.mark.parametrize("law", ["chinchilla", "kaplan"])
def test_steps_are_rejected_by_laws_without_them(law):
    N, D = _points()
    with pytest.raises(ValueError, match=f"T .*'frontier' law; law '{law}'"):
        fit_law(law, N=N, D=D, loss=_loss(N, D), T=D / 1e3)
    fitter = LawFitter(law, n_starts=2).fit(N, D, _loss(N, D))
    with pytest.raises(ValueError, match=f"law '{law}'"):
        fitter.predict(N, D, D / 1e3)


@pytest.mark.parametrize(("law", "option", "match"), [
    ("chinchilla", {"p": 2.0}, "law 'chinchilla' does not use p: p is for the 'kaplan' law only"),
    ("frontier", {"p": 2.0}, "law 'frontier' does not use p"),
    ("chinchilla", {"s": 2.0}, "law 'chinchilla' does not use s: s is for the 'frontier' law only"),
    ("kaplan", {"gamma_N": 1.0}, "law 'kaplan' does not use gamma_N"),
    ("kaplan", {"tie_coverage": False}, "law 'kaplan' does not use tie_coverage"),
    ("chinchilla", {"s": 2.0, "gamma_N": 1.0}, "does not use s, gamma_N"),
])
def test_options_a_law_does_not_use_are_rejected(law, option, match):
    with pytest.raises(ValueError, match=match):
        LawFitter(law, **option)
    with pytest.raises(ValueError, match=match):
        fit_law(law, N=[1.0], D=[1.0], loss=[1.0], **option)


def test_frontier_fits_with_steps():
    law = FrontierLaw(E=1.8, zipf_alpha=1.6, c_N=3e-5, gamma_N=0.55, c_D=1e-6, gamma_D=1 / 1.6, c_T=1e-3,
                      gamma_T=0.5, s=2.0)
    N, D = _points(60)
    T = D / 1e3
    fitter = LawFitter("frontier", n_starts=2, s=2.0).fit(N, D, law(N, D, T), T=T)
    assert fitter.result_.n_params == 7 and "c_T" in fitter.result_.params
    assert np.isfinite(fitter.predict(N, D, T)).all()


def test_exact_samples_of_a_law_give_finite_information_criteria():
    N, D = _points()
    res = fit_law("chinchilla", N=N, D=D, loss=LAW(N, D))
    for key in ("E", "A", "B", "alpha", "beta"):
        assert res.params[key] == pytest.approx(getattr(LAW, key), rel=1e-6)
    # a zero-residual fit up to rounding (~1e-20 here; the last digits move with the scipy release)
    assert res.rss_log < 1e-16 and math.isfinite(res.aic) and math.isfinite(res.bic) and res.aic < res.bic


def test_zero_residual_fit_is_defined():
    # a flat loss is the law E = A = B = 1, alpha = beta = 0 exactly: RSS is exactly 0 and no split is optimal
    N = np.geomspace(1e8, 1e10, 12)
    res = fit_law("chinchilla", N=N, D=20 * N, loss=np.full(12, 3.0))
    assert res.rss_log == 0.0 and res.objective == 0.0
    floor = 12 * math.log((np.finfo(float).eps * math.log(3.0)) ** 2)  # RSS/n floored at float resolution
    assert res.aic == pytest.approx(floor + 2 * 5) and res.bic == pytest.approx(floor + 5 * math.log(12))
    assert math.isnan(res.n_exponent)
