"""The Nora experiments run shrunk, return the documented schema, and keep Nora's invariants."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from paperlab.experiments import get_paper
from paperlab.experiments.nora import PAPER, CostConfig, DigitsConfig, LMRunConfig, run_cost, run_digits, run_lm
from paperlab.experiments.protocol import CONSISTENCY_ONLY


def test_paper_registered_and_every_claim_has_an_experiment() -> None:
    assert get_paper("nora") is PAPER and get_paper("2605.03769") is PAPER
    names = {e.name for e in PAPER.experiments}
    assert names == {"digits", "lm", "cost"}
    assert all(c.experiment in names for c in PAPER.claims)
    for exp in PAPER.experiments:
        assert exp.quick().seeds and len(exp.full().seeds) == 3 or exp.name == "cost"


def _grid(lr_row: float, lr_muon: float, lr_adamw: float):
    return (("adamw", (lr_adamw,)), ("muon", (lr_muon,)), ("rmnp", (lr_row,)), ("nora", (lr_row,)))


def test_digits_shrunk_schema_and_stability(tmp_path: Path) -> None:
    cfg = dataclasses.replace(DigitsConfig.quick(), steps=40, hidden=32, lr_grid=_grid(0.01, 0.02, 3e-3))
    res = run_digits(cfg, out_dir=tmp_path)
    assert {r["optimizer"] for r in res.rows} == {"adamw", "muon", "rmnp", "nora"}
    assert all({"lr", "seed", "val_loss", "val_acc", "cpu_s"} <= set(r) for r in res.rows)
    stab = {r["optimizer"]: r for r in res.tables["stability: Nora vs RMNP (second hidden layer)"]}
    # Nora's row norms follow the data-free recursion (round-off only); RMNP's do not.
    assert stab["nora"]["radial residual (mean, units lr^2)"] < 0.5
    assert stab["rmnp"]["radial residual (mean, units lr^2)"] > 5.0
    assert res.verdicts[0].claim == "nora-stability" and res.verdicts[0].verdict == CONSISTENCY_ONLY
    check = res.tables["consistency checks"][0]
    assert check["holds"] == "yes" and "verdict" not in check
    assert all((tmp_path / f.file).exists() for f in res.figures)


def test_lm_shrunk_runs_on_bundled_corpus(tmp_path: Path) -> None:
    pytest.importorskip("paperlab.models")
    cfg = dataclasses.replace(LMRunConfig.quick(), seeds=(0,), corpus="pydoc", d_model=32, seq_len=16,
                              batch_size=4, steps=6, eval_tokens=256, lr_grid=_grid(0.01, 0.02, 3e-3))
    res = run_lm(cfg, out_dir=tmp_path)
    assert len(res.rows) == 4 and all(r["val_loss"] > 0 for r in res.rows)
    assert res.verdicts[0].claim == "nora-convergence"
    assert "best lr" in res.tables["byte LM: final validation loss (best lr per optimizer)"][0]


def test_cost_shrunk_rows(tmp_path: Path) -> None:
    res = run_cost(dataclasses.replace(CostConfig.quick(), shapes=((32, 24),), repeats=1, warmup=0),
                   out_dir=tmp_path)
    assert [r["optimizer"] for r in res.rows] == ["adamw", "nora", "rmnp", "muon"]
    assert {v.claim for v in res.verdicts} == {"nora-cost", "nora-overhead"}
    assert res.rows[0]["state_B_per_param"] == pytest.approx(8.0, abs=0.01) and res.rows[1]["state_B_per_param"] == 4.0
