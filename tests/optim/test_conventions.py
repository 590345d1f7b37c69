"""torch conventions: torch.compile of a step, the ``momentum`` name (LR schedulers), the multi-tensor path,
and Muon's shape factor on conv kernels as in KellerJordan/Muon."""

from __future__ import annotations

import copy
from collections.abc import Callable
from unittest import mock

import pytest
import torch
from torch import nn

from paperlab.optim import RMNP, Muon, Nora, RoutedOptimizer, make_optimizer, muon_update, newton_schulz
from paperlab.optim import functional as F

CLASSES = {"nora": Nora, "rmnp": RMNP, "muon": Muon}


def _model(seed: int = 0) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Conv1d(16, 8, 3), nn.Flatten())


def _set_grads(params: list[nn.Parameter], seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    for p in params:
        p.grad = torch.randn(p.shape, generator=gen)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")  # inductor's own
def test_compiled_step_equals_eager_for_nora_rmnp_and_muon() -> None:
    """The default inductor backend on a tiny model, from a fresh state and after it exists. On CPU the row
    steps of Nora/RMNP run outside the graph (inductor's C++ backend crashes on them, pytorch#196570); Muon's
    step and the loop around them are compiled."""
    runs: dict[str, list[list[nn.Parameter]]] = {}
    steppers: dict[str, Callable[[], None]] = {}
    for mode in ("eager", "compiled"):
        params = [[p for p in _model().parameters() if p.ndim >= 2] for _ in CLASSES]
        opts = [Nora.from_preset(params[0], "official", lr=0.02, weight_decay=0.1),
                RMNP(params[1], lr=0.02, weight_decay=0.1, nesterov=True),
                Muon(params[2], lr=0.02, weight_decay=0.1)]

        def step_all(opts: list[torch.optim.Optimizer] = opts) -> None:
            for opt in opts:
                opt.step()

        steppers[mode] = step_all if mode == "eager" else torch.compile(step_all)
        runs[mode] = params
    for t in range(2):  # compiled from a fresh state, then recompiled once the state exists
        for mode in runs:
            for group in runs[mode]:
                _set_grads(group, seed=t)
            steppers[mode]()
    for eager, compiled in zip(runs["eager"], runs["compiled"], strict=True):
        for a, b in zip(eager, compiled, strict=True):
            torch.testing.assert_close(b.detach(), a.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(CLASSES))
def test_one_cycle_lr_cycles_the_momentum_the_step_uses(name: str) -> None:
    w = nn.Parameter(torch.randn(6, 4, generator=torch.Generator().manual_seed(0)))
    opt = CLASSES[name]([w], lr=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=10, cycle_momentum=True,
                                                base_momentum=0.85, max_momentum=0.95)
    seen, ref, buf = [], w.detach().clone(), torch.zeros(6, 4)
    for t in range(4):
        group = opt.param_groups[0]
        seen.append(group["momentum"])
        g = torch.randn(6, 4, generator=torch.Generator().manual_seed(t))
        w.grad = g
        lr, momentum = group["lr"], group["momentum"]
        opt.step()
        sched.step()
        if name == "nora":  # the scheduled value is the one the step used
            ref, buf = F.nora_step(ref, g, buf, lr=lr, beta=momentum)
    assert seen[0] == 0.95 and seen[-1] < seen[0]
    if name == "nora":
        assert torch.equal(w.detach(), ref)
    cyclic = torch.optim.lr_scheduler.CyclicLR(CLASSES[name]([w], lr=0.01), base_lr=0.01, max_lr=0.05, step_size_up=2,
                                               base_momentum=0.85, max_momentum=0.95)
    cyclic.optimizer.step()
    cyclic.step()
    assert cyclic.optimizer.param_groups[0]["momentum"] == pytest.approx(0.9)


def test_beta_is_a_deprecated_alias_of_momentum() -> None:
    def run(**kw) -> torch.Tensor:
        w = nn.Parameter(torch.ones(3, 4))
        opt = Nora([w], lr=0.1, **kw)
        for t in range(2):  # the first step's direction does not depend on the EMA coefficient
            w.grad = torch.randn(3, 4, generator=torch.Generator().manual_seed(t))
            opt.step()
        return w.detach()

    with pytest.warns(FutureWarning, match="beta= is deprecated.*pass momentum="):
        old = run(beta=0.8)
    assert torch.equal(old, run(momentum=0.8)) and not torch.equal(old, run())
    with pytest.raises(ValueError, match="not both"):
        Nora([nn.Parameter(torch.ones(2, 2))], momentum=0.9, beta=0.8)
    with pytest.warns(FutureWarning):
        opt = RoutedOptimizer([{"params": [nn.Parameter(torch.ones(2, 2))], "kind": "rmnp", "beta": 0.7}])
    assert opt.param_groups[0]["momentum"] == 0.7 and "beta" not in opt.param_groups[0]
    with pytest.warns(FutureWarning):
        opt = make_optimizer(_model(), "muon", lr=0.01, options={"beta": 0.6})
    assert opt.param_groups[0]["momentum"] == 0.6
    with pytest.warns(FutureWarning):
        opt = Nora.from_preset([nn.Parameter(torch.ones(2, 2))], "official", beta=0.5)
    assert opt.param_groups[0]["momentum"] == 0.5


def test_old_state_dict_with_beta_loads_as_momentum_silently() -> None:
    w = nn.Parameter(torch.randn(3, 4))
    opt = Nora([w], lr=0.1, momentum=0.9)
    w.grad = torch.randn(3, 4)
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    sd["param_groups"][0]["beta"] = sd["param_groups"][0].pop("momentum")  # a checkpoint from before the rename
    fresh = Nora([w], lr=0.1)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[0]["momentum"] == 0.9 and "beta" not in fresh.param_groups[0]
    fresh.step()


def _foreach_params(seed: int) -> list[list[nn.Parameter]]:
    """Two groups: four 6x9, three conv kernels and one 11x4 (a singleton); two [in, out] 9x6 (row_dim=1)."""
    gen = torch.Generator().manual_seed(seed)
    shapes = [(6, 9)] * 4 + [(5, 3, 2, 2)] * 3 + [(11, 4)]
    return [[nn.Parameter(torch.randn(s, generator=gen)) for s in shapes],
            [nn.Parameter(torch.randn(9, 6, generator=gen)) for _ in range(2)]]


@pytest.mark.parametrize("nesterov", [False, True], ids=["ema", "nesterov"])
@pytest.mark.parametrize("name", ["nora", "rmnp"])
def test_foreach_equals_the_per_parameter_step(name: str, nesterov: bool) -> None:
    results = {}
    for foreach in (False, True):
        groups = _foreach_params(seed=0)
        opt = CLASSES[name]([{"params": groups[0]}, {"params": groups[1], "row_dim": 1}], lr=0.05,
                            weight_decay=0.1, nesterov=nesterov, shape_scale="muon", foreach=foreach)
        flat = groups[0] + groups[1]
        with mock.patch.object(F, "row_terms", wraps=F.row_terms) as row_terms:
            for t in range(4):
                _set_grads(flat, seed=10 + t)
                opt.step()
        # per step: one call per stack (the 6x9s, the convs, the [in, out] pair) and for the lone 11x4 matrix
        assert row_terms.call_count == 4 * (4 if foreach else len(flat))
        results[foreach] = (flat, [opt.state[p]["momentum_buffer"] for p in flat])
    for a, b in zip(*(results[f][0] + results[f][1] for f in (False, True)), strict=True):
        torch.testing.assert_close(b.detach(), a.detach(), rtol=0, atol=1e-6)


def test_foreach_keeps_non_contiguous_parameters_on_the_per_parameter_path() -> None:
    base = torch.randn(2, 9, 6, generator=torch.Generator().manual_seed(3))
    runs = []
    for foreach in (False, True):
        params = [nn.Parameter(base[0].clone()), nn.Parameter(torch.empty(9, 6).t().t())]  # contiguous pair
        params += [nn.Parameter(torch.empty(6, 9).t())]  # a [9, 6] view with transposed strides
        with torch.no_grad():
            params[1].copy_(base[1])
            params[2].copy_(base[1])
        opt = Nora(params, lr=0.05, weight_decay=0.1, foreach=foreach)
        for t in range(3):
            _set_grads(params, seed=t)
            opt.step()
        runs.append(params)
    for a, b in zip(*runs, strict=True):
        torch.testing.assert_close(b.detach(), a.detach(), rtol=0, atol=1e-6)


def test_foreach_with_bf16_master_weights_matches_per_parameter() -> None:
    results = []
    for foreach in (False, True):
        params = [nn.Parameter(p.detach().bfloat16()) for p in _foreach_params(seed=1)[0]]
        opt = Nora(params, lr=0.01, weight_decay=0.1, master_weights=True, foreach=foreach)
        for t in range(3):
            gen = torch.Generator().manual_seed(t)
            for p in params:
                p.grad = torch.randn(p.shape, generator=gen).bfloat16()
            opt.step()
        results.append([opt.state[p]["master_param"] for p in params])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-6)


def _keller_jordan_scale(shape: tuple[int, ...]) -> float:
    """KellerJordan/Muon ``muon_update``: ``max(1, grad.size(-2) / grad.size(-1)) ** 0.5``."""
    return max(1.0, shape[-2] / shape[-1]) ** 0.5


@pytest.mark.parametrize("shape", [(64, 2, 3, 3), (8, 2, 3, 1), (13, 7), (7, 13)], ids=lambda s: "x".join(map(str, s)))
def test_muon_shape_factor_matches_keller_jordan(shape: tuple[int, ...]) -> None:
    g = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    d, _ = muon_update(g, torch.zeros(shape), nesterov=False, beta=0.0)
    flat = newton_schulz(g.reshape(shape[0], -1))  # orthogonalized as [C_out, C_in kh kw], as KellerJordan/Muon
    torch.testing.assert_close(d.reshape(shape[0], -1), flat * _keller_jordan_scale(shape), rtol=1e-6, atol=1e-7)
    if shape == (64, 2, 3, 3):  # the flattened [64, 18] matrix would scale by sqrt(64 / 18) = 1.886
        assert _keller_jordan_scale(shape) == 1.0
