"""LM training throughput and peak memory against sequence length: KLA, GDN and attention at equal width/depth.

Run: ``python benchmarks/lm_throughput.py [--smoke] [--out results.json] [--plot lm_throughput.png]``.

Each step is one forward + backward (no optimizer) of the whole LM on ``tokens_per_step`` tokens
(``batch = tokens_per_step / seq_len``), so a mixer whose cost is linear in the length keeps a flat tokens/s
while quadratic attention falls. Timing: all contenders in this process, side by side at each length
(``paperlab.bench.time_interleaved``: ``warmup`` untimed rounds, then ``repeats`` timed rounds in rotating order,
median wall time per step). Memory: one fresh subprocess per (mixer, length) reports the growth of its peak resident
set size (VmHWM of ``/proc/self/status``; ``getrusage`` elsewhere) over one forward + backward, measured after the model
and batch are built: it counts activations and gradients, not the interpreter, weights or the import peak, with
a resolution of a few MB (small configs read 0). The last stdout line is the JSON ``{config, environment, rows}``.
Correctness of every mixer (chunked vs recurrent, decode vs full) is covered by ``tests/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from paperlab.bench import format_table, time_interleaved, write_results
from paperlab.models import LM, LMConfig

__all__ = ["Config", "main", "measure_memory", "plot", "run"]


@dataclass(frozen=True, kw_only=True)
class Config:
    mixers: tuple[str, ...] = ("kla", "gdn", "attention")
    seq_lens: tuple[int, ...] = (256, 512, 1024, 2048, 4096, 8192)
    tokens_per_step: int = 8192
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 2
    vocab_size: int = 256
    threads: int = 2
    warmup: int = 1
    repeats: int = 5
    memory: bool = True
    seed: int = 0

    @classmethod
    def smoke(cls) -> Config:
        return cls(mixers=("kla", "attention"), seq_lens=(32, 64), tokens_per_step=128, d_model=32, n_layers=1,
                   threads=1, repeats=1, memory=False)


def _model(config: Config, mixer: str) -> LM:
    torch.manual_seed(config.seed)  # benchmark script: one global seed for identical weights across runs
    return LM(LMConfig(vocab_size=config.vocab_size, d_model=config.d_model, n_layers=config.n_layers,
                       n_heads=config.n_heads, mixer=mixer, max_seq_len=max(config.seq_lens)))


def _step_fn(model: LM, batch: int, seq_len: int, vocab: int):
    ids = torch.randint(0, vocab, (batch, seq_len), generator=torch.Generator().manual_seed(0))

    def step() -> None:
        logits, _ = model(ids)
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten()).backward()
        model.zero_grad(set_to_none=True)

    return step


def measure_memory(config: Config, mixer: str, seq_len: int) -> float:
    """Peak-RSS growth in MB over one fwd+bwd, in a fresh subprocess (see the module docstring)."""
    code = ("import json, sys, runpy; m = runpy.run_path(sys.argv[1]); "
            "print(json.dumps(m['_child'](json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]))))")
    cfg = json.dumps(asdict(config))
    proc = subprocess.run([sys.executable, "-c", code, __file__, cfg, mixer, str(seq_len)],
                          capture_output=True, text=True, timeout=1800, check=True)
    return float(json.loads(proc.stdout.strip().splitlines()[-1]))


def _peak_rss_kib() -> int:
    """High-water resident set of this process image (VmHWM, KiB).

    ``ru_maxrss`` would be wrong here: Linux carries it across fork + exec, so a child starts with the parent's
    peak; VmHWM belongs to the new address space.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):  # not Linux: fall back to getrusage
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child(cfg: dict[str, Any], mixer: str, seq_len: int) -> float:
    config = Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items()})
    torch.set_num_threads(config.threads)
    model = _model(config, mixer)
    step = _step_fn(model, max(1, config.tokens_per_step // seq_len), seq_len, config.vocab_size)
    before = _peak_rss_kib()
    step()
    return (_peak_rss_kib() - before) / 1024


def run(config: Config) -> list[dict[str, Any]]:
    """One row per (seq_len, mixer): batch, median ms per step, tokens/s, peak-memory growth (MB)."""
    torch.set_num_threads(config.threads)
    models = {m: _model(config, m) for m in config.mixers}
    rows = []
    for seq_len in config.seq_lens:
        batch = max(1, config.tokens_per_step // seq_len)
        steps = {m: _step_fn(models[m], batch, seq_len, config.vocab_size) for m in config.mixers}
        timings = time_interleaved(steps, warmup=config.warmup, repeats=config.repeats)
        for mixer in config.mixers:
            wall, _ = timings[mixer]
            row = {"seq_len": seq_len, "mixer": mixer, "batch": batch, "ms": 1e3 * wall.median,
                   "iqr_ms": 1e3 * wall.iqr, "tokens_per_s": batch * seq_len / wall.median}
            if config.memory:
                row["peak_mb"] = measure_memory(config, mixer, seq_len)
            rows.append(row)
    return rows


def plot(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """tokens/s and peak-memory growth against sequence length, one line per mixer (log-log)."""
    from matplotlib.figure import Figure

    keys = ["tokens_per_s"] + (["peak_mb"] if "peak_mb" in rows[0] else [])
    fig = Figure(figsize=(5 * len(keys), 3.8), dpi=110)
    for i, key in enumerate(keys):
        ax = fig.add_subplot(1, len(keys), i + 1)
        for mixer in dict.fromkeys(r["mixer"] for r in rows):
            pts = [(r["seq_len"], r[key]) for r in rows if r["mixer"] == mixer]
            ax.plot(*zip(*pts, strict=True), "o-", label=mixer)
        ax.set_xscale("log", base=2)
        ax.set_yscale("linear" if key == "peak_mb" else "log")
        ax.set_xlabel("sequence length")
        ax.set_ylabel({"tokens_per_s": "training tokens / s", "peak_mb": "peak RSS growth (MB)"}[key])
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny config, for tests")
    parser.add_argument("--out", default=None, help="write the JSON document here")
    parser.add_argument("--plot", default=None, help="write the PNG here")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the config's 2)")
    parser.add_argument("--repeats", type=int, default=None, help="timed steps per cell")
    args = parser.parse_args(argv)
    config = Config.smoke() if args.smoke else Config()
    overrides = {k: v for k, v in (("threads", args.threads), ("repeats", args.repeats)) if v is not None}
    config = dataclasses.replace(config, **overrides)
    rows = run(config)
    print(format_table(rows))
    if args.plot:
        print(f"plot: {plot(rows, args.plot)}")
    print(write_results(args.out, config, rows))


if __name__ == "__main__":
    main()
