"""The optimizer registry: one entry per optimizer, read by make_optimizer, RoutedOptimizer and the benchmarks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

from paperlab.experiments.nora.timing import time_steps
from paperlab.optim import (
    OPTIMIZERS,
    RMNP,
    KindOptimizer,
    Muon,
    Nora,
    OptimizerEntry,
    RoutedOptimizer,
    make_optimizer,
    split_params,
)


class _TinyLM(nn.Module):
    def __init__(self, vocab: int = 11, d: int = 8) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, 2 * d)
        self.out = nn.Linear(2 * d, d, bias=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)


def _model() -> _TinyLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return _TinyLM()


def _set_grads(model: nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=gen)


def test_registered_names_routing_and_row_wise_flags() -> None:
    assert tuple(OPTIMIZERS) == ("adamw", "nora", "rmnp", "muon")
    assert {n: e.cls for n, e in OPTIMIZERS.items()} == {"adamw": torch.optim.AdamW, "nora": Nora, "rmnp": RMNP,
                                                         "muon": Muon}
    assert [n for n, e in OPTIMIZERS.items() if e.routes == "matrices"] == ["nora", "rmnp", "muon"]
    assert [n for n, e in OPTIMIZERS.items() if e.row_wise] == ["nora", "rmnp"]
    assert OPTIMIZERS["nora"].presets["official"] == {"nesterov": True, "shape_scale": "muon"}
    with pytest.raises(TypeError):
        OPTIMIZERS["nora"].defaults["lr"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize("name", ["nora", "rmnp", "muon"])
def test_class_defaults_are_the_entry_defaults_and_fill_routed_groups(name: str) -> None:
    entry = OPTIMIZERS[name]
    standalone = entry.cls([nn.Parameter(torch.ones(3, 4))])
    assert {k: v for k, v in standalone.defaults.items() if k != "kind"} == dict(entry.defaults)
    routed = RoutedOptimizer([{"params": [nn.Parameter(torch.ones(3, 4))], "kind": name}])
    strip = lambda g: {k: v for k, v in g.items() if k != "params"}  # noqa: E731
    assert strip(routed.param_groups[0]) == strip(standalone.param_groups[0])


def test_unknown_option_keys_raise_and_list_the_valid_ones() -> None:
    model = _model()
    with pytest.raises(ValueError, match=r"\['nesterv'\] are not options of 'nora'; valid: .*'nesterov'"):
        make_optimizer(model, "nora", lr=0.01, options={"nesterv": True})
    with pytest.raises(ValueError, match=r"\['eps_mode'\] are not options of 'muon'.*'ns_steps'"):
        make_optimizer(model, "muon", lr=0.01, options={"eps_mode": "add"})
    for key in ("lr", "weight_decay", "row_dim"):  # set by make_optimizer's own arguments and routing
        with pytest.raises(ValueError, match=f"'{key}'"):
            make_optimizer(model, "rmnp", lr=0.01, options={key: 1})
    with pytest.raises(ValueError, match="preset='paperr' is not valid"):
        make_optimizer(model, "nora", lr=0.01, options={"preset": "paperr"})
    opt = make_optimizer(model, "rmnp", lr=0.01, options={"preset": "official", "eps": 1e-9})
    group = opt.param_groups[0]
    assert (group["nesterov"], group["eps_mode"], group["eps"]) == (True, "clamp", 1e-9)  # explicit keys win


def test_entry_rejects_bad_routes_and_incomplete_defaults() -> None:
    with pytest.raises(ValueError, match="routes='rows' is not valid"):
        OptimizerEntry(cls=Nora, defaults={"lr": 1.0, "weight_decay": 0.0}, update=_sgd_update, routes="rows")
    with pytest.raises(ValueError, match=r"must include \['weight_decay'\]"):
        OptimizerEntry(cls=Nora, defaults={"lr": 1.0}, update=_sgd_update)
    with pytest.raises(ValueError, match=r"preset='paper' is not valid; choose one of \[\]"):
        Muon.from_preset([nn.Parameter(torch.ones(2, 2))], "paper")


# ---- adding an optimizer: its update function, its class and one registry entry ------------------------------


def _sgd_update(p: torch.Tensor, grad: torch.Tensor, state: dict, group: dict) -> None:
    """Plain SGD with decoupled decay: ``p <- p (1 - lr wd) - lr g`` (no state)."""
    lr, wd = float(group["lr"]), group["weight_decay"]
    if wd != 0.0:
        p.mul_(1.0 - lr * wd)
    p.add_(grad, alpha=-lr)


class _ToySGD(KindOptimizer):
    _kind = "toy"
    update_param = staticmethod(_sgd_update)

    def __init__(self, params, lr: float = 0.1, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"kind": "toy", "lr": lr, "weight_decay": weight_decay})


_TOY_ENTRIES = {
    "kind_optimizer": lambda: OptimizerEntry.of(_ToySGD),  # our own class: everything read from it
    "torch_class": lambda: OptimizerEntry(cls=torch.optim.SGD, defaults={"lr": 0.1, "weight_decay": 0.0},
                                          update=_sgd_update),  # someone else's class: stated in the entry
}


@pytest.fixture(params=sorted(_TOY_ENTRIES))
def toy(request: pytest.FixtureRequest) -> Iterator[OptimizerEntry]:
    with pytest.MonkeyPatch.context() as mp:
        entry = _TOY_ENTRIES[request.param]()
        mp.setitem(OPTIMIZERS, "toy", entry)
        yield entry
    assert "toy" not in OPTIMIZERS


def test_a_registered_toy_optimizer_takes_the_hidden_matrices_and_adamw_the_rest(toy: OptimizerEntry) -> None:
    model, reference = _model(), _model()
    opt = make_optimizer(model, "toy", lr=0.1, weight_decay=0.5, adamw_lr=1e-2)
    ref = make_optimizer(reference, "nora", lr=0.1, weight_decay=0.5, adamw_lr=1e-2)  # same AdamW group
    assert isinstance(opt, RoutedOptimizer) and [g["kind"] for g in opt.param_groups] == ["toy", "adamw"]
    split = split_params(model)
    assert [id(p) for p in opt.param_groups[0]["params"]] == [id(p) for p in split.matrix]
    assert split.matrix_names == ["proj.weight", "out.weight"]
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    grads = []
    for step in range(2):
        _set_grads(model, step)
        _set_grads(reference, step)
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
        opt.step()
        ref.step()
    reference_params = dict(reference.named_parameters())
    for name, p in model.named_parameters():
        if name in split.matrix_names:  # two SGD steps, bit for bit
            expected = before[name]
            for g in grads:
                expected = expected.mul(1.0 - 0.1 * 0.5).add(g[name], alpha=-0.1)
            assert torch.equal(p.detach(), expected)
        else:  # AdamW, exactly as in the nora optimizer's AdamW group
            assert torch.equal(p.detach(), reference_params[name].detach())


def test_a_registered_toy_optimizer_is_seen_by_the_routed_class_and_the_step_timer(toy: OptimizerEntry) -> None:
    routed = RoutedOptimizer([{"params": [nn.Parameter(torch.ones(3, 4))], "kind": "toy"}])
    assert routed.param_groups[0]["lr"] == 0.1  # the entry's default
    with pytest.raises(ValueError, match=r"only updates matrices"):
        RoutedOptimizer([{"params": [nn.Parameter(torch.ones(4))], "kind": "toy"}])
    rows = time_steps(((6, 4),), warmup=0, repeats=1)
    assert [r["optimizer"] for r in rows] == ["adamw", "nora", "rmnp", "muon", "toy"]
    assert rows[-1]["state_bytes"] == 0
    with pytest.raises(ValueError, match=r"\['nesterov'\] are not options of 'toy'; valid: \[\]"):
        make_optimizer(_model(), "toy", lr=0.1, options={"nesterov": True})
    layer = nn.Linear(4, 3)
    with pytest.raises(ValueError, match="no row_dim option"):
        make_optimizer(nn.Sequential(layer), "toy", lr=0.1, transposed=(layer,))


def test_unregistered_names_are_rejected_listing_the_registered_ones() -> None:
    with pytest.raises(ValueError, match=r"name='toy' is not valid; choose one of \['adamw', 'muon', 'nora', 'rmnp'\]"):
        make_optimizer(_model(), "toy", lr=0.1)
    with pytest.raises(ValueError, match="kind='toy' is not valid"):
        RoutedOptimizer([{"params": [nn.Parameter(torch.ones(3, 4))], "kind": "toy"}])
