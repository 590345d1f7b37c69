"""Symbolic Index, decision margins and the reconstructed bounds (spec tests 1-7, 11)."""

from __future__ import annotations

import math

import pytest
import torch

from paperlab.reasoning.probe import (
    compounding_error_bound,
    decision_margin,
    exploration_kl_lower_bound,
    fit_noise_ratio,
    kl_extremal,
    kl_to_uniform,
    margin_lower_bound,
    noise_curve,
    restrict,
    symbolic_index,
)
from paperlab.reasoning.theory import dirichlet_kl_closed_form, dirichlet_mean_kl, shortcut_mle


def test_symbolic_index_range_restriction_and_top_p():
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(500, 9, generator=g, dtype=torch.float64) * 3, -1)
    i_s = symbolic_index(p)
    assert torch.equal(i_s, p.max(-1).values)
    assert (i_s >= 1 / 9 - 1e-12).all() and (i_s <= 1).all()
    probs = torch.tensor([0.5, 0.3, 0.1, 0.1], dtype=torch.float64)
    assert symbolic_index(probs, candidates=[1, 2]).item() == pytest.approx(0.75)
    assert restrict(probs, [2, 3]).tolist() == pytest.approx([0.5, 0.5])
    # top-p 0.7 keeps {0.5, 0.3} (mass above 0.3 is 0.5 < 0.7), drops the rest
    assert symbolic_index(probs, top_p=0.7).item() == pytest.approx(0.5 / 0.8)
    assert symbolic_index(probs, top_p=1.0).item() == pytest.approx(0.5)
    per_row = symbolic_index(probs.expand(2, 4), candidates=torch.tensor([[0, 1], [2, 3]]))
    assert per_row.tolist() == pytest.approx([0.5 / 0.8, 0.5])


def test_bad_input_raises():
    with pytest.raises(ValueError, match="sum to 1"):
        symbolic_index(torch.tensor([0.5, 0.6]))
    with pytest.raises(ValueError, match="non-negative"):
        symbolic_index(torch.tensor([1.5, -0.5]))
    with pytest.raises(ValueError, match=r"lie in \[0.333333, 1\]"):
        exploration_kl_lower_bound(0.2, 3)
    with pytest.raises(ValueError, match="lie in"):
        exploration_kl_lower_bound(1.2, 3)
    with pytest.raises(ValueError, match="lie in"):
        margin_lower_bound(0.0)
    with pytest.raises(ValueError, match="n_options"):
        exploration_kl_lower_bound(0.5, 1)


def test_thm_4_11_margin_bound_on_random_logits():
    g = torch.Generator().manual_seed(1)
    scales = torch.tensor([1e-3, 1.0, 10.0, 100.0], dtype=torch.float64)
    z = torch.randn(2500, 4, 20, generator=g, dtype=torch.float64) * scales[None, :, None]
    z = z.reshape(-1, 20)
    p = torch.softmax(z, -1)
    i_s = symbolic_index(p)
    ok = i_s < 1 - 1e-9  # near I_S = 1, 1 - I_S loses digits in float64 (the bound becomes +inf at 1)
    assert ok.float().mean() > 0.7
    bound = margin_lower_bound(i_s[ok])
    assert (decision_margin(z[ok]) >= bound - 1e-6).all()
    # equality when all non-top mass sits on the runner-up (other logits at -inf-ish)
    z = torch.tensor([[3.0, 1.0, -1e4, -1e4], [0.2, 0.1, -1e4, -1e4]], dtype=torch.float64)
    bound = margin_lower_bound(symbolic_index(torch.softmax(z, -1)))
    assert torch.allclose(decision_margin(z), bound, atol=1e-9)
    assert margin_lower_bound(0.5).item() == 0.0 and math.isinf(margin_lower_bound(1.0).item())


@pytest.mark.parametrize("b", range(2, 11))
def test_thm_4_12_exploration_bound(b):
    with torch.random.fork_rng(devices=[]):  # Dirichlet.sample has no generator argument
        torch.manual_seed(b)
        p = torch.distributions.Dirichlet(torch.full((b,), 0.5, dtype=torch.float64)).sample((2000,))
    p = p.clamp_min(1e-12) / p.clamp_min(1e-12).sum(-1, keepdim=True)
    i_s = symbolic_index(p)
    ok = i_s < 1 - 1e-9  # beyond, 1 - I_S loses digits and the bound (equality at B = 2) is off by ~1e-5
    assert ok.float().mean() > 0.9
    kl = kl_to_uniform(p[ok])
    assert (kl >= exploration_kl_lower_bound(i_s[ok], b) - 1e-6).all()
    for i_s in (1 / b, 0.5 if b == 2 else 0.4, 0.9):
        uniform_rest = torch.tensor([i_s] + [(1 - i_s) / (b - 1)] * (b - 1), dtype=torch.float64)
        assert kl_to_uniform(uniform_rest).item() == pytest.approx(exploration_kl_lower_bound(i_s, b).item(),
                                                                   abs=1e-12)
    assert exploration_kl_lower_bound(1 / b, b).item() == pytest.approx(0.0, abs=1e-12)
    assert math.isinf(exploration_kl_lower_bound(1.0, b).item())


