"""Nora, RMNP and Muon under FSDP2 (``fully_shard``, 2 gloo ranks on CPU) equal one process, and Nora's step needs
no collective: its row-wise math runs on the row shards each rank holds, while Muon's Newton-Schulz iteration
must gather each matrix (DTensor redistributes it inside ``opt.step()``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from paperlab.optim import OPTIMIZERS
from tests.optim.two_ranks import close_rank, init_rank, spawn_two

fsdp = pytest.importorskip("torch.distributed.fsdp")
_STEPS, _BATCH = 3, 16


def _model() -> nn.Module:
    torch.manual_seed(0)  # test-only: identical init in every process
    return nn.Sequential(nn.Linear(6, 12, bias=False), nn.Tanh(), nn.Linear(12, 12, bias=False), nn.Tanh(),
                         nn.Linear(12, 4, bias=False))


def _data(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(step)
    return torch.randn(_BATCH, 6, generator=g), torch.randn(_BATCH, 4, generator=g)


def _train(model: nn.Module, name: str, shard: slice, counts: list[int] | None = None) -> None:
    from torch.distributed.tensor.debug import CommDebugMode

    opt = OPTIMIZERS[name].cls(list(model.parameters()), lr=0.05, weight_decay=0.1)
    for step in range(_STEPS):
        x, y = _data(step)
        opt.zero_grad()
        nn.functional.mse_loss(model(x[shard]), y[shard]).backward()
        mode = CommDebugMode()
        with mode:
            opt.step()
        if counts is not None:
            counts.append(mode.get_total_counts())


def _worker(rank: int, port: int, name: str, out: str) -> None:
    init_rank(rank, port)
    try:
        model = _model()
        for layer in model:
            if isinstance(layer, nn.Linear):
                fsdp.fully_shard(layer)  # parameters become DTensors sharded along dim 0 (rows)
        fsdp.fully_shard(model)
        counts: list[int] = []
        half = _BATCH // 2
        _train(model, name, slice(rank * half, (rank + 1) * half), counts)
        full = [p.full_tensor().detach() for p in model.parameters()]  # a collective, outside the step
        if rank == 0:
            torch.save({"params": full, "counts": counts}, out)
    finally:
        close_rank()


@pytest.mark.parametrize("name", ["nora", "rmnp", "muon"])
def test_fsdp2_two_ranks_equal_one_process(tmp_path: Path, name: str) -> None:
    out = tmp_path / f"{name}.pt"
    spawn_two(_worker, name, str(out), what="FSDP2", deadline_s=90.0)
    got = torch.load(out)
    single = _model()
    _train(single, name, slice(0, _BATCH))
    for a, b in zip(got["params"], single.parameters(), strict=True):
        torch.testing.assert_close(a, b.detach(), rtol=1e-5, atol=1e-6)
    if name in ("nora", "rmnp"):
        assert got["counts"] == [0] * _STEPS  # row-wise: each rank updates its own rows, no communication
    else:
        assert min(got["counts"]) > 0  # Newton-Schulz needs whole matrices: DTensor gathers them in the step
