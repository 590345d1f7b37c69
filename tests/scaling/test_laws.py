"""Law identities: Chinchilla is the p = 1 Kaplan p-norm, p = inf is the max, the EF law is a reparametrised
p-norm (spec fact 1 and our algebraic note), hard min is the s -> inf limit; bad inputs raise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from paperlab.scaling.laws import ChinchillaLaw, FrontierLaw, KaplanLaw, PowerLaw, frontier_tail_constant

N = np.geomspace(1e7, 1e11, 7)
D = np.geomspace(1e12, 1e9, 7)
CH = dict(E=1.8, A=480.0, B=2100.0, alpha=0.35, beta=0.37)


def test_chinchilla_is_p1_and_max_is_pinf():
    np.testing.assert_allclose(KaplanLaw(**CH, p=1.0)(N, D), ChinchillaLaw(**CH)(N, D), rtol=1e-13)
    t = ChinchillaLaw(**CH).terms(N, D)
    np.testing.assert_allclose(KaplanLaw(**CH, p=math.inf)(N, D), 1.8 + np.maximum(*t.values()), rtol=1e-13)
    big = KaplanLaw(**CH, p=200.0)(N, D)
    np.testing.assert_allclose(big, 1.8 + np.maximum(*t.values()), rtol=1e-2)


def test_frontier_law_is_a_reparametrised_pnorm():
    za, s, c_N, g_N, c_D = 1.6, 0.7, 3e-5, 0.55, 1e-6
    ef = FrontierLaw(E=1.7, zipf_alpha=za, c_N=c_N, gamma_N=g_N, c_D=c_D, gamma_D=1 / za, s=s)
    G = frontier_tail_constant(za)
    pn = KaplanLaw(E=1.7, A=G * c_N ** (1 - za), B=G * c_D ** (1 - za), alpha=g_N * (za - 1), beta=(za - 1) / za,
                   p=s / (za - 1))
    np.testing.assert_allclose(ef(N, D), pn(N, D), rtol=1e-10)


def test_frontier_soft_min_tends_to_hard_min():
    kw = dict(E=1.0, zipf_alpha=1.5, c_N=1.0, gamma_N=1.0, c_D=1.0, gamma_D=2 / 3)
    hard = FrontierLaw(**kw)(N, D)
    soft = FrontierLaw(**kw, s=400.0)(N, D)
    np.testing.assert_allclose(soft, hard, rtol=5e-3)
    assert np.all(FrontierLaw(**kw, s=2.0)(N, D) > hard)  # soft min < hard min -> more tail mass


def test_tail_constant_and_power_law():
    from scipy.special import zeta

    assert frontier_tail_constant(2.0) == pytest.approx(1 / zeta(2.0))
    assert float(PowerLaw(E=1.0, A=2.0, alpha=0.5)(4.0)) == pytest.approx(2.0)


def test_bad_inputs():
    with pytest.raises(ValueError, match="zipf_alpha must be > 1"):
        FrontierLaw(E=1.0, zipf_alpha=1.0, c_N=1.0, gamma_N=1.0, c_D=1.0, gamma_D=1.0)
    with pytest.raises(ValueError, match="c_T and gamma_T"):
        FrontierLaw(E=1.0, zipf_alpha=1.5, c_N=1.0, gamma_N=1.0, c_D=1.0, gamma_D=1.0, c_T=1.0)
    with pytest.raises(ValueError, match="N must be finite and > 0"):
        ChinchillaLaw(**CH)(np.array([1e8, -1.0]), np.array([1e9, 1e9]))
    law = FrontierLaw(E=1.0, zipf_alpha=1.5, c_N=1.0, gamma_N=1.0, c_D=1.0, gamma_D=1.0, c_T=1.0, gamma_T=1.0)
    with pytest.raises(ValueError, match="pass T"):
        law(1e8, 1e9)
