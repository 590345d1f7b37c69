"""Speed of the gated delta rule on CPU: our chunkwise op vs our reference loop vs fla's pure-PyTorch chunk.

Times forward and forward+backward (median of ``repeats`` after ``warmup``), fp32, ``threads`` threads, for
``delta_rule_chunk``, ``delta_rule_recurrent`` and flash-linear-attention's ``naive_chunk_gated_delta_rule``
(the peer; a missing or broken install is a noted skip). Also measures this machine's fp32 matmul rate and
reports the chunked forward's achieved GFLOP/s against it. Every timed implementation is first checked
against ``delta_rule_recurrent`` on the benchmark inputs (``max_abs_diff`` column): no speed without
correctness.

    python benchmarks/delta_rule.py [--smoke] [--out results.json]

The last stdout line is the JSON document ``{config, environment, rows}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from paperlab.bench import format_table, time_fn, write_results
from paperlab.ops import delta_rule_chunk, delta_rule_recurrent, kla_beta

Shape = tuple[int, int, int, int, int]  # B, T, H, K, V


@dataclass(frozen=True, kw_only=True)
class Config:
    """Benchmark settings; ``smoke()`` is a seconds-long CPU run for CI."""

    shapes: tuple[Shape, ...] = ((4, 1024, 8, 64, 64), (1, 4096, 4, 64, 64))
    chunk_size: int = 64
    threads: int = 2
    warmup: int = 3  # 1 warm-up + 5 repeats left a 3.7 ms IQR on a 25 ms forward (measured): a noisy median
    repeats: int = 10
    slow_repeats: int = 2  # the per-token loops (ours and nothing else) are slow; fewer timed calls
    matmul_size: int = 1024
    seed: int = 0

    @classmethod
    def smoke(cls) -> Config:
        return cls(shapes=((1, 100, 2, 16, 16),), chunk_size=32, warmup=1, repeats=2, slow_repeats=1,
                   matmul_size=256)


def chunk_forward_flops(B: int, T: int, H: int, K: int, V: int, C: int) -> int:
    """Matmul FLOPs of ``delta_rule_chunk``'s forward (2 per multiply-add), counted from its products.

    Per chunk and head: [Q; K] K^T (2C.C.K), the blocked unit-lower inverse (~C^3/3), W/U (C.C.(K+V)),
    P [W U] (C.C.(K+V)), Kd^T [W U] (K.C.(K+V)), the state step (K.K.V) and the inter-chunk output (C.K.V).
    """
    n = -(-T // C) * B * H
    macs = 2 * C * C * K + C**3 // 3 + 2 * C * C * (K + V) + K * C * (K + V) + K * K * V + C * K * V
    return 2 * n * macs


def matmul_gflops(n: int, *, repeats: int = 5) -> float:
    """This machine's fp32 ``n x n @ n x n`` rate (GFLOP/s, best of ``repeats``)."""
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=gen), torch.randn(n, n, generator=gen)
    t = time_fn(lambda: a @ b, warmup=2, repeats=repeats)
    return 2 * n**3 / t.min / 1e9


def load_peer() -> tuple[Callable[..., Any] | None, str]:
    """fla's ``naive_chunk_gated_delta_rule`` and how it was loaded, or None and why not.

    The package import pulls in fla's Triton kernels; where that fails (no GPU driver), the pure-PyTorch
    ``naive.py`` of the installed package is loaded on its own (it needs only torch and einops).
    """
    try:
        mod = importlib.import_module("fla.ops.gated_delta_rule.naive")
        return mod.naive_chunk_gated_delta_rule, "fla.ops.gated_delta_rule.naive"
    except ImportError as err:
        if getattr(err, "name", None) in ("fla", "fla.ops"):
            return None, f"skipped: flash-linear-attention is not installed ({err})"
        reason = f"{type(err).__name__}: {err}"
    except Exception as err:  # fla's import can raise RuntimeError/AttributeError without a GPU driver
        reason = f"{type(err).__name__}: {err}"
    spec = importlib.util.find_spec("fla")
    if spec is None or not spec.submodule_search_locations:
        return None, f"skipped: fla not importable ({reason})"
    path = Path(next(iter(spec.submodule_search_locations))) / "ops" / "gated_delta_rule" / "naive.py"
    try:
        file_spec = importlib.util.spec_from_file_location("_fla_naive_gdn", path)
        mod = importlib.util.module_from_spec(file_spec)
        file_spec.loader.exec_module(mod)
    except Exception as err:
        return None, f"skipped: package import failed ({reason}); loading {path} failed ({err})"
    return mod.naive_chunk_gated_delta_rule, f"{path} (package import failed: {reason[:120]})"


