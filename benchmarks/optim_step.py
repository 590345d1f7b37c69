"""Wall time per optimizer step (AdamW, Nora, RMNP, Muon-NS5) on single fp32 matrices, plus state memory.

Run: ``python benchmarks/optim_step.py [--smoke] [--out results.json]``. Contenders are timed interleaved in
one process at ``threads`` threads; the last stdout line is the JSON document ``{config, environment, rows}``.
Targets (issue 6): Nora <= 1.3x AdamW's step time, and >= 5x cheaper than Muon at 2048x2048.
Correctness of every contender is covered by ``tests/optim``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import torch

from paperlab.bench import format_table, write_results
from paperlab.experiments.nora.timing import time_steps
from paperlab.optim import OPTIMIZERS

__all__ = ["Config", "run", "main", "targets"]


@dataclass(frozen=True, kw_only=True)
class Config:
    shapes: tuple[tuple[int, int], ...] = ((768, 768), (2048, 2048), (4096, 1024), (1024, 4096))
    optimizers: tuple[str, ...] = tuple(OPTIMIZERS)  # every registered optimizer
    threads: int = 2
    warmup: int = 2
    repeats: int = 7
    ns_steps: int = 5
    seed: int = 0

    @classmethod
    def smoke(cls) -> Config:
        return cls(shapes=((64, 48), (48, 64)), warmup=1, repeats=2)


def run(config: Config) -> list[dict[str, Any]]:
    """One row per (shape, optimizer): median ms, IQR, ratio to AdamW, optimizer-state bytes."""
    torch.set_num_threads(config.threads)
    return time_steps(config.shapes, config.optimizers, warmup=config.warmup, repeats=config.repeats,
                      ns_steps=config.ns_steps, seed=config.seed)


def targets(rows: list[dict[str, Any]], *, shape: str = "2048x2048") -> dict[str, Any]:
    """The issue's two targets, evaluated on ``rows`` (Nora/AdamW at every shape; Muon/Nora at ``shape``)."""
    ms = {(r["shape"], r["optimizer"]): r["ms"] for r in rows}
    worst = max((r["x_adamw"] for r in rows if r["optimizer"] == "nora"), default=float("nan"))
    muon_x = ms.get((shape, "muon"), float("nan")) / ms.get((shape, "nora"), float("nan"))
    return {"nora_worst_x_adamw": worst, "nora_le_1.3x_adamw": bool(worst <= 1.3),
            f"muon_over_nora_{shape}": muon_x, "muon_ge_5x_nora": bool(muon_x >= 5)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes, for tests")
    parser.add_argument("--out", default=None, help="write the JSON document here")
    args = parser.parse_args(argv)
    config = Config.smoke() if args.smoke else Config()
    rows = run(config)
    print(format_table(rows))
    shape = "2048x2048" if not args.smoke else f"{config.shapes[0][0]}x{config.shapes[0][1]}"
    print(format_table([targets(rows, shape=shape)]))
    print(write_results(args.out, config, rows))


if __name__ == "__main__":
    main()
