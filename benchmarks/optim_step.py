"""Wall time per optimizer step (AdamW, Nora, RMNP, Muon-NS5) on single fp32 matrices, plus state memory; the
per-parameter vs multi-tensor (``foreach=True``) step on many small matrices; and one step over a 24-layer set
of 768x3072 matrices in fp32 and bf16, with ``torch.optim.Muon`` beside paperlab's Muon.

Run: ``python benchmarks/optim_step.py [--smoke] [--torch-muon] [--out results.json]``. Contenders are timed
interleaved in one process at ``threads`` threads; the last stdout line is the JSON document
``{config, environment, rows}``
(single-matrix rows, then rows with a ``path`` column for the many-matrix comparison).
Targets (issue 6): Nora <= 1.3x AdamW's step time, and >= 5x cheaper than Muon at 2048x2048.
Correctness of every contender is covered by ``tests/optim`` (foreach equals per-parameter to 1e-6:
``tests/optim/test_conventions.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from paperlab.bench import format_table, time_interleaved, write_results
from paperlab.experiments.nora.timing import time_steps
from paperlab.optim import OPTIMIZERS

__all__ = ["Config", "run", "run_many", "main", "targets"]


@dataclass(frozen=True, kw_only=True)
class Config:
    shapes: tuple[tuple[int, int], ...] = ((768, 768), (2048, 2048), (4096, 1024), (1024, 4096))
    optimizers: tuple[str, ...] = tuple(OPTIMIZERS)  # every registered optimizer
    threads: int = 2
    warmup: int = 2
    repeats: int = 7
    ns_steps: int = 5
    seed: int = 0
    many: int = 64  # matrices in the many-matrix comparison, each of shape many_shape
    many_shape: tuple[int, int] = (64, 64)
    # a GPT-2-small-like stack: 24 matrices of 768x3072 stepped together, fp32 and bf16 parameters
    layers: int = 24
    layer_shape: tuple[int, int] = (768, 3072)
    layer_dtypes: tuple[str, ...] = ("float32", "bfloat16")
    layer_repeats: int = 3
    # torch.optim.Muon runs Newton-Schulz in bf16: on a CPU without bf16 matmuls one 768x3072 step took 33 s
    # here (paperlab's fp32 Muon 0.66 s), so the 24-layer set would take over an hour; opt in with --torch-muon
    torch_muon: bool = False

    @classmethod
    def smoke(cls) -> Config:
        return cls(shapes=((64, 48), (48, 64)), warmup=1, repeats=2, many=4, many_shape=(8, 6), layers=2,
                   layer_shape=(8, 12), layer_repeats=1)


def run(config: Config) -> list[dict[str, Any]]:
    """One row per (shape, optimizer): median ms, IQR, ratio to AdamW, optimizer-state bytes."""
    torch.set_num_threads(config.threads)
    return time_steps(config.shapes, config.optimizers, warmup=config.warmup, repeats=config.repeats,
                      ns_steps=config.ns_steps, seed=config.seed)


def run_many(config: Config) -> list[dict[str, Any]]:
    """Per-parameter vs ``foreach=True`` steps of ``config.many`` same-shape matrices, for every registered
    optimizer with a multi-tensor path: median ms, IQR, min and ``x_per_param`` (ratio of medians)."""
    torch.set_num_threads(config.threads)
    (r, c), count = config.many_shape, config.many
    rows = []
    for name, entry in OPTIMIZERS.items():
        if "foreach" not in entry.defaults:
            continue
        gen = torch.Generator().manual_seed(config.seed)
        grads = [torch.randn(r, c, generator=gen) for _ in range(count)]
        setups = {}
        for path, foreach in (("per-param", False), ("foreach", True)):
            params = [nn.Parameter(torch.randn(r, c, generator=gen) * c**-0.5) for _ in range(count)]
            for p, g in zip(params, grads, strict=True):
                p.grad = g
            opt = entry.cls(params, lr=entry.defaults["lr"], weight_decay=0.1, foreach=foreach)
            opt.step()  # allocate state
            setups[path] = opt
        timed = time_interleaved({k: o.step for k, o in setups.items()}, warmup=config.warmup,
                                 repeats=config.repeats)
        base = timed["per-param"][0].median
        for path, (wall, _) in timed.items():
            rows.append({"shape": f"{count}x({r}x{c})", "optimizer": name, "path": path, "ms": wall.median * 1e3,
                         "iqr_ms": wall.iqr * 1e3, "min_ms": wall.min * 1e3, "x_per_param": wall.median / base})
    return rows


def _layer_optimizers(params: list[nn.Parameter], *, torch_muon: bool) -> dict[str, torch.optim.Optimizer]:
    """Every registered optimizer (its default lr, wd 0.1, multi-tensor path where it has one) and, with
    ``torch_muon``, torch's own ``torch.optim.Muon`` when this torch has it."""
    out: dict[str, torch.optim.Optimizer] = {}
    for name, entry in OPTIMIZERS.items():
        options: dict[str, Any] = {"lr": entry.defaults["lr"], "weight_decay": 0.1}
        if "foreach" in entry.defaults or name == "adamw":
            options["foreach"] = True
        out[name] = entry.cls([nn.Parameter(p.detach().clone()) for p in params], **options)
    if torch_muon and hasattr(torch.optim, "Muon"):
        out["torch.optim.Muon"] = torch.optim.Muon([nn.Parameter(p.detach().clone()) for p in params], lr=0.02,
                                                   weight_decay=0.1)
    return out