def make_inputs(shape: Shape, *, seed: int) -> list[torch.Tensor]:
    """KLA-style inputs: L2 q, raw k, beta = kla_beta(eta, k), decay g in [-0.1, 0]."""
    B, T, H, K, V = shape
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    q = q / q.norm(dim=-1, keepdim=True)
    k = torch.randn(B, T, H, K, generator=gen) / K**0.5
    v = torch.randn(B, T, H, V, generator=gen)
    g = -0.1 * torch.rand(B, T, H, generator=gen)
    beta = kla_beta(torch.rand(B, T, H, generator=gen), k)
    return [q, k, v, g, beta]


def _impls(config: Config, peer: Callable[..., Any] | None) -> dict[str, Callable[..., torch.Tensor]]:
    C = config.chunk_size
    impls: dict[str, Callable[..., torch.Tensor]] = {
        "paperlab.delta_rule_chunk": lambda q, k, v, g, b: delta_rule_chunk(q, k, v, g, b, chunk_size=C)[0],
        "paperlab.delta_rule_recurrent": lambda q, k, v, g, b: delta_rule_recurrent(q, k, v, g, b)[0],
    }
    if peer is not None:  # fla's chunk takes (q, k, v, g, beta) in that order
        impls["fla.naive_chunk_gated_delta_rule"] = lambda q, k, v, g, b: peer(q, k, v, g, b, chunk_size=C)[0]
    return impls


def _time_impl(fn: Callable[..., torch.Tensor], inputs: list[torch.Tensor], *, warmup: int,
               repeats: int) -> tuple[Any, Any]:
    leaves = [t.clone().requires_grad_() for t in inputs]
    cot = torch.randn(inputs[2].shape, generator=torch.Generator().manual_seed(1))  # output cotangent

    def fwd() -> None:
        with torch.no_grad():
            fn(*inputs)

    def fwd_bwd() -> None:
        for t in leaves:
            t.grad = None
        (fn(*leaves) * cot).sum().backward()

    return time_fn(fwd, warmup=warmup, repeats=repeats), time_fn(fwd_bwd, warmup=warmup, repeats=repeats)


def run(config: Config) -> list[dict[str, Any]]:
    """Time every implementation at every shape; one row per (shape, implementation) plus a matmul row."""
    torch.set_num_threads(config.threads)
    peer, peer_note = load_peer()
    mm = matmul_gflops(config.matmul_size)
    n = config.matmul_size
    rows: list[dict[str, Any]] = [{"shape": f"{n}x{n}x{n}", "impl": "torch.mm (fp32 matmul rate)",
                                   "fwd_gflops": mm}]
    for shape in config.shapes:
        inputs = make_inputs(shape, seed=config.seed)
        ref = delta_rule_recurrent(*inputs)[0]
        peer_fwd_bwd = None
        for name, fn in _impls(config, peer).items():
            slow = "recurrent" in name
            diff = (fn(*inputs) - ref).abs().max().item()
            fwd, fb = _time_impl(fn, inputs, warmup=0 if slow else config.warmup,
                                 repeats=config.slow_repeats if slow else config.repeats)
            row = {"shape": "B{}-T{}-H{}-K{}-V{}".format(*shape), "impl": name, "max_abs_diff": diff,
                   "fwd_s": fwd.median, "fwd_iqr_s": fwd.iqr, "fwd_bwd_s": fb.median, "fwd_bwd_iqr_s": fb.iqr}
            if name.endswith("delta_rule_chunk"):
                gf = chunk_forward_flops(*shape, min(config.chunk_size, shape[1])) / fwd.median / 1e9
                row.update(fwd_gflops=gf, fwd_frac_of_matmul=gf / mm)
                ours = fb.median
            if name.startswith("fla"):
                peer_fwd_bwd = fb.median
                row["note"] = peer_note
            rows.append(row)
        if peer_fwd_bwd is None:
            rows.append({"shape": "B{}-T{}-H{}-K{}-V{}".format(*shape), "impl": "fla.naive_chunk_gated_delta_rule",
                         "note": peer_note})
        else:
            rows[-1]["chunk_speedup_fwd_bwd"] = peer_fwd_bwd / ours
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny CI-sized run")
    parser.add_argument("--out", default=None, help="write the JSON document here")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    config = Config.smoke() if args.smoke else Config()
    if args.threads is not None:
        config = dataclasses.replace(config, threads=args.threads)
    start = time.perf_counter()
    rows = run(config)
    print(format_table(rows))
    print(f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    print(write_results(args.out, config, rows))


if __name__ == "__main__":
    main()