def test_thm_4_3_dirichlet_closed_form_error_is_order_one_over_kappa():
    for b in (2, 5):
        scaled = [k * abs(dirichlet_mean_kl(b, k, 1.0) - dirichlet_kl_closed_form(b, k, 1.0))
                  for k in (1e2, 1e4, 1e6)]
        assert max(scaled) < 2 * (b - 1) and scaled[-1] == pytest.approx(scaled[-2], rel=1e-2)


@pytest.mark.parametrize("b", [2, 3, 6])
def test_thm_4_5_slope_is_b_dependent(b):
    d1, d2 = 1e-8, 1e-6
    slope = (kl_extremal(b, d1) - kl_extremal(b, d2)) / (-math.log(d1) + math.log(d2))
    assert slope == pytest.approx((b - 1) / b, rel=1e-5)


def test_thm_4_5_paper_b_free_form_fails_at_b3():
    # The paper's bound KL <= -1/2 log(delta) + c cannot hold for any constant c at B = 3: the gap grows
    # like (2/3 - 1/2) log(1/delta).
    gaps = [kl_extremal(3, d) - 0.5 * -math.log(d) for d in (1e-4, 1e-8, 1e-16)]
    assert gaps[0] < gaps[1] < gaps[2] and gaps[2] - gaps[0] > 0.16 * math.log(1e12) - 1e-6


def test_thm_4_8_bound_is_tight_for_scaled_orthogonal_and_loose_for_contraction():
    g = torch.Generator().manual_seed(0)
    d, m, sigma, lip, n = 8, 6, 0.3, 0.9, 4000
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
    for f, tight in ((lip * q, True), (torch.diag(torch.linspace(0.1, lip, d, dtype=torch.float64)), False)):
        err = torch.zeros(n, d, dtype=torch.float64)  # linear f: the deviation evolves as e <- f e + noise
        for _ in range(m):
            err = err @ f.T + sigma * torch.randn(n, d, generator=g, dtype=torch.float64)
        sq = (err ** 2).sum(-1)
        mean, se = sq.mean().item(), sq.std().item() / math.sqrt(n)
        bound = compounding_error_bound(lip, m, d, sigma)
        if tight:
            assert abs(mean - bound) < 3 * se
        else:
            assert mean < bound - 3 * se
    assert compounding_error_bound(1.0, 5, 4, 0.5) == pytest.approx(5 * 4 * 0.25)


def test_noise_curve_matches_two_class_linear_head_monte_carlo():
    g = torch.Generator().manual_seed(0)
    d, n = 16, 20000
    w = torch.randn(2, d, generator=g, dtype=torch.float64)
    h = torch.randn(d, generator=g, dtype=torch.float64)
    z = w @ h
    if z[0] < z[1]:
        w = w.flip(0)
        z = w @ h
    margin, scale = (z[0] - z[1]).item(), (w[0] - w[1]).norm().item()
    for sigma in (0.05, 0.3, 1.0):
        noisy = (h + sigma * torch.randn(n, d, generator=g, dtype=torch.float64)) @ w.T
        acc = (noisy[:, 0] > noisy[:, 1]).double()
        pred = noise_curve([sigma], margin=margin, scale=scale).item()
        assert abs(acc.mean().item() - pred) < 3 * max(acc.std().item(), 1e-3) / math.sqrt(n) + 1e-3
    assert noise_curve([0.0], margin=margin).item() == 1.0


def test_fit_noise_ratio_recovers_planted_r():
    sigmas = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
    ratios = noise_curve(sigmas, margin=0.37).tolist()
    r, r2 = fit_noise_ratio(sigmas, ratios)
    assert r == pytest.approx(0.37, rel=0.05) and r2 > 0.999
    with pytest.raises(ValueError, match="two"):
        fit_noise_ratio([0.0, 1.0], [1.0, 0.5])


def test_thm_5_1_shortcut_toy():
    assert shortcut_mle("shortcut", steps=3000)[-1] < 0.05
    assert shortcut_mle("expert", steps=50)[-1] > 0.999
    assert shortcut_mle("expert", steps=0)[0] == pytest.approx(math.exp(10) / (math.exp(10) + 2), rel=1e-12)
