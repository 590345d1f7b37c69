"""KLA decode throughput (E4): stateful decode vs full recompute, with state / KV-cache memory.

Random weights, batch 1, fp32 on CPU (the paper used bf16 on a GPU). Two modes per mixer and context L:

- stateful: prefill L random tokens (in chunks, carrying the state), then time one decode step from that state.
  KLA/GDN carry a fixed-size recurrent state and conv buffers; attention carries a KV cache that grows with L.
- recompute: each new token re-runs the whole forward over the last L tokens with no state, which is how the
  paper timed decode. Attention is recomputed only up to ``attention_recompute_max``.

At each L the mixers are timed side by side (``paperlab.bench.time_interleaved``: every round calls each mixer
once, in rotating order, medians over rounds), so drift of the shared machine hits all of them alike and the
ratios stay fair. A decode step is timed right after an untimed one (``rewarm=1``): steady-state latency as in a
generation loop, not the cold-cache cost left by the previous mixer (attention's KV cache is 128 MiB at 32K).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import torch

from paperlab.bench import environment, time_interleaved
from paperlab.experiments.base import Figure, Result
from paperlab.experiments.kla.common import build_lm, line_plot, state_nbytes
from paperlab.experiments.kla.configs import DecodeConfig
from paperlab.experiments.verdicts import verdict_from_threshold
from paperlab.models import LM
from paperlab.tables import save_figure

__all__ = ["measure_decode", "run_decode"]


@torch.no_grad()
def measure_decode(models: dict[str, LM], *, context: int, stateful_tokens: int, recompute_tokens: int,
                   prefill_chunk: int, seed: int, recompute: tuple[str, ...] | None = None) -> dict[str, dict]:
    """Time several mixers at one context length, interleaved; see the module docstring.

    Args:
        models: mixer name -> ``LM`` (all with the same vocabulary).
        recompute: the names also timed with full recompute (default: all).
    Returns:
        name -> ``prefill_s``, ``state_bytes``, ``stateful_ms`` / ``stateful_cpu_ms`` (median wall / process-CPU
        time per decode step) and, for ``recompute`` names, ``recompute_s`` / ``recompute_cpu_s`` (the same for
        a full forward over ``context`` tokens) and ``recompute_cpu_rounds`` (each interleaved round's CPU time).
    """
    vocab = {m.config.vocab_size for m in models.values()}
    if len(vocab) != 1:
        raise ValueError(f"models must share one vocabulary size, got {sorted(vocab)}")
    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, vocab.pop(), (1, context), generator=gen)
    out: dict[str, dict] = {}
    steps = {}
    for name, model in models.items():
        model.eval()
        # As in generate: the KV cache gets room for the prompt and the timed step up front, so a step writes in
        # place (each timed call restarts from the same prefilled state and overwrites the same slot).
        start, state = time.perf_counter(), model.initial_state(1, max_len=context + 1)
        for s in range(0, context, prefill_chunk):
            logits, state = model(prompt[:, s:s + prefill_chunk], state=state)
        out[name] = {"prefill_s": time.perf_counter() - start, "state_bytes": float(state_nbytes(state))}
        token = logits[:, -1:].argmax(-1)
        steps[name] = (lambda m=model, t=token, st=state: m(t, state=st))
    for name, (wall, cpu) in time_interleaved(steps, warmup=2, repeats=stateful_tokens, rewarm=1, sync=False).items():
        out[name].update(stateful_ms=1e3 * wall.median, stateful_cpu_ms=1e3 * cpu.median)
    names = tuple(models) if recompute is None else recompute
    full = {name: (lambda m=models[name]: m(prompt)) for name in names}
    for name, (wall, cpu) in (time_interleaved(full, warmup=1, repeats=recompute_tokens, sync=False).items()
                              if full else ()):
        out[name].update(recompute_s=wall.median, recompute_cpu_s=cpu.median, recompute_cpu_rounds=list(cpu.samples))
    return out


def run_decode(config: DecodeConfig, *, out_dir: Path) -> Result:
    """E4: per-token latency and memory per mixer and context; verdict on the recompute KLA/GDN ratio."""
    rows: list[dict[str, Any]] = []
    models = {mode: build_lm(mode, vocab_size=config.vocab_size, d_model=config.d_model, n_layers=config.n_layers,
                             n_heads=config.n_heads, mlp_ratio=config.mlp_ratio, max_seq_len=max(config.contexts),
                             seed=config.seeds[0]) for mode in config.modes}
    nan = float("nan")
    for ctx in config.contexts:
        recompute = tuple(m for m in config.modes if not (m == "attention" and ctx > config.attention_recompute_max))
        measured = measure_decode(models, context=ctx, stateful_tokens=config.stateful_tokens,
                                  recompute_tokens=config.recompute_tokens, prefill_chunk=config.prefill_chunk,
                                  seed=config.seeds[0], recompute=recompute)
        for mode, m in measured.items():
            rows.append({"mode": mode, "context": ctx, "stateful_ms_per_token": m["stateful_ms"],
                         "stateful_cpu_ms_per_token": m["stateful_cpu_ms"],
                         "stateful_tok_s": _per_second(m["stateful_cpu_ms"] / 1e3),
                         "state_MiB": m["state_bytes"] / 2**20,
                         "recompute_s_per_token": m.get("recompute_s", nan),
                         "recompute_cpu_s_per_token": m.get("recompute_cpu_s", nan),
                         "recompute_tok_s": _per_second(m.get("recompute_cpu_s", nan)),
                         "prefill_s": m["prefill_s"],
                         "recompute_over_prefill": m.get("recompute_s", nan) / m["prefill_s"],
                         "recompute_cpu_rounds": m.get("recompute_cpu_rounds", [])})
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
        # one ratio per interleaved timing round (KLA and GDN timed side by side): the replication is the rounds
        rounds = [g / k for k, g in zip(get[("kla", top)]["recompute_cpu_rounds"],
                                        get[("gdn", top)]["recompute_cpu_rounds"], strict=True)]
        verdicts.append(verdict_from_threshold(
            "kla-decode", rounds, target=2.1, tolerance=0.21, unit="x",
            scale_note=f"KLA / GDN tokens per CPU-second with full recompute (the paper's protocol) at L={top}, "
                       f"one ratio per interleaved timing round (n = rounds), fp32 CPU, random weights, "
                       f"d={config.d_model}; stateful ratio in the tables"))
    env = environment()
    notes.append(f"Measured on {env['cpu']} with {env['threads']} thread(s), torch {env['torch']}, batch 1, fp32. "
                 "Throughputs, ratios and targets use the median process CPU time per token, the mixers timed "
                 "side by side at each L (a shared host inflates wall time unevenly); wall medians are listed too.")
    return Result(experiment="decode", config=dataclasses.asdict(config), rows=rows,
                  tables={"Decode latency and memory": [_pretty(r) for r in rows],
                          "KLA / GDN throughput ratio": ratios, "Issue targets (stateful decode)": targets},
                  figures=figures, verdicts=verdicts, notes=notes)


def _per_second(seconds: float) -> float:
    """Calls per second; nan when the clock could not resolve the call (0) or it was not timed (nan)."""
    return 1.0 / seconds if seconds > 0 else float("nan")


def _pretty(r: dict[str, Any]) -> dict[str, Any]:
    return {"mode": r["mode"], "context": r["context"],
            "stateful CPU ms/token": f"{r['stateful_cpu_ms_per_token']:.3g}",
            "stateful wall ms/token": f"{r['stateful_ms_per_token']:.3g}",
            "stateful tok/s (CPU)": f"{r['stateful_tok_s']:.4g}", "state / KV cache (MiB)": f"{r['state_MiB']:.3g}",
            "recompute CPU s/token": f"{r['recompute_cpu_s_per_token']:.3g}",
            "recompute wall s/token": f"{r['recompute_s_per_token']:.3g}",
            "recompute tok/s (CPU)": f"{r['recompute_tok_s']:.3g}", "prefill wall s": f"{r['prefill_s']:.3g}",
            "recompute per token / prefill (wall)": f"{r['recompute_over_prefill']:.3g}"}


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
