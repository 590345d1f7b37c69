"""Zipf memorisation task: determinism, metric invariants, frontier inversion, learning through train()."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from paperlab.scaling import memorization as mem
from paperlab.scaling.zipf import tail_mass


def test_task_same_seed_same_bits():
    a, b = mem.make_task(K=64, dim=8, classes=4, seed=1), mem.make_task(K=64, dim=8, classes=4, seed=1)
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y) and torch.equal(a.p, b.p)
    assert not torch.equal(a.x, mem.make_task(K=64, dim=8, classes=4, seed=2).x)
    assert a.p.sum().item() == pytest.approx(1.0, abs=1e-6) and bool((a.p[:-1] >= a.p[1:]).all())


def test_mlp_init_is_seeded_and_sized():
    m1, m2 = mem.make_mlp(5, dim=7, classes=3, seed=0), mem.make_mlp(5, dim=7, classes=3, seed=0)
    assert all(torch.equal(p, q) for p, q in zip(m1.parameters(), m2.parameters(), strict=True))
    assert mem.n_params(m1) == 7 * 5 + 5 + 5 * 5 + 5 + 5 * 3 + 3


class _Oracle(nn.Module):
    """Predicts the true label for the first ``k`` keys and a wrong one for the rest."""

    def __init__(self, task: mem.ZipfTask, k: int) -> None:
        super().__init__()
        self.task, self.k = task, k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.task.y.clone()
        y[self.k:] = (y[self.k:] + 1) % self.task.classes
        return nn.functional.one_hot(y, self.task.classes).float()


def test_zipf_error_equals_tail_mass_of_a_frontier_model_and_inverts():
    task = mem.make_task(K=500, dim=4, classes=10, zipf_alpha=1.5, seed=0)
    for k in (0, 37, 500):
        err = mem.zipf_error(_Oracle(task, k), task)
        expected = float(tail_mass(k, 1.5, K=500)) / (1 - 1 / 10)
        assert err == pytest.approx(expected, rel=1e-5)
    e = float(tail_mass(37, 1.5, K=500))
    assert mem.effective_frontier(e, 1.5, 500) == pytest.approx(37.0, rel=1e-6)
    assert mem.effective_frontier(1e-12, 1.5, 500) == 500.0


def test_training_through_train_reduces_error():
    torch.manual_seed(0)  # test-only: no library code reads the global generator
    task = mem.make_task(K=256, dim=16, classes=8, zipf_alpha=1.5, seed=0)
    errs = mem.train_expected(task, width=32, steps=60, record_at=(1, 60), lr=1e-2, seed=0)
    assert errs[60] < 0.5 * errs[1]
    again = mem.train_expected(task, width=32, steps=60, record_at=(1, 60), lr=1e-2, seed=0)
    assert again == errs  # deterministic
    err, seen = mem.train_coverage(task, D=200, width=32, steps=60, lr=1e-2, seed=0)
    p = task.p.double().numpy()
    assert 0 < seen <= 200 and 0.0 <= err <= 1.0
    assert err >= 0.5 * float(np.sort(p)[: 256 - seen].sum())  # unseen keys stay near chance


def test_bad_inputs():
    with pytest.raises(ValueError, match="zipf_alpha"):
        mem.make_task(K=10, zipf_alpha=1.0)
    task = mem.make_task(K=16, dim=4, classes=4, seed=0)
    with pytest.raises(ValueError, match="optimizer"):
        mem.train_expected(task, width=4, steps=1, optimizer="lion")


def test_tail_exponent_is_gamma_alpha_minus_one_far_below_K_and_bends_near_it():
    R, k = [1e3, 1e4, 1e5], [10.0, 100.0, 1000.0]
    for a, g in ((1.5, 1.0), (1.5, 1 / 1.5), (2.0, 0.5)):
        assert mem.tail_exponent(R, k, gamma=g, zipf_alpha=a, K=2**20) == pytest.approx(g * (a - 1), abs=0.01)
    # near K the tail falls faster than the power law, so the finite-K prediction is steeper
    assert mem.tail_exponent(R, k, gamma=1.0, zipf_alpha=1.5, K=2**11) > 0.6


def test_unseen_mass_is_the_error_of_memorising_the_draws():
    task = mem.make_task(K=300, dim=8, classes=8, zipf_alpha=1.5, seed=0)
    _, seen = mem.train_coverage(task, D=150, width=8, steps=1, seed=3)
    counts = mem._draw_counts(task, 150, 3)
    assert int((counts > 0).sum()) == seen  # the same draws train_coverage trained on
    assert mem.unseen_mass(task, D=150, seed=3) == pytest.approx(float(task.p.double()[counts == 0].sum()))
    assert mem.unseen_mass(task, D=10**6, seed=3) < mem.unseen_mass(task, D=150, seed=3)


def test_coverage_recipe_learns_what_it_saw():
    """The coverage run memorises its seen keys: its error is the unseen mass (the experiment's D gate)."""
    task = mem.make_task(K=512, dim=16, classes=16, zipf_alpha=1.5, seed=0)
    for D in (100, 1000):
        err, _ = mem.train_coverage(task, D=D, width=64, steps=300, lr=1e-2, seed=0)
        assert err - mem.unseen_mass(task, D=D, seed=0) <= 0.02
