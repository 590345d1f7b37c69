"""The shared battery every optimizer in paperlab.optim passes (style guide rule 7)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
from torch import nn

from paperlab.optim import RMNP, Muon, Nora, RoutedOptimizer
from paperlab.optim import functional as F


def _routed(params, **hp):
    params = list(params)
    if isinstance(params[0], dict):
        return RoutedOptimizer([{"kind": "nora", "weight_decay": 0.1, **hp, **g} for g in params])
    mats = [p for p in params if p.ndim >= 2]
    vecs = [p for p in params if p.ndim < 2]
    groups = [{"params": mats, "kind": "nora", "weight_decay": 0.1, **hp}]
    if vecs:
        groups.append({"params": vecs, "kind": "adamw", "lr": 1e-2})
    return RoutedOptimizer(groups)


CASES: dict[str, Callable[..., torch.optim.Optimizer]] = {
    "nora": lambda ps, **hp: Nora(ps, **{"lr": 0.05, "weight_decay": 0.1, **hp}),
    "nora_official": lambda ps, **hp: Nora.from_preset(ps, "official", **{"lr": 0.05, "weight_decay": 0.1, **hp}),
    "rmnp": lambda ps, **hp: RMNP(ps, **{"lr": 0.05, "weight_decay": 0.1, **hp}),
    "rmnp_official": lambda ps, **hp: RMNP.from_preset(ps, "official", **{"lr": 0.05, **hp}),
    "muon": lambda ps, **hp: Muon(ps, **{"lr": 0.05, "weight_decay": 0.1, **hp}),
    "routed": lambda ps, **hp: _routed(ps, **{"lr": 0.05, **hp}),
}


def _params(seed: int = 0) -> list[nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [nn.Parameter(torch.randn(6, 9, generator=g)), nn.Parameter(torch.randn(5, 3, 2, 2, generator=g)),
            nn.Parameter(torch.randn(11, 4, generator=g))]


def _grads(step: int, params: list[nn.Parameter]) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1000 + step)
    return [torch.randn(p.shape, generator=g) for p in params]


def _run(opt: torch.optim.Optimizer, params: list[nn.Parameter], steps: range) -> None:
    for t in steps:
        for p, g in zip(params, _grads(t, params), strict=True):
            p.grad = g.clone()
        opt.step()


@pytest.mark.parametrize("case", CASES)
def test_state_dict_roundtrip_is_bitwise(case: str) -> None:
    params = _params()
    opt = CASES[case](params)
    _run(opt, params, range(3))
    saved_params = [p.detach().clone() for p in params]
    saved_state = copy.deepcopy(opt.state_dict())
    _run(opt, params, range(3, 6))
    fresh = [nn.Parameter(p.clone()) for p in saved_params]
    opt2 = CASES[case](fresh)
    opt2.load_state_dict(saved_state)
    _run(opt2, fresh, range(3, 6))
    for a, b in zip(params, fresh, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("case", CASES)
def test_same_seed_same_bits(case: str) -> None:
    runs = []
    for _ in range(2):
        params = _params(seed=3)
        _run(CASES[case](params), params, range(4))
        runs.append(params)
    for a, b in zip(*runs, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("case", CASES)
def test_params_without_grad_are_skipped(case: str) -> None:
    params = _params()
    opt = CASES[case](params)
    before = params[1].detach().clone()
    for p, g in zip(params, _grads(0, params), strict=True):
        p.grad = g
    params[1].grad = None
    opt.step()
    assert torch.equal(params[1], before)
    assert len(opt.state[params[1]]) == 0
    assert not torch.equal(params[0], _params()[0])


@pytest.mark.parametrize("case", CASES)
def test_repr_names_class_and_lr(case: str) -> None:
    text = repr(CASES[case](_params()))
    assert type(CASES[case](_params())).__name__ in text and "lr: 0.05" in text


@pytest.mark.parametrize("case", CASES)
def test_param_groups_with_different_hyperparameters(case: str) -> None:
    params = _params()
    opt = CASES[case]([{"params": params[:1], "lr": 0.01}, {"params": params[1:], "lr": 0.07}])
    _run(opt, params, range(3))
    split = [nn.Parameter(p.clone()) for p in _params()]
    opt_a, opt_b = CASES[case](split[:1], lr=0.01), CASES[case](split[1:], lr=0.07)
    for t in range(3):
        for p, g in zip(split, _grads(t, split), strict=True):
            p.grad = g
        opt_a.step()
        opt_b.step()
    for a, b in zip(params, split, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("case", CASES)
def test_quadratic_converges(case: str) -> None:
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(8, 16, generator=g)
    target = torch.randn(8, 16, generator=g)
    target = target / target.norm(dim=1, keepdim=True) * w0.norm(dim=1, keepdim=True)  # reachable by Nora
    w = nn.Parameter(w0.clone())
    opt = CASES[case]([w], lr=0.3, weight_decay=0.0)
    loss0 = 0.5 * (w0 - target).square().sum()
    for t in range(150):
        for group in opt.param_groups:
            group["lr"] = 0.3 * 0.96**t
        opt.zero_grad()
        loss = 0.5 * (w - target).square().sum()
        loss.backward()
        opt.step()
    final = 0.5 * (w.detach() - target).square().sum()
    assert float(final) < 0.02 * float(loss0)


def _functional_step(case: str, p, g, state, *, lr, wd):
    """The pure-function version of one step of ``case`` (all hyperparameters as in CASES)."""
    buf = state.setdefault("m", torch.zeros_like(p))
    if case.startswith("nora"):
        opts = {"nesterov": True, "shape_scale": "muon"} if case == "nora_official" else {}
        new, state["m"] = F.nora_step(p, g, buf, lr=lr, weight_decay=wd, beta=0.95, **opts)
        d, _ = F.nora_update(g, buf, p, beta=0.95, **opts)  # the direction form agrees up to rounding
        torch.testing.assert_close(F.apply_update(p, d, lr=lr, weight_decay=wd), new, rtol=1e-6, atol=1e-6)
        return new
    if case.startswith("rmnp"):
        opts = ({"nesterov": True, "shape_scale": "muon", "eps": 1e-12, "eps_mode": "clamp"}
                if case == "rmnp_official" else {})
        new, state["m"] = F.rmnp_step(p, g, buf, lr=lr, weight_decay=wd, beta=0.95, **opts)
        d, _ = F.rmnp_update(g, buf, beta=0.95, **opts)
        torch.testing.assert_close(F.apply_update(p, d, lr=lr, weight_decay=wd), new, rtol=1e-6, atol=1e-6)
        return new
    d, state["m"] = F.muon_update(g, buf, beta=0.95)
    return F.apply_update(p, d, lr=lr, weight_decay=wd)


@pytest.mark.parametrize("case", ["nora", "nora_official", "rmnp", "rmnp_official", "muon"])
def test_functional_equals_class(case: str) -> None:
    params = _params()
    opt = CASES[case](params)
    wd = opt.param_groups[0]["weight_decay"]
    ref = [p.detach().clone() for p in _params()]
    states: list[dict] = [{} for _ in ref]
    for t in range(4):
        grads = _grads(t, params)
        for p, g in zip(params, grads, strict=True):
            p.grad = g.clone()
        opt.step()
        for i, g in enumerate(grads):
            kept = g.clone()
            ref[i] = _functional_step(case, ref[i], g, states[i], lr=0.05, wd=wd)
            assert torch.equal(g, kept), "the update must not mutate the gradient"
    for a, b in zip(params, ref, strict=True):
        assert torch.equal(a.detach(), b)


def test_step_closure_returns_loss_and_updates() -> None:
    w = nn.Parameter(torch.ones(3, 4))
    opt = Nora([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * torch.arange(12.0).view(3, 4)).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss.detach()) == 66.0 and not torch.equal(w, torch.ones(3, 4))


@pytest.mark.parametrize("case", ["nora", "rmnp", "muon", "routed"])
def test_grad_scaler_skips_non_finite_steps(case: str) -> None:
    params = _params()
    opt = CASES[case](params)
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0)
    before = [p.detach().clone() for p in params]
    for t in range(2):
        for p in params:
            p.grad = None
        loss = sum((p * g).sum() for p, g in zip(params, _grads(t, params), strict=True))
        scaler.scale(loss).backward()
        if t == 0:
            params[0].grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        if t == 0:  # skipped: nothing moved, no state, scale halved
            assert all(torch.equal(p, b) for p, b in zip(params, before, strict=True))
            assert scaler.get_scale() == 2.0 and all(len(opt.state[p]) == 0 for p in params)
    assert all(torch.isfinite(p).all() and not torch.equal(p, b) for p, b in zip(params, before, strict=True))
