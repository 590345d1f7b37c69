"""Muon's Newton-Schulz band and RMNP's row normalization (the property tests of the baselines)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from paperlab.optim import RMNP, Muon, muon_update, newton_schulz, rmnp_update


def _well_conditioned(m: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    u, _ = torch.linalg.qr(torch.randn(m, min(m, n), generator=g))
    v, _ = torch.linalg.qr(torch.randn(n, min(m, n), generator=g))
    s = torch.linspace(0.2, 1.0, min(m, n))
    return u @ torch.diag(s) @ v.t()


@pytest.mark.parametrize("shape", [(32, 32), (48, 20), (20, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_newton_schulz_singular_values_in_band_and_close_to_polar(shape) -> None:
    x = _well_conditioned(*shape, seed=0)
    o = newton_schulz(x, steps=5)
    sv = torch.linalg.svdvals(o)
    assert sv.min() > 0.5 and sv.max() < 1.5
    u, _, vh = torch.linalg.svd(x, full_matrices=False)
    polar = u @ vh
    cos = (o * polar).sum() / (o.norm() * polar.norm())
    assert cos > 0.9


def test_newton_schulz_on_gaussian_gradients_stays_in_band() -> None:
    x = torch.randn(64, 40, generator=torch.Generator().manual_seed(1))
    sv = torch.linalg.svdvals(newton_schulz(x))
    assert sv.min() > 0.5 and sv.max() < 1.5


def test_muon_update_scales_tall_matrices_and_views_convs_as_rows() -> None:
    g = torch.randn(16, 4, 3, 3, generator=torch.Generator().manual_seed(2))
    d, m = muon_update(g, torch.zeros_like(g), beta=0.9, nesterov=False)
    assert d.shape == g.shape and torch.allclose(m, 0.1 * g)
    tall = torch.randn(40, 10, generator=torch.Generator().manual_seed(3))
    d, _ = muon_update(tall, torch.zeros_like(tall))
    sv = torch.linalg.svdvals(d) / math.sqrt(4.0)
    assert sv.min() > 0.5 and sv.max() < 1.5


def test_rmnp_rows_have_unit_norm_and_match_paper_equation() -> None:
    g = torch.randn(7, 5, generator=torch.Generator().manual_seed(4))
    m0 = torch.randn(7, 5, generator=torch.Generator().manual_seed(5))
    d, m = rmnp_update(g, m0, beta=0.8)
    expect_m = 0.8 * m0 + 0.2 * g
    assert torch.allclose(m, expect_m, atol=1e-6)
    assert torch.allclose(d, expect_m / (expect_m.norm(dim=1, keepdim=True) + 1e-8), atol=1e-6)


def test_rmnp_official_summed_buffer_direction_equals_ema_nesterov() -> None:
    """Official RMNP: buf <- mu buf + g; normalize(g + mu buf). Same rows as our EMA + nesterov form."""
    gen = torch.Generator().manual_seed(6)
    grads = [torch.randn(6, 4, generator=gen) for _ in range(5)]
    buf, ema = torch.zeros(6, 4), torch.zeros(6, 4)
    for g in grads:
        buf = 0.95 * buf + g
        ref = torch.nn.functional.normalize(g + 0.95 * buf, dim=1) * math.sqrt(6 / 4)
        d, ema = rmnp_update(g, ema, beta=0.95, nesterov=True, shape_scale="muon", eps=1e-12, eps_mode="clamp")
        assert torch.allclose(d, ref, atol=1e-6)


def test_rmnp_does_not_keep_row_norms_fixed_but_muon_class_runs() -> None:
    w = nn.Parameter(torch.randn(8, 6, generator=torch.Generator().manual_seed(7)))
    start = w.detach().norm(dim=1).clone()
    opt = RMNP([w], lr=0.1)
    w.grad = -w.detach().clone()  # gradient along the weights: a purely radial update
    opt.step()
    assert torch.allclose(w.detach().norm(dim=1), start + 0.1, rtol=1e-5)
    v = nn.Parameter(torch.eye(4))
    v.grad = torch.ones(4, 4)
    Muon([v], lr=0.1, nesterov=False).step()
    assert torch.isfinite(v).all() and not torch.equal(v.detach(), torch.eye(4))
