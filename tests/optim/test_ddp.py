"""Nora under 2-process DDP (gloo on CPU) equals one process with the same global batch."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from paperlab.optim import make_optimizer
from tests.optim.two_ranks import close_rank, init_rank, spawn_two

_STEPS, _BATCH = 4, 16


def _model() -> nn.Module:
    torch.manual_seed(0)  # test-only: identical init in every process
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 12), nn.Tanh(), nn.Linear(12, 3))


def _data(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(step)
    return torch.randn(_BATCH, 6, generator=g), torch.randn(_BATCH, 3, generator=g)


def _train(model: nn.Module, shard: slice) -> None:
    opt = make_optimizer(model, "nora", lr=0.05, weight_decay=0.1, adamw_lr=1e-2)
    for step in range(_STEPS):
        x, y = _data(step)
        opt.zero_grad()
        nn.functional.mse_loss(model(x[shard]), y[shard]).backward()
        opt.step()


def _worker(rank: int, port: int, out: str) -> None:
    init_rank(rank, port)
    try:
        model = _model()
        ddp = nn.parallel.DistributedDataParallel(model)
        half = _BATCH // 2
        _train(ddp, slice(rank * half, (rank + 1) * half))
        if rank == 0:
            torch.save([p.detach() for p in model.parameters()], out)
    finally:
        close_rank()


def test_nora_ddp_two_processes_equals_one_process(tmp_path: Path) -> None:
    out = tmp_path / "ddp.pt"
    spawn_two(_worker, str(out), what="DDP")
    ddp_params = torch.load(out)
    single = _model()
    _train(single, slice(0, _BATCH))
    start = _model()
    for a, b, s in zip(ddp_params, single.parameters(), start.parameters(), strict=True):
        torch.testing.assert_close(a, b.detach(), rtol=1e-5, atol=1e-6)
        assert not torch.equal(a, s.detach())  # training moved every parameter
