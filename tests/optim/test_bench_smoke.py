"""The optimizer-step benchmark runs its smoke config and reports consistent rows."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "optim_step.py"


def _load():
    spec = importlib.util.spec_from_file_location("optim_step_bench", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_smoke_rows_and_json_last_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load()
    out = tmp_path / "r.json"
    bench.main(["--smoke", "--out", str(out)])
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc == json.loads(out.read_text())
    rows = [r for r in doc["rows"] if "path" not in r and "dtype" not in r]
    assert {(r["shape"], r["optimizer"]) for r in rows} == {
        (s, o) for s in ("64x48", "48x64") for o in ("adamw", "nora", "rmnp", "muon")}
    layers = [r for r in doc["rows"] if "dtype" in r]
    names = {"adamw", "nora", "rmnp", "muon"} | ({"torch.optim.Muon"} if hasattr(torch.optim, "Muon") else set())
    assert {(r["dtype"], r["optimizer"]) for r in layers} == {(d, o) for d in ("float32", "bfloat16") for o in names}
    assert all(r["ms"] > 0 and r["shape"] == "2x(8x12)" for r in layers)
    many = [r for r in doc["rows"] if "path" in r]  # the optimizers with a multi-tensor path
    assert {(r["shape"], r["optimizer"], r["path"]) for r in many} == {
        ("4x(8x6)", o, p) for o in ("nora", "rmnp") for p in ("per-param", "foreach")}
    assert all(r["ms"] > 0 for r in many) and {r["x_per_param"] for r in many if r["path"] == "per-param"} == {1.0}
    by = {(r["shape"], r["optimizer"]): r for r in rows}
    # state memory: AdamW two fp32 buffers, the matrix optimizers one
    assert by[("64x48", "adamw")]["state_B_per_param"] == pytest.approx(8.0, abs=0.01)
    for name in ("nora", "rmnp", "muon"):
        assert by[("64x48", name)]["state_B_per_param"] == 4.0
    assert by[("64x48", "adamw")]["x_adamw"] == 1.0 and all(r["ms"] > 0 for r in rows)
