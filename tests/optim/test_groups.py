"""Routing hidden matrices vs the rest, the combined optimizer, and input validation."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from paperlab.optim import RMNP, Muon, Nora, RoutedOptimizer, make_optimizer, split_params


class _Conv1D(nn.Module):
    """HF-style Conv1D: weight is [in, out]."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.weight + self.bias


_Conv1D.__name__ = "Conv1D"


class _TinyLM(nn.Module):
    def __init__(self, tie: bool, vocab: int = 11, d: int = 8) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.block = nn.ModuleDict({"proj": nn.Linear(d, 2 * d), "out": nn.Linear(2 * d, d, bias=False),
                                    "norm": nn.LayerNorm(d), "conv": nn.Conv1d(d, d, 3)})
        self.gain = nn.Parameter(torch.ones(()))
        self.head = nn.Linear(d, vocab, bias=False)
        if tie:
            self.head.weight = self.wte.weight


@pytest.mark.parametrize("tie", [True, False])
def test_split_routes_by_module_type_and_shape(tie: bool) -> None:
    model = _TinyLM(tie)
    split = split_params(model)
    assert split.matrix_names == ["block.proj.weight", "block.out.weight", "block.conv.weight"]
    expected_other = {"wte.weight", "block.proj.bias", "block.norm.weight", "block.norm.bias", "block.conv.bias",
                      "gain"} | (set() if tie else {"head.weight"})
    assert set(split.other_names) == expected_other
    n_unique = len({id(p) for p in model.parameters()})
    assert len(split.matrix) + len(split.other) == n_unique  # tied weights counted once


def test_conv1d_layout_needs_transposed_and_then_uses_columns_as_rows() -> None:
    model = nn.Sequential(_Conv1D(6, 4))
    with pytest.raises(ValueError, match=r"\(6, 4\).*Conv1D.*transposed"):
        split_params(model)
    opt = make_optimizer(model, "nora", lr=0.1, transposed=(model[0],))
    kinds = [(g["kind"], g.get("row_dim")) for g in opt.param_groups]
    assert kinds == [("nora", 1), ("adamw", None)]
    w = model[0].weight
    before = w.detach().clone()
    model(torch.randn(3, 6)).sum().backward()
    opt.step()
    delta = (w.detach() - before).t()  # rows = output neurons = columns of the [in, out] weight
    assert torch.allclose(delta.norm(dim=1), torch.full((4,), 0.1), rtol=1e-5)
    assert ((delta * before.t()).sum(1)).abs().max() < 1e-5


def test_make_optimizer_steps_both_kinds_in_one_object_with_one_scheduler() -> None:
    model = _TinyLM(tie=True)
    opt = make_optimizer(model, "muon", lr=0.02, adamw_lr=3e-3, weight_decay=0.1)
    assert isinstance(opt, RoutedOptimizer)
    assert [g["kind"] for g in opt.param_groups] == ["muon", "adamw"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 1.5e-3]
    ids = torch.randint(0, 11, (2, 5))
    h = model.wte(ids)
    h = h + model.block["out"](torch.relu(model.block["proj"](h)))
    model.head(model.block["norm"](h)).sum().backward()
    opt.step()
    sched.step()
    with_grad = {id(p) for p in model.parameters() if p.grad is not None}
    assert {id(p) for p in opt.state} == with_grad and len(with_grad) == 6
    assert "momentum_buffer" in opt.state[model.block["proj"].weight] and "exp_avg" in opt.state[model.wte.weight]
    adamw = make_optimizer(model, "adamw", lr=1e-3)
    assert isinstance(adamw, torch.optim.AdamW) and len(adamw.param_groups) == 2


def test_make_optimizer_presets_and_bad_names() -> None:
    model = _TinyLM(tie=True)
    opt = make_optimizer(model, "nora", lr=0.01, options={"preset": "official"})
    assert opt.param_groups[0]["nesterov"] is True and opt.param_groups[0]["shape_scale"] == "muon"
    with pytest.raises(ValueError, match="name='sgd' is not valid"):
        make_optimizer(model, "sgd", lr=0.01)
    with pytest.raises(ValueError, match="preset"):
        make_optimizer(model, "muon", lr=0.01, options={"preset": "official"})


def test_adamw_group_matches_torch_adamw() -> None:
    gen = torch.Generator().manual_seed(0)
    a = nn.Parameter(torch.randn(5, 3, generator=gen))
    b = nn.Parameter(a.detach().clone())
    ours = RoutedOptimizer([{"params": [a], "kind": "adamw", "lr": 1e-2, "betas": (0.9, 0.95),
                             "weight_decay": 0.1, "eps": 1e-8}])
    ref = torch.optim.AdamW([b], lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1, eps=1e-8)
    for _ in range(6):
        g = torch.randn(5, 3, generator=gen)
        a.grad, b.grad = g.clone(), g.clone()
        ours.step()
        ref.step()
    torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [Nora, RMNP, Muon])
@pytest.mark.parametrize("lr", [-0.1, math.nan, math.inf])
def test_bad_lr_raises(cls, lr) -> None:
    with pytest.raises(ValueError, match="lr must be a finite number >= 0"):
        cls([nn.Parameter(torch.ones(2, 2))], lr=lr)


@pytest.mark.parametrize("cls", [Nora, RMNP, Muon])
@pytest.mark.parametrize("momentum", [1.0, -0.1, 1.5])
def test_bad_momentum_raises(cls, momentum) -> None:
    with pytest.raises(ValueError, match=r"momentum must lie in \[0.0, 1.0\)"):
        cls([nn.Parameter(torch.ones(2, 2))], momentum=momentum)


@pytest.mark.parametrize("cls", [Nora, RMNP, Muon])
def test_vector_params_are_rejected_with_shape_and_routing_hint(cls) -> None:
    with pytest.raises(ValueError, match=r"shape \(5,\).*make_optimizer"):
        cls([nn.Parameter(torch.ones(3, 3)), nn.Parameter(torch.ones(5))])
    opt = cls([nn.Parameter(torch.ones(3, 3))])
    with pytest.raises(ValueError, match=r"shape \(\)"):
        opt.add_param_group({"params": [nn.Parameter(torch.ones(()))]})
    assert len(opt.param_groups) == 1


def test_bad_options_raise() -> None:
    p = [nn.Parameter(torch.ones(2, 2))]
    with pytest.raises(ValueError, match="shape_scale='big'"):
        Nora(p, shape_scale="big")
    with pytest.raises(ValueError, match="eps_mode='x'"):
        Nora(p, eps_mode="x")
    with pytest.raises(ValueError, match="weight_decay"):
        RMNP(p, weight_decay=-1.0)
    with pytest.raises(ValueError, match="kind='rmnp'"):
        Nora([{"params": p, "kind": "rmnp"}])
    with pytest.raises(ValueError, match="needs a 'kind'"):
        RoutedOptimizer([{"params": p}])


def test_old_state_dict_without_new_keys_is_back_filled() -> None:
    w = nn.Parameter(torch.randn(3, 4))
    opt = Nora([w], lr=0.1)
    w.grad = torch.randn(3, 4)
    opt.step()
    sd = opt.state_dict()
    for key in ("row_dim", "eps_mode", "shape_scale"):
        del sd["param_groups"][0][key]
    fresh = Nora([w], lr=0.1)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[0]["row_dim"] == 0 and fresh.param_groups[0]["eps_mode"] == "clamp"
    fresh.step()
