"""Allocation: closed form vs numeric, independence of p (spec fact 2), Kaplan's 0.556, bottlenecks."""

from __future__ import annotations

import math

import pytest

from paperlab.scaling.allocate import active_bottleneck, allocation_exponent, optimal_allocation
from paperlab.scaling.laws import ChinchillaLaw, FrontierLaw, KaplanLaw

EPOCH = dict(E=1.817, A=477.8, B=2143.0, alpha=0.347, beta=0.367)


def test_closed_form_matches_numeric_minimisation():
    chin = ChinchillaLaw(**EPOCH)
    same = KaplanLaw(**EPOCH, p=1.0)  # numeric path, identical function
    for C in (1e20, 1e22, 1e24):
        a1, a2 = optimal_allocation(chin, C), optimal_allocation(same, C)
        n1, n2, d1 = a1.N, a2.N, a1.D
        assert n1 == pytest.approx(n2, rel=1e-6)
        assert 6 * n1 * d1 == pytest.approx(C, rel=1e-12)
    exp = allocation_exponent(same)
    assert exp == pytest.approx(chin.n_exponent, abs=1e-6)


@pytest.mark.parametrize("p", [1.0, 2.0, 10.0, math.inf])
def test_allocation_exponent_does_not_depend_on_p(p):
    law = KaplanLaw(E=0.0, A=400.0, B=2000.0, alpha=0.34, beta=0.28, p=p)
    assert allocation_exponent(law) == pytest.approx(0.28 / (0.34 + 0.28), abs=1e-6)


def test_kaplan_joint_law_gives_0556():
    law = KaplanLaw.from_kaplan()
    assert allocation_exponent(law, C_low=1e18, C_high=1e22) == pytest.approx(0.095 / (0.076 + 0.095), abs=1e-6)
    assert law.n_exponent == pytest.approx(0.5556, abs=1e-3)
    # the p-norm form equals Kaplan's written form
    N, D = 1e9, 2e10
    written = ((8.8e13 / N) ** (0.076 / 0.095) + 5.4e13 / D) ** 0.095
    assert float(law(N, D)) == pytest.approx(written, rel=1e-12)


def test_active_bottleneck_is_smallest_frontier():
    law = FrontierLaw(E=1.0, zipf_alpha=1.5, c_N=1.0, gamma_N=1.0, c_D=1.0, gamma_D=1 / 1.5)
    assert active_bottleneck(law, 1e3, 1e12) == "capacity"
    assert active_bottleneck(law, 1e9, 1e3) == "coverage"
    alloc = optimal_allocation(law, 1e21)
    fr = law.frontiers(alloc.N, alloc.D)
    # at the hard-min optimum the two frontiers are equal (the equilibrium)
    assert float(fr["capacity"]) == pytest.approx(float(fr["coverage"]), rel=1e-4)
    assert allocation_exponent(law) == pytest.approx((1 / 1.5) / (1 + 1 / 1.5), abs=1e-4)


def test_frontier_law_with_steps_needs_tokens_per_step():
    law = FrontierLaw(E=1.0, zipf_alpha=1.5, c_N=1.0, gamma_N=1.0, c_D=1.0, gamma_D=1 / 1.5, c_T=1.0,
                      gamma_T=1 / (1.5 * 0.5))
    with pytest.raises(ValueError, match="tokens_per_step"):
        optimal_allocation(law, 1e20)
    alloc = optimal_allocation(law, 1e20, tokens_per_step=1e6)
    assert alloc.bottleneck in {"capacity", "coverage", "optimization"}


def test_bad_budget():
    with pytest.raises(ValueError, match="C must be"):
        optimal_allocation(ChinchillaLaw(**EPOCH), -1.0)
