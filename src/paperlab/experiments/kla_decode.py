"""KLA decode throughput (E4): stateful decode vs full recompute, with state / KV-cache memory.

Random weights, batch 1, fp32 on CPU (the paper used bf16 on a GPU). Two modes per mixer and context L:

- stateful: prefill L random tokens (in chunks, carrying the state), then time one decode step from that state
  (``paperlab.bench.time_fn``: warm-up plus repeats, median). KLA/GDN carry a fixed-size recurrent state and
  conv buffers; attention carries a KV cache that grows with L.
- recompute: each new token re-runs the whole forward over the last L tokens with no state, which is how the
  paper timed decode (1 warm-up + ``recompute_tokens`` timed tokens). Attention is recomputed only up to
  ``attention_recompute_max``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import torch

from paperlab.bench import environment, time_fn
from paperlab.experiments.base import Figure, Result, verdict_from_threshold
from paperlab.experiments.kla_common import build_lm, line_plot, state_nbytes
from paperlab.experiments.kla_configs import DecodeConfig
from paperlab.models import LM
from paperlab.report import save_figure

__all__ = ["measure_decode", "run_decode"]


@torch.no_grad()
def measure_decode(model: LM, *, context: int, stateful_tokens: int, recompute_tokens: int | None,
                   prefill_chunk: int, seed: int) -> dict[str, float]:
    """Time one mixer at one context length; see the module docstring.

    Returns:
        ``prefill_s``, ``state_bytes``, ``stateful_ms`` (median wall time per token), ``stateful_cpu_ms`` (mean
        process CPU time per call, warm-up included) and, unless ``recompute_tokens`` is None, ``recompute_s``
        and ``recompute_cpu_s`` (the same for a full forward over ``context`` tokens).
    """
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, model.config.vocab_size, (1, context), generator=gen)
    start = time.perf_counter()
    state = None
    for s in range(0, context, prefill_chunk):
        logits, state = model(prompt[:, s:s + prefill_chunk], state=state)
    out: dict[str, float] = {"prefill_s": time.perf_counter() - start, "state_bytes": float(state_nbytes(state))}
    token = logits[:, -1:].argmax(-1)
    cpu = time.process_time()
    step = time_fn(lambda: model(token, state=state), warmup=2, repeats=stateful_tokens, sync=False)
    out["stateful_cpu_ms"] = 1e3 * (time.process_time() - cpu) / (2 + stateful_tokens)
    out["stateful_ms"] = 1e3 * step.median
    if recompute_tokens is not None:
        cpu = time.process_time()
        full = time_fn(lambda: model(prompt), warmup=1, repeats=recompute_tokens, sync=False)
        out["recompute_cpu_s"] = (time.process_time() - cpu) / (1 + recompute_tokens)
        out["recompute_s"] = full.median
    return out


def run_decode(config: DecodeConfig, *, out_dir: Path) -> Result:
    """E4: per-token latency and memory per mixer and context; verdict on the recompute KLA/GDN ratio."""
    rows: list[dict[str, Any]] = []
    for mode in config.modes:
        model = build_lm(mode, vocab_size=config.vocab_size, d_model=config.d_model, n_layers=config.n_layers,
                         n_heads=config.n_heads, mlp_ratio=config.mlp_ratio, max_seq_len=max(config.contexts),
                         seed=config.seeds[0])
        for ctx in config.contexts:
            recompute = None if mode == "attention" and ctx > config.attention_recompute_max else \
                config.recompute_tokens
            m = measure_decode(model, context=ctx, stateful_tokens=config.stateful_tokens,
                               recompute_tokens=recompute, prefill_chunk=config.prefill_chunk, seed=config.seeds[0])
            nan = float("nan")
            rows.append({"mode": mode, "context": ctx, "stateful_ms_per_token": m["stateful_ms"],
                         "stateful_cpu_ms_per_token": m["stateful_cpu_ms"],
                         "stateful_tok_s": 1e3 / m["stateful_cpu_ms"], "state_MiB": m["state_bytes"] / 2**20,
                         "recompute_s_per_token": m.get("recompute_s", nan),
                         "recompute_cpu_s_per_token": m.get("recompute_cpu_s", nan),
                         "recompute_tok_s": 1.0 / m["recompute_cpu_s"] if "recompute_cpu_s" in m else nan,
                         "prefill_s": m["prefill_s"]})
    get = {(r["mode"], r["context"]): r for r in rows}
    ratios = _ratio_table(get, config)
    targets, notes = _targets(get, config)
    series = {f"{m} {kind}": (list(config.contexts), [[get[(m, c)][key]] for c in config.contexts])  # CPU-time based
              for m in config.modes for kind, key in (("stateful", "stateful_tok_s"), ("recompute", "recompute_tok_s"))}
    fig = line_plot(series, xlabel="context L (tokens)", ylabel="tokens / CPU-second (batch 1)",
                    title="Decode throughput (random weights, fp32 CPU)")
    fig.axes[0].set_yscale("log")
    figures = [Figure(file=save_figure(fig, out_dir, "decode"),
                      caption="decode tokens/s: stateful (carried state / KV cache) and full recompute")]
    verdicts = []
    top = max(config.contexts)
    if ("kla", top) in get and ("gdn", top) in get:
        ratio = get[("kla", top)]["recompute_tok_s"] / get[("gdn", top)]["recompute_tok_s"]
        verdicts.append(verdict_from_threshold(
            "kla-decode", [ratio], target=2.1, tolerance=0.21, unit="x",
            scale_note=f"KLA / GDN tokens per CPU-second with full recompute (the paper's protocol) at L={top}, "
                       f"fp32 CPU, random weights, d={config.d_model}; stateful ratio in the tables"))
    env = environment()
    notes.append(f"Measured on {env['cpu']} with {env['threads']} thread(s), torch {env['torch']}, batch 1, fp32. "
                 "Throughputs, ratios and targets use process CPU time per token (a shared, loaded host inflates "
                 "wall time several-fold and unevenly); wall medians are listed too.")
    return Result(experiment="decode", config=dataclasses.asdict(config), rows=rows,
                  tables={"Decode latency and memory": [_pretty(r) for r in rows],
                          "KLA / GDN throughput ratio": ratios, "Issue targets (stateful decode)": targets},
                  figures=figures, verdicts=verdicts, notes=notes)


def _pretty(r: dict[str, Any]) -> dict[str, Any]:
    return {"mode": r["mode"], "context": r["context"],
            "stateful CPU ms/token": f"{r['stateful_cpu_ms_per_token']:.3g}",
            "stateful wall ms/token": f"{r['stateful_ms_per_token']:.3g}",
            "stateful tok/s (CPU)": f"{r['stateful_tok_s']:.4g}", "state / KV cache (MiB)": f"{r['state_MiB']:.3g}",
            "recompute CPU s/token": f"{r['recompute_cpu_s_per_token']:.3g}",
            "recompute wall s/token": f"{r['recompute_s_per_token']:.3g}",
            "recompute tok/s (CPU)": f"{r['recompute_tok_s']:.3g}", "prefill wall s": f"{r['prefill_s']:.3g}"}


def _ratio_table(get: dict, config: DecodeConfig) -> list[dict[str, Any]]:
    if "kla" not in config.modes or "gdn" not in config.modes:
        return []
    return [{"context": c,
             "stateful KLA/GDN": f"{get[('kla', c)]['stateful_tok_s'] / get[('gdn', c)]['stateful_tok_s']:.3f}",
             "recompute KLA/GDN": f"{get[('kla', c)]['recompute_tok_s'] / get[('gdn', c)]['recompute_tok_s']:.3f}",
             "paper (recompute)": "2.1x at 32K" if c == 32_768 else ""} for c in config.contexts]


def _targets(get: dict, config: DecodeConfig) -> tuple[list[dict[str, Any]], list[str]]:
    """The issue's targets: KLA >= 10x faster than attention's KV cache, constant memory, KLA ~ GDN (25%)."""
    top = max(config.contexts)
    rows, notes = [], []
    if ("kla", top) in get and ("attention", top) in get:
        speed = get[("attention", top)]["stateful_cpu_ms_per_token"] / get[("kla", top)]["stateful_cpu_ms_per_token"]
        rows.append({"target": f"stateful KLA >= 10x faster per token than attention+KV cache at L={top}",
                     "measured": f"{speed:.2f}x", "met": "yes" if speed >= 10 else "no"})
    if "kla" in config.modes:
        sizes = {get[("kla", c)]["state_MiB"] for c in config.contexts}
        rows.append({"target": "KLA state memory constant in L",
                     "measured": ", ".join(f"{get[('kla', c)]['state_MiB']:.3g}" for c in config.contexts) + " MiB",
                     "met": "yes" if len(sizes) == 1 else "no"})
    if ("kla", top) in get and ("gdn", top) in get:
        r = get[("kla", top)]["stateful_cpu_ms_per_token"] / get[("gdn", top)]["stateful_cpu_ms_per_token"]
        rows.append({"target": f"stateful KLA and GDN within 25% per token at L={top}",
                     "measured": f"KLA/GDN CPU time {r:.3f}", "met": "yes" if 0.8 <= r <= 1.25 else "no"})
    for r in rows:
        notes.append(f"Target '{r['target']}': {r['measured']} -> {'met' if r['met'] == 'yes' else 'not met'}.")
    return rows, notes
