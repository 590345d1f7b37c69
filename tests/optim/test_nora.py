"""Nora's properties from the spec (section 1.4 / 4): orthogonality, unit rows, the row-norm recursion,
invariances, presets and degenerate rows."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from paperlab.optim import RMNP, Nora, nora_direction, nora_update
from paperlab.optim.functional import shape_factor


def _rand(*shape: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("shape", [(7, 13), (13, 7), (5, 3, 3, 3), (1, 9)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("scale", ["none", "muon", "rms_adamw"])
def test_update_rows_orthogonal_to_weight_rows_with_norm_s(shape, scale) -> None:
    theta, grad = _rand(*shape, seed=0), _rand(*shape, seed=1)
    d, _ = nora_update(grad, torch.zeros(shape), theta, shape_scale=scale, nesterov=True)
    d, theta = d.reshape(shape[0], -1), theta.reshape(shape[0], -1)
    s = shape_factor(d.shape[0], d.shape[1], scale)
    cos = (d * theta).sum(1) / (d.norm(dim=1) * theta.norm(dim=1))
    assert cos.abs().max() < 1e-6
    assert torch.allclose(d.norm(dim=1), torch.full((shape[0],), s), rtol=1e-6, atol=0)


@pytest.mark.parametrize("wd", [0.0, 0.3])
def test_row_norm_recursion_is_exact_and_data_independent(wd: float) -> None:
    lr, s = 0.05, math.sqrt(12 / 5)
    trajectories = []
    for data_seed in (0, 1):
        w = nn.Parameter(_rand(12, 5, seed=7, dtype=torch.float64))
        opt = Nora([w], lr=lr, weight_decay=wd, shape_scale=True, nesterov=True)
        gen = torch.Generator().manual_seed(100 + data_seed)
        r2, traj = w.detach().square().sum(1), []
        for _ in range(1000):
            w.grad = torch.randn(12, 5, generator=gen, dtype=torch.float64) * torch.rand(1, generator=gen,
                                                                                        dtype=torch.float64)
            opt.step()
            r2 = (1 - lr * wd) ** 2 * r2 + lr**2 * s**2
            new = w.detach().square().sum(1)
            assert torch.allclose(new, r2, rtol=1e-12, atol=0)
            traj.append(new.sqrt())
        trajectories.append(torch.stack(traj))
    assert torch.allclose(trajectories[0], trajectories[1], rtol=1e-12, atol=0)
    if wd > 0:  # after >= 10 / (lr wd) steps every row sits at r* with the predicted angular step
        r_star = s * math.sqrt(lr / (wd * (2 - lr * wd)))
        assert torch.allclose(trajectories[0][-1], torch.full((12,), r_star, dtype=torch.float64), rtol=1e-3)


def test_row_norm_angle_matches_prediction() -> None:
    lr, wd = 0.05, 0.3
    w = nn.Parameter(_rand(6, 8, seed=2, dtype=torch.float64))
    opt = Nora([w], lr=lr, weight_decay=wd)
    gen = torch.Generator().manual_seed(5)
    for _ in range(800):
        before = w.detach().clone()
        w.grad = torch.randn(6, 8, generator=gen, dtype=torch.float64)
        opt.step()
    cos = (before * w.detach()).sum(1) / (before.norm(dim=1) * w.detach().norm(dim=1))
    predicted = math.atan(math.sqrt(lr * wd * (2 - lr * wd)) / (1 - lr * wd))
    assert torch.allclose(torch.arccos(cos.clamp(max=1)), torch.full((6,), predicted, dtype=torch.float64),
                          rtol=1e-3)


def test_rmnp_row_norms_depend_on_the_data() -> None:
    finals = []
    for data_seed in (0, 1):
        w = nn.Parameter(_rand(12, 5, seed=7, dtype=torch.float64))
        opt = RMNP([w], lr=0.05)
        gen = torch.Generator().manual_seed(100 + data_seed)
        for _ in range(200):
            w.grad = torch.randn(12, 5, generator=gen, dtype=torch.float64)
            opt.step()
        finals.append(w.detach().norm(dim=1))
    rel = ((finals[0] - finals[1]).abs() / finals[0]).max()
    assert rel > 1e-2


def test_direction_invariant_to_row_rescaling_of_weights_and_momentum_scale() -> None:
    theta, m = _rand(9, 11, seed=0), _rand(9, 11, seed=1)
    c = torch.rand(9, 1, generator=torch.Generator().manual_seed(2)) * 10 + 0.1
    d = nora_direction(m, theta)
    assert (nora_direction(m, c * theta) - d).abs().max() < 1e-6
    assert (nora_direction(7.5 * m, theta) - d).abs().max() < 1e-6


def test_hand_computed_3x4_step() -> None:
    theta = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    g = torch.tensor([[3.0, 4.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    # m = (1 - 0.9) g; project out theta rows; normalize.
    expected = torch.tensor([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0],
                             [0.75, -0.25, -0.25, -0.25]])
    expected[2] /= math.sqrt(0.75)
    w = nn.Parameter(theta.clone())
    w.grad = g
    Nora([w], lr=0.1, momentum=0.9, weight_decay=0.5).step()
    assert torch.allclose(w.detach(), theta * (1 - 0.05) - 0.1 * expected, atol=1e-6)
    # official preset: Nesterov mix (1-b) g + b m, then x max(1, sqrt(3/4)) = 1: same rows here
    d, _ = nora_update(g, torch.zeros(3, 4), theta, beta=0.9, nesterov=True, shape_scale="muon")
    assert torch.allclose(d, expected, atol=1e-6)


def test_official_preset_is_nesterov_plus_shape_factor_and_paper_is_default() -> None:
    assert Nora.from_preset([nn.Parameter(torch.ones(2, 2))], "paper").defaults == Nora(
        [nn.Parameter(torch.ones(2, 2))]).defaults
    off = Nora.from_preset([nn.Parameter(torch.ones(2, 2))], "official").param_groups[0]
    assert off["nesterov"] is True and off["shape_scale"] == "muon"
    plain = Nora([nn.Parameter(torch.ones(2, 2))], lr=0.01, weight_decay=0.1).param_groups[0]
    assert plain["nesterov"] is False and plain["shape_scale"] == "none"


def test_degenerate_rows() -> None:
    theta = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [1.0, 0.0, 0.0]])
    m = torch.tensor([[3.0, 0.0, 4.0], [2.0, 4.0, 6.0], [0.0, 0.0, 0.0]])
    d = nora_direction(m, theta)
    assert torch.isfinite(d).all()
    assert torch.allclose(d[0], torch.tensor([0.6, 0.0, 0.8]))  # zero weight row: plain row normalization
    # momentum parallel to the weights: v is round-off (~1e-7 > eps), so the clamp normalizes it to a finite
    # step of norm <= 1 in an arbitrary direction (documented; the official code does the same)
    assert d[1].norm() <= 1 + 1e-6
    assert torch.equal(d[2], torch.zeros(3))  # zero momentum: zero step, no NaN
    w = nn.Parameter(theta.clone())
    w.grad = torch.zeros(3, 3)
    Nora([w], lr=0.1).step()
    assert torch.equal(w.detach(), theta)


def test_weight_normalized_trajectories_are_equivariant() -> None:
    """Per-row scale-invariant loss: (c theta0, c lr) gives c times the (theta0, lr) trajectory."""
    x, y = _rand(32, 6, seed=3, dtype=torch.float64), _rand(32, 4, seed=4, dtype=torch.float64)

    def run(c: float):
        w = nn.Parameter(c * _rand(4, 6, seed=5, dtype=torch.float64))
        opt, losses = Nora([w], lr=0.05 * c), []
        for _ in range(30):
            opt.zero_grad()
            loss = (x @ (w / w.norm(dim=1, keepdim=True)).t() - y).square().mean()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        return w.detach(), losses

    (wa, la), (wb, lb) = run(1.0), run(3.0)
    assert torch.allclose(wb, 3.0 * wa, rtol=1e-10, atol=0)
    assert max(abs(a - b) for a, b in zip(la, lb, strict=True)) < 1e-10


def test_non_contiguous_parameter_matches_contiguous() -> None:
    base = _rand(6, 9, seed=11)
    a = nn.Parameter(base.t().contiguous().t().clone())  # contiguous [6, 9]
    b = nn.Parameter(torch.empty(9, 6).t())  # [6, 9] view with transposed strides
    with torch.no_grad():
        b.copy_(base)
    assert not b.is_contiguous()
    opts = {"lr": 0.1, "weight_decay": 0.2, "nesterov": True}
    opt_a, opt_b = Nora([a], **opts), Nora([b], **opts)
    for t in range(3):
        g = _rand(6, 9, seed=20 + t)
        a.grad, b.grad = g.clone(), g.clone()
        opt_a.step()
        opt_b.step()
    torch.testing.assert_close(b.detach(), a.detach(), rtol=1e-6, atol=1e-7)
