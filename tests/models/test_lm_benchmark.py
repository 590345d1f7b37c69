"""The LM throughput benchmark runs its smoke config and reports consistent rows."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "lm_throughput.py"



def _load():
    spec = importlib.util.spec_from_file_location("lm_throughput_bench", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_smoke_rows_json_and_plot(tmp_path: Path, capsys) -> None:
    bench = _load()
    out, png = tmp_path / "r.json", tmp_path / "p.png"
    bench.main(["--smoke", "--out", str(out), "--plot", str(png)])
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc == json.loads(out.read_text())
    rows = doc["rows"]
    assert [(r["seq_len"], r["mixer"]) for r in rows] == [(32, "kla"), (32, "attention"), (64, "kla"),
                                                          (64, "attention")]
    for r in rows:
        assert r["batch"] * r["seq_len"] == 128  # equal tokens per step at every length
        assert abs(r["tokens_per_s"] - 128 / (r["ms"] / 1e3)) < 1e-6 * r["tokens_per_s"]
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_memory_probe_reports_a_non_negative_growth() -> None:
    bench = _load()
    cfg = dataclasses.asdict(bench.Config.smoke())
    assert bench._child(cfg, "kla", 32) >= 0.0
