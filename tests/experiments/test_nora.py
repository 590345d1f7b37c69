"""The Nora experiments run shrunk, return the documented schema, and keep Nora's invariants."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from paperlab.experiments import get_paper
from paperlab.experiments.nora import PAPER, CostConfig, DigitsConfig, LMRunConfig, run_cost, run_digits, run_lm


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
    stab = {r["optimizer"]: r for r in res.tables["stability: every optimizer (second hidden layer)"]}
    assert set(stab) == {"adamw", "muon", "rmnp", "nora"}
    # Nora's row norms follow the data-free recursion (round-off only); RMNP's do not.
    assert stab["nora"]["radial residual (mean, units lr^2)"] < 0.5
    assert stab["rmnp"]["radial residual (mean, units lr^2)"] > 5.0
    assert "radial residual (mean, units lr^2)" not in stab["adamw"]  # undefined for non-row-wise updates
    # Nora's norms are smooth; AdamW's and Muon's take data-dependent radial steps.
    assert stab["nora"]["radial jitter"] < min(stab["adamw"]["radial jitter"], stab["muon"]["radial jitter"])
    verdict = res.verdicts[0]
    assert verdict.claim == "nora-stability" and verdict.n_run == 1 and verdict.verdict == "too few seeds"
    check = res.tables["consistency checks"][0]
    assert check["holds"] == "yes" and "verdict" not in check
    assert all((tmp_path / f.file).exists() for f in res.figures)


def test_sweep_extends_the_grid_until_the_best_lr_is_interior() -> None:
    from paperlab.experiments.nora.runs import sweep

    calls = []

    def make_run(name, lr, seed, wd):  # a loss with its minimum at lr 0.1: the grid 1e-3..1e-2 must grow upward
        calls.append((lr, seed))
        return {"final": {"val_loss": abs(math.log10(lr) + 1.0)}, "cpu_s": 0.0}

    cfg = dataclasses.replace(DigitsConfig.quick(), seeds=(0, 1, 2), lr_grid=(("adamw", (1e-3, 3e-3, 1e-2)),))
    rows, best = sweep(make_run, cfg)
    choice = best["adamw"]["choice"]
    assert choice.interior and choice.extensions >= 1 and choice.lr > 1e-2
    assert [s for _, s in calls].count(0) == len(choice.tried) and len(best["adamw"]["runs"]) == 3
    assert {r["lr"] for r in rows if r["seed"] == 2} == {choice.lr}
    assert best["adamw"]["wd"] == cfg.weight_decay and len(best["adamw"]["wd_tried"]) == 1  # no wd stage


def test_weight_decay_is_tuned_per_optimizer_at_its_tuned_lr() -> None:
    from paperlab.experiments.nora.runs import summary, sweep

    calls = []

    def make_run(name, lr, seed, wd):  # lr optimum 3e-3 for both; wd optimum 0 for nora, 0.1 for adamw
        calls.append((name, lr, seed, wd))
        best_wd = 0.0 if name == "nora" else 0.1
        return {"final": {"val_loss": abs(math.log10(lr / 3e-3)) + abs(wd - best_wd)}, "cpu_s": 0.0}

    cfg = dataclasses.replace(DigitsConfig.quick(), seeds=(0, 1, 2), wd_grid=(0.0, 0.01, 0.1),
                              lr_grid=(("adamw", (1e-3, 3e-3, 1e-2)), ("nora", (1e-3, 3e-3, 1e-2))))
    rows, best = sweep(make_run, cfg)
    assert (best["nora"]["wd"], best["adamw"]["wd"]) == (0.0, 0.1)
    assert {(c[2], c[3]) for c in calls if c[0] == "nora" and c[2] > 0} == {(1, 0.0), (2, 0.0)}  # seeds at wd*
    wd_stage = [c for c in calls if c[0] == "nora" and c[2] == 0 and c[3] != cfg.weight_decay]
    assert {c[3] for c in wd_stage} == {0.0, 0.01} and {c[1] for c in wd_stage} == {3e-3}  # at the tuned lr
    row = next(r for r in summary(best, ("val_loss",)) if r["optimizer"] == "nora")
    assert row["weight decay"] == 0.0 and row["wd tried (val loss)"].startswith("0: 0.0000")


def test_lm_shrunk_runs_on_bundled_corpus(tmp_path: Path) -> None:
    pytest.importorskip("paperlab.models")
    cfg = dataclasses.replace(LMRunConfig.quick(), seeds=(0,), corpus="pydoc", d_model=32, seq_len=16,
                              batch_size=4, steps=6, eval_tokens=256, lr_grid=_grid(0.01, 0.02, 3e-3))
    res = run_lm(cfg, out_dir=tmp_path)
    assert len(res.rows) == 4 and all(r["val_loss"] > 0 for r in res.rows)
    assert [v.claim for v in res.verdicts] == ["nora-convergence", "nora-vs-muon"]
    summary = res.tables["byte LM: final validation loss (tuned lr per optimizer)"][0]
    assert "(grid edge)" in summary["best lr"]  # a one-value grid is not a tuned lr


def test_cost_shrunk_rows(tmp_path: Path) -> None:
    res = run_cost(dataclasses.replace(CostConfig.quick(), seeds=(0, 1, 2), shapes=((32, 24),), repeats=1,
                                       warmup=0), out_dir=tmp_path)
    assert [r["optimizer"] for r in res.rows[:4]] == ["adamw", "nora", "rmnp", "muon"]
    assert [r["trial"] for r in res.rows] == [0] * 4 + [1] * 4 + [2] * 4
    assert {v.claim for v in res.verdicts} == {"nora-cost", "nora-overhead"}
    assert all(v.n_run == 3 for v in res.verdicts)  # one ratio per independent timing trial
    assert res.rows[0]["state_B_per_param"] == pytest.approx(8.0, abs=0.01) and res.rows[1]["state_B_per_param"] == 4.0


def test_finished_runs_are_cached_so_a_resumed_run_trains_nothing(tmp_path: Path, monkeypatch) -> None:
    from paperlab.experiments.nora import runs

    cfg = dataclasses.replace(DigitsConfig.quick(), steps=10, hidden=16, lr_grid=_grid(0.01, 0.02, 3e-3))
    out = tmp_path / "nora" / "digits" / "h1"  # the runner's <out>/<paper>/<experiment>/<hash> layout
    first = run_digits(cfg, out_dir=out)
    assert len(list((tmp_path / "nora" / "nora_runs").glob("digits-*.json"))) == 4

    def no_training(*args, **kwargs):
        raise AssertionError("a cached run was trained again")

    monkeypatch.setattr(runs, "fit", no_training)
    again = run_digits(cfg, out_dir=tmp_path / "nora" / "digits" / "h2")
    assert again.rows == first.rows


def test_digits_recipe_learns_with_nora_and_adamw(tmp_path: Path) -> None:
    """The recipe learns, not just runs: both reach the competence gate (val acc >= 0.9, chance 0.1)."""
    from paperlab.experiments.nora import DIGITS_GATE

    cfg = dataclasses.replace(DigitsConfig.quick(), steps=300, lr_grid=(("adamw", (1e-3,)), ("nora", (0.005,))))
    res = run_digits(cfg, out_dir=tmp_path)
    assert {r["optimizer"] for r in res.rows} == {"adamw", "nora"}
    assert all(r["val_acc"] >= DIGITS_GATE for r in res.rows), [(r["optimizer"], r["val_acc"]) for r in res.rows]