def run_layers(config: Config) -> list[dict[str, Any]]:
    """One step over ``config.layers`` matrices of ``config.layer_shape`` per optimizer and parameter dtype,
    interleaved: median ms, IQR, min and ``x_adamw``."""
    torch.set_num_threads(config.threads)
    (r, c), rows = config.layer_shape, []
    for dtype_name in config.layer_dtypes:
        dtype = getattr(torch, dtype_name)
        gen = torch.Generator().manual_seed(config.seed)
        params = [nn.Parameter((torch.randn(r, c, generator=gen) * c**-0.5).to(dtype)) for _ in range(config.layers)]
        grads = [torch.randn(r, c, generator=gen).to(dtype) for _ in range(config.layers)]
        opts = _layer_optimizers(params, torch_muon=config.torch_muon)
        for opt in opts.values():
            for group in opt.param_groups:
                for p, g in zip(group["params"], grads, strict=True):
                    p.grad = g
            opt.step()  # allocate state
        timed = time_interleaved({n: o.step for n, o in opts.items()}, warmup=1, repeats=config.layer_repeats)
        base = timed["adamw"][0].median
        for name, (wall, _) in timed.items():
            rows.append({"shape": f"{config.layers}x({r}x{c})", "dtype": dtype_name, "optimizer": name,
                         "ms": wall.median * 1e3, "iqr_ms": wall.iqr * 1e3, "min_ms": wall.min * 1e3,
                         "x_adamw": wall.median / base})
    return rows


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
    parser.add_argument("--torch-muon", action="store_true",
                        help="also time torch.optim.Muon on the layer set (bf16 Newton-Schulz: slow on most CPUs)")
    args = parser.parse_args(argv)
    config = Config.smoke() if args.smoke else Config()
    config = dataclasses.replace(config, torch_muon=args.torch_muon or args.smoke)
    rows, many, layers = run(config), run_many(config), run_layers(config)
    print(format_table(rows))
    shape = "2048x2048" if not args.smoke else f"{config.shapes[0][0]}x{config.shapes[0][1]}"
    print(format_table([targets(rows, shape=shape)]))
    print(format_table(many))
    print(format_table(layers))
    print(write_results(args.out, config, rows + many + layers))


if __name__ == "__main__":
    main()
