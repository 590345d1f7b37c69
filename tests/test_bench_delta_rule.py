"""Smoke test of benchmarks/delta_rule.py: its smoke() config runs, checks correctness and reports rates."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "delta_rule.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_delta_rule", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_smoke_benchmark_rows_and_json(tmp_path, capsys):
    bench = _load()
    out = tmp_path / "r.json"
    bench.main(["--smoke", "--out", str(out)])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    doc = json.loads(last)
    assert doc == json.loads(out.read_text())
    rows = {r["impl"]: r for r in doc["rows"]}
    assert rows["torch.mm (fp32 matmul rate)"]["fwd_gflops"] > 0
    chunk = rows["paperlab.delta_rule_chunk"]
    assert chunk["max_abs_diff"] < 1e-4 and chunk["fwd_s"] > 0 and chunk["fwd_bwd_s"] > 0
    assert chunk["fwd_gflops"] > 0 and chunk["fwd_frac_of_matmul"] > 0
    assert rows["paperlab.delta_rule_recurrent"]["max_abs_diff"] == 0
    peer = rows["fla.naive_chunk_gated_delta_rule"]  # timed, or a noted skip: never a crash
    assert "fwd_s" in peer or peer["note"].startswith("skipped")


def test_flop_count_matches_hand_count():
    bench = _load()
    # One chunk, one head, C = K = V = 4: 2*16*4 + 64//3 + 2*16*8 + 4*4*8 + 4*4*4 + 4*4*4 = 661 MACs.
    assert bench.chunk_forward_flops(1, 4, 1, 4, 4, 4) == 2 * 661
    assert bench.chunk_forward_flops(2, 5, 3, 4, 4, 4) == 2 * 661 * 2 * 2 * 3  # T = 5 -> two chunks
