"""Multi-process data-parallel training helpers (``torch.distributed`` + DDP).

Launch with torchrun, which sets ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``::

    torchrun --standalone --nproc_per_node=2 -m paperlab.cli lm train --mixer kla --out runs/lm   # one machine
    torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --rdzv_backend=c10d \\
        --rdzv_endpoint=HOST:29500 -m paperlab.cli lm train ...                                      # per node

The backend is gloo on CPU and nccl on GPU. Every rank draws the same global batch and trains on its slice;
DDP averages the gradients, so the run equals a single process with the same global batch.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

__all__ = ["DDP", "cleanup", "init_distributed", "is_main", "rank_world", "unwrap", "wrap_ddp"]


def rank_world() -> tuple[int, int]:
    """``(rank, world_size)`` of this process: from the process group if initialised, else ``(0, 1)``."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def is_main() -> bool:
    """True on rank 0 (and in a single process): the rank that prints, plots and writes summaries."""
    return rank_world()[0] == 0


def init_distributed(backend: str | None = None) -> tuple[int, int]:
    """Join the process group that torchrun describes in the environment; no-op for a single process.

    Args:
        backend: "gloo" or "nccl"; default nccl when CUDA is available, gloo otherwise.

    Returns:
        ``(rank, world_size)``.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1 or dist.is_initialized():
        return rank_world()
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend={backend!r} is not valid; choose one of ['gloo', 'nccl']")
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend)
    return rank_world()


def cleanup() -> None:
    """Leave the process group if this process joined one."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


class DDP(DistributedDataParallel):
    """DistributedDataParallel whose ``state_dict`` is the wrapped module's (no ``module.`` prefix).

    Checkpoints written by a multi-process run then load into a plain single-process model and back.
    """

    def state_dict(self, *args, **kwargs):
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self.module.load_state_dict(state_dict, strict=strict, assign=assign)


def wrap_ddp(model: nn.Module, *, find_unused_parameters: bool = False) -> nn.Module:
    """``DDP(model)`` when running with several processes, ``model`` itself otherwise.

    ``find_unused_parameters`` must be True when some parameters get no gradient in a step (e.g. the eta
    projection of a mixer mode that does not use it).
    """
    if rank_world()[1] <= 1:
        return model
    device_ids = [torch.cuda.current_device()] if next(model.parameters()).is_cuda else None
    return DDP(model, device_ids=device_ids, find_unused_parameters=find_unused_parameters)


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside a DDP wrapper (or ``model`` itself)."""
    return model.module if isinstance(model, DistributedDataParallel) else model
