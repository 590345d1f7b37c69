"""Benchmark helpers: a warm-up/repeat timer, an environment record, and a JSON + table writer.

Benchmarks (in ``benchmarks/``) time peers side by side in one process and print the JSON document as the
last line of stdout.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from paperlab._validate import check_int
from paperlab.io import atomic_write_json

__all__ = ["Timing", "environment", "format_table", "time_fn", "time_interleaved", "write_results"]


@dataclass(frozen=True)
class Timing:
    """Seconds per call: median, interquartile range and min over ``repeats`` timed calls; ``samples`` holds
    every timed call in order (for :func:`time_interleaved`, one per round, so peers pair round by round)."""

    median: float
    iqr: float
    min: float
    repeats: int
    samples: tuple[float, ...] = ()

    def as_dict(self, prefix: str = "") -> dict[str, float]:
        return {f"{prefix}{k}": v for k, v in asdict(self).items()}


def time_fn(fn: Callable[[], Any], *, warmup: int = 2, repeats: int = 5, sync: bool = True) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then ``repeats`` times timed; CUDA is synchronized if in use."""
    check_int("warmup", warmup, minimum=0)
    check_int("repeats", repeats, minimum=1)
    cuda = sync and torch.cuda.is_available()
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return _timing(times)


def _timing(times: list[float]) -> Timing:
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return Timing(median=statistics.median(times), iqr=q[2] - q[0], min=min(times), repeats=len(times),
                  samples=tuple(times))


def time_interleaved(fns: Mapping[str, Callable[[], Any]], *, warmup: int = 2, repeats: int = 5, rewarm: int = 0,
                     sync: bool = True) -> dict[str, tuple[Timing, Timing]]:
    """Time several peers side by side: each round calls every ``fns`` entry once, so drift of a shared machine
    hits all of them alike; the order rotates from round to round, so no peer always runs right after the same
    neighbour (one that sweeps a large cache would otherwise always hand the next one cold caches).
    ``rewarm`` untimed calls precede each timed call (steady-state latency, as in a decode loop).

    Returns ``name -> (wall Timing, process-CPU Timing)`` per call."""
    check_int("warmup", warmup, minimum=0)
    check_int("repeats", repeats, minimum=1)
    check_int("rewarm", rewarm, minimum=0)
    if not fns:
        raise ValueError("time_interleaved needs at least one function")
    cuda = sync and torch.cuda.is_available()
    names = list(fns)
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    wall: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            for _ in range(rewarm):
                fns[name]()
            if cuda:
                torch.cuda.synchronize()
            w, c = time.perf_counter(), time.process_time()
            fns[name]()
            if cuda:
                torch.cuda.synchronize()
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
    return {name: (_timing(wall[name]), _timing(cpu[name])) for name in fns}


def environment() -> dict[str, Any]:
    """Where a benchmark ran: versions, threads, CPU model and GPU (if any)."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """An aligned plain-text table of ``rows`` (columns in first-seen order)."""
    if not rows:
        return "(no rows)"
    cols: list[str] = []
    for row in rows:
        cols.extend(k for k in row if k not in cols)

    def cell(v: Any) -> str:
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    grid = [[cell(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(g[i]) for g in grid)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(g, widths, strict=True)) for g in grid]
    return "\n".join(lines)


def write_results(path: str | os.PathLike | None, config: Any, rows: Sequence[dict[str, Any]]) -> str:
    """Build the ``{config, environment, rows}`` document, write it to ``path`` if given; return the JSON."""
    cfg = asdict(config) if hasattr(config, "__dataclass_fields__") else dict(config)
    doc = {"config": cfg, "environment": environment(), "rows": list(rows)}
    if path is not None:
        atomic_write_json(Path(path), doc)
    return json.dumps(doc, default=str)
