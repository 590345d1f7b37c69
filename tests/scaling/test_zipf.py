"""Zipf simulator: tail asymptotics, closed-form slopes, coverage Monte Carlo, Max-Bottleneck, maps, guards."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import zeta

from paperlab.scaling import zipf


@pytest.mark.parametrize("a", [1.5, 2.0])
@pytest.mark.parametrize("n", [1000, 10000])
def test_tail_asymptotics_within_bound(a, n):
    exact = zeta(a, n + 1)
    approx = n ** (1 - a) / (a - 1)
    assert abs(approx / exact - 1) <= (a - 1) / n
    assert abs(approx / exact - 1) == pytest.approx((a - 1) / (2 * n), rel=0.01)  # the leading term


@pytest.mark.parametrize("a", [1.3, 2.0])
def test_quadrature_tail_equals_exact_sum(a):
    n = 1000
    assert zipf.tail_sum_quadrature(n, a) == pytest.approx(zeta(a, n + 1), rel=1e-6)
    assert float(zipf.tail_mass(n, a)) == pytest.approx(zeta(a, n + 1) / zeta(a), rel=1e-12)


def test_finite_k_tail_mass_and_probs():
    p = zipf.zipf_probs(1.5, 100)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert float(zipf.tail_mass(10, 1.5, K=100)) == pytest.approx(p[10:].sum(), abs=1e-12)


@pytest.mark.parametrize("a", [1.5, 2.0])
@pytest.mark.parametrize("b", [0.5, 1.0])
def test_simulated_slopes_match_closed_form(a, b):
    # K = inf mode; frontiers swept over 1e2..1e4 <= 1e-2 K0 so no finite-K bias
    th = zipf.theory_exponents(a, opt_bias=b)
    ks = np.geomspace(1e2, 1e4, 5)
    z = zeta(a)
    sN = zipf.log_log_slope(ks, [zipf.expected_loss(zipf_alpha=a, N=k) for k in ks])
    Ds = z * ks**a
    sD = zipf.log_log_slope(Ds, [zipf.expected_loss(zipf_alpha=a, D=d) for d in Ds])
    Ts = z**b * ks ** (a * b)
    sT = zipf.log_log_slope(Ts, [zipf.expected_loss(zipf_alpha=a, T=t, opt_bias=b) for t in Ts])
    assert sN == pytest.approx(-th["capacity"], abs=0.02)
    assert sD == pytest.approx(-th["coverage"], abs=0.02)
    assert sT == pytest.approx(-th["optimization"], abs=0.02)


def test_theory_exponents_values():
    th = zipf.theory_exponents(1.5, opt_bias=0.5)
    assert th == pytest.approx({"capacity": 0.5, "coverage": 1 / 3, "optimization": 2 / 3})


def test_coverage_exact_matches_monte_carlo():
    a, K, D = 1.5, 5000, 2000
    p = zipf.zipf_probs(a, K)
    exact = float((p * (1 - p) ** D).sum())
    assert zipf.expected_loss(zipf_alpha=a, D=D, K=K, allow_saturation=True) == pytest.approx(exact, rel=1e-10)
    draws = np.array([zipf.monte_carlo_loss(zipf_alpha=a, K=K, D=D, seed=s) for s in range(40)])
    se = draws.std(ddof=1) / np.sqrt(len(draws))
    assert abs(draws.mean() - exact) < 3 * se


def test_monte_carlo_same_seed_same_bits():
    kw = dict(zipf_alpha=1.7, K=1000, D=500, N=50.0, T=10.0)
    assert zipf.monte_carlo_loss(**kw, seed=3) == zipf.monte_carlo_loss(**kw, seed=3)
    assert zipf.monte_carlo_loss(**kw, seed=3) != zipf.monte_carlo_loss(**kw, seed=4)


@pytest.mark.parametrize("res", [dict(N=300.0, D=1e5, T=1e3), dict(N=1e4, D=1e3, T=1e6), dict(N=50.0, T=10.0)])
def test_max_bottleneck_hard_min_is_exact_max_of_tails(res):
    a = 1.6
    hard = zipf.expected_loss(zipf_alpha=a, combine="hard", **res)
    fr = zipf.frontiers(zipf_alpha=a, **res)
    assert hard == max(float(zipf.tail_mass(k, a)) for k in fr.values())
    soft = zipf.expected_loss(zipf_alpha=a, combine="soft", s=4.0, **res)
    assert soft >= hard  # the soft minimum lies below the hard one, so more tail mass remains


def test_product_combination_is_at_least_each_single_resource():
    a, res = 1.5, dict(N=500.0, D=3e4, T=3e3)
    both = zipf.expected_loss(zipf_alpha=a, **res)
    for key, val in res.items():
        assert both >= zipf.expected_loss(zipf_alpha=a, **{key: val}) - 1e-15


def test_inverse_map_round_trip_and_epoch_values():
    for a_N, b_D in [(0.348, 0.366), (0.076, 0.095), (0.5, 0.2)]:
        al, g = zipf.inverse_map(a_N, b_D)
        assert zipf.forward_map(al, g) == pytest.approx((a_N, b_D), abs=1e-12)
    al, g = zipf.inverse_map(0.348, 0.366)
    assert al == pytest.approx(1.577, abs=0.005) and g == pytest.approx(0.60, abs=0.01)
    al, g = zipf.inverse_map(0.076, 0.095)
    assert al == pytest.approx(1.105, abs=0.001) and g == pytest.approx(0.72, abs=0.01)


def test_compute_optimal_exponents_chinchilla_and_kaplan_equilibria():
    a = 1.5
    chin = zipf.compute_optimal_exponents(zipf_alpha=a, gamma_N=1.0, gamma_X=1 / a)
    assert chin["n"] == pytest.approx(1 / (1 + a)) and chin["x"] == pytest.approx(a / (1 + a))
    kap = zipf.compute_optimal_exponents(zipf_alpha=a, gamma_N=1.0, gamma_X=1 / 0.37)
    assert kap["n"] == pytest.approx(1 / (1 + 0.37))  # alpha * opt_bias = 0.37 gives Kaplan's 0.73
    assert kap["n"] == pytest.approx(0.73, abs=0.005)


def test_guards():
    with pytest.raises(ValueError, match="zipf_alpha must be > 1"):
        zipf.expected_loss(zipf_alpha=1.0, N=10.0)
    with pytest.raises(ValueError, match="finite-K bias"):
        zipf.expected_loss(zipf_alpha=1.5, N=2000.0, K=1000)
    with pytest.raises(ValueError, match="at least one"):
        zipf.expected_loss(zipf_alpha=1.5)
    with pytest.raises(ValueError, match="combine"):
        zipf.expected_loss(zipf_alpha=1.5, N=10.0, combine="sum")
