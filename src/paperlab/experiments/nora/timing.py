"""Wall time and state memory of one optimizer step on a single matrix, contenders timed interleaved.

Used by ``benchmarks/optim_step.py`` and by the Nora cost experiment, so both report the same quantity.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from paperlab._validate import check_choice, check_int
from paperlab.bench import time_interleaved
from paperlab.optim import OPTIMIZERS

__all__ = ["make_single", "state_bytes", "time_steps"]


def make_single(name: str, params: list[nn.Parameter], *, ns_steps: int = 5) -> torch.optim.Optimizer:
    """The registered optimizer ``name`` standalone over ``params``: its default lr, weight decay 0.1.

    ``ns_steps`` goes to optimizers that have it (Muon); torch's own classes (AdamW) run their multi-tensor
    (``foreach``) path, their fastest on CPU.
    """
    entry = OPTIMIZERS[check_choice("name", name, OPTIMIZERS)]
    options: dict[str, Any] = {"lr": entry.defaults["lr"], "weight_decay": 0.1}
    if "ns_steps" in entry.defaults:
        options["ns_steps"] = ns_steps
    if "foreach" in inspect.signature(entry.cls).parameters:
        options["foreach"] = True
    return entry.cls(params, **options)


def state_bytes(opt: torch.optim.Optimizer) -> int:
    """Bytes held in tensors of ``opt.state`` (after at least one step)."""
    return sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values()
               if isinstance(v, torch.Tensor))


def time_steps(
    shapes: Sequence[tuple[int, int]],
    optimizers: Sequence[str] | None = None,
    *,
    warmup: int = 2,
    repeats: int = 5,
    ns_steps: int = 5,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Median seconds per ``step()`` of each optimizer (default: every registered one) on one ``[out, in]``
    fp32 matrix per shape.

    Contenders are interleaved round by round (``paperlab.bench.time_interleaved``: ``repeats`` rounds after
    ``warmup``, rotating order) so machine noise hits them alike. Returns one row per (shape, optimizer) with
    ``ms`` (median), ``iqr_ms``, ``min_ms``,
    ``x_adamw`` / ``x_adamw_min`` (ratio to AdamW's median / min when AdamW is timed; the min is the robust
    estimate on a busy machine), ``state_bytes`` and ``state_B_per_param``.
    """
    check_int("warmup", warmup, minimum=0)
    check_int("repeats", repeats, minimum=1)
    optimizers = tuple(OPTIMIZERS) if optimizers is None else tuple(optimizers)
    rows = []
    for rows_n, cols_n in shapes:
        gen = torch.Generator().manual_seed(seed)
        grad = torch.randn(rows_n, cols_n, generator=gen)
        setups = {}
        for name in optimizers:
            p = nn.Parameter(torch.randn(rows_n, cols_n, generator=gen) * cols_n**-0.5)
            p.grad = grad
            opt = make_single(name, [p], ns_steps=ns_steps)
            opt.step()  # allocate state
            setups[name] = opt
        timed = {name: wall for name, (wall, _) in
                 time_interleaved({n: o.step for n, o in setups.items()}, warmup=warmup, repeats=repeats).items()}
        base = timed.get("adamw")
        for name, opt in setups.items():
            t, mem = timed[name], state_bytes(opt)
            rows.append({"shape": f"{rows_n}x{cols_n}", "optimizer": name, "ms": t.median * 1e3,
                         "iqr_ms": t.iqr * 1e3, "min_ms": t.min * 1e3,
                         "x_adamw": t.median / base.median if base else float("nan"),
                         "x_adamw_min": t.min / base.min if base else float("nan"),
                         "state_bytes": mem, "state_B_per_param": mem / (rows_n * cols_n)})
    return rows
