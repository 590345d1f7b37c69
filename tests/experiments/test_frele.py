"""FreLE experiments and CLI: shrunk configs run on generated data; schema and invariants."""

from __future__ import annotations

import dataclasses
import json

import pytest

from paperlab.experiments import get_paper
from paperlab.experiments.frele import PAPER, BenchConfig, SinesConfig, SweepConfig
from paperlab.experiments.protocol import TOO_FEW_SEEDS


@pytest.fixture(autouse=True)
def _no_data(monkeypatch, tmp_path):
    """No data files anywhere: the experiments must fall back to generated series and say so."""
    monkeypatch.delenv("PAPERLAB_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_registered_with_claims_wired_to_experiments():
    paper = get_paper("frele")
    assert paper is PAPER and paper.id == "2510.25800"
    names = {e.name for e in paper.experiments}
    assert names == {"benchmark", "sweeps", "sines"}
    assert all(c.experiment in names for c in paper.claims)
    for exp in paper.experiments:
        assert exp.quick().seeds and exp.full().seeds


def test_benchmark_shrunk_on_generated_data(tmp_path, monkeypatch):
    from paperlab.experiments.frele import benchmark

    tried = []

    def counted(train_eval, grid):
        choice = tune_lr(train_eval, grid)
        tried.append(len(choice.tried))
        return choice

    tune_lr = benchmark.tune_lr
    monkeypatch.setattr(benchmark, "tune_lr", counted)
    cfg = dataclasses.replace(BenchConfig.quick(), grid=(("dlinear", ("ETTh1",), (24,)),), epochs=1,
                              max_train_windows=256, max_val_windows=128)
    res = PAPER.experiment("benchmark").run(cfg, out_dir=tmp_path)
    # one seed, one horizon: every evaluation cell is a tuning run already made, tracked or not
    assert len(list((tmp_path / "bench_runs").glob("*.json"))) == sum(tried)
    assert len(res.rows) == 6 and {r["loss"] for r in res.rows} == {"mse", "mae", "freq", "fredf", "efr", "frele"}
    assert "frele-beats-mae" in {v.claim for v in res.verdicts}
    assert all(r["data"] == "generated" for r in res.rows)
    assert any("GENERATED" in n for n in res.notes)
    assert all((tmp_path / f.file).is_file() for f in res.figures) and len(res.figures) == 3
    table = next(v for k, v in res.tables.items() if "MSE ± std" in k)
    assert [r["H"] for r in table] == [24]  # no Avg row for a single horizon
    wtl = next(v for k, v in res.tables.items() if "win/tie/loss" in k)
    assert all(r["undecided"] == 1 and r["win"] + r["tie"] + r["loss"] == 0 for r in wtl)  # one seed decides nothing
    lrs = res.tables["tuned learning rate per loss (validation MSE, first seed, first horizon)"]
    assert len(lrs) == 1 and set(lrs[0]) >= set(cfg.losses)
    for r in res.rows:  # each loss trains at its own tuned lr
        assert r["lr"] == pytest.approx(float(lrs[0][r["loss"]].split()[0]), rel=1e-2)
    cached = sorted((tmp_path / "bench_runs").glob("*.json"))
    assert len(cached) >= 3 * len(cfg.losses)  # every tuning run and cell, resumable
    again = PAPER.experiment("benchmark").run(cfg, out_dir=tmp_path)  # a rerun trains nothing: same rows
    assert [r["test_mse"] for r in again.rows] == [r["test_mse"] for r in res.rows]
    assert sorted((tmp_path / "bench_runs").glob("*.json")) == cached
    bands = res.tables["test band RMSE (Table 1 style), with and without FreLE"]
    ours = [b for b in bands if b["source"] == "ours"]
    assert {b["model"] for b in ours} == {"dlinear+mse", "dlinear+frele"}
    assert all(b["GF"] <= max(b["LF"], b["MF"], b["HF"]) + 1e-12 for b in ours)  # GF is a mean of the bands
    assert {v.claim for v in res.verdicts} >= {"frele-beats-mse", "frele-beats-efr", "hf-error-gt-lf"}


def test_sweeps_reuse_the_default_run(tmp_path):
    cfg = dataclasses.replace(SweepConfig.quick(), horizons=(24,), deltas=(0.0, 0.3), keep_ratios=(0.8, 1.0),
                              epochs=1, max_train_windows=256, max_val_windows=128)
    res = PAPER.experiment("sweeps").run(cfg, out_dir=tmp_path)
    delta03 = [r for r in res.rows if r["sweep"] == "delta" and r["value"] == 0.3]
    keep1 = [r for r in res.rows if r["sweep"] == "keep_ratio" and r["value"] == 1.0]
    assert keep1[0]["test_mse"] == delta03[0]["test_mse"]
    # weighting points at delta 1: the default reuses nothing here (delta 1 is not in the delta sweep), so
    # each of the 4 weightings trains once: 3 delta/keep runs + 1 shared row + 4 weighting runs
    assert len(res.rows) == 8 and {r["sweep"] for r in res.rows} >= {"weighting dc1", "weighting dc0"}
    assert {v.claim for v in res.verdicts} == {"frele-delta-mix", "frele-keep-ratio"}
    table = res.tables["FreLE peak weighting (dlinear, test MSE mean ± std over runs)"]
    assert [r["weighting"] for r in table] == ["dc1", "index", "dc0", "constant"]
    cached = sorted((tmp_path / "sweep_runs").glob("*.json"))
    assert len(cached) == 7  # one entry per distinct run: an interrupted --full run resumes
    again = PAPER.experiment("sweeps").run(cfg, out_dir=tmp_path)
    assert [r["test_mse"] for r in again.rows] == [r["test_mse"] for r in res.rows]
    assert sorted((tmp_path / "sweep_runs").glob("*.json")) == cached


def test_sweep_verdicts_take_one_value_per_seed():
    from paperlab.experiments.frele.sweeps import _paired

    rows = [{"sweep": "delta", "value": v, "seed": s, "dataset": d, "H": 96, "test_mse": m}
            for s in (1, 2) for d, base in (("a", 1.0), ("b", 2.0))
            for v, m in ((0.0, base), (0.3, base * (0.9 if s == 1 else 0.8)))]
    gains = _paired(rows, ("delta", 0.0), ("delta", 0.3), (1, 2, 3), lambda d0, d3: 100 * (d0 - d3) / d0)
    assert gains == pytest.approx([10.0, 20.0])  # seed 3 ran nothing: no value, not a zero


def test_sines_low_before_high(tmp_path):
    cfg = dataclasses.replace(SinesConfig.quick(), amplitude_sets=((1.0, 1.0, 1.0),), models=(("mlp", "tanh"),))
    res = PAPER.experiment("sines").run(cfg, out_dir=tmp_path)
    assert res.rows[0]["low_before_high"] == 1
    assert res.rows[0]["epochs_k1"] < res.rows[0]["epochs_k2"] < res.rows[0]["epochs_k3"]
    assert res.verdicts[0].claim == "frele-spectral-bias" and res.verdicts[0].verdict == TOO_FEW_SEEDS  # one run


def test_cli_train_and_bias(tmp_path, capsys):
    from paperlab.cli import main

    out = tmp_path / "run"
    assert main(["forecast", "train", "--data", "ETTh1", "--horizon", "24", "--epochs", "1", "--out", str(out),
                 "--allow-generated", "--no-progress"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["generated_data"] is True and metrics["epochs_run"] == 1
    assert set(metrics["test_bands"]) == {"LF", "MF", "HF", "GF"}
    assert main(["forecast", "bias", str(out)]) == 0
    assert (out / "bias.md").is_file() and "relative" in (out / "bias.md").read_text()
    with pytest.raises(SystemExit):
        main(["forecast", "train", "--data", "ETTh1", "--out", str(tmp_path / "x")])  # no data, no fallback
    capsys.readouterr()


def test_sines_divergence_is_recorded_not_fatal(tmp_path, monkeypatch):
    import paperlab.experiments.frele.sines as sines

    def boom(*args, **kwargs):
        raise FloatingPointError("loss became inf")

    monkeypatch.setattr(sines, "fit_sines", boom)
    cfg = dataclasses.replace(SinesConfig.quick(), amplitude_sets=((1.0, 1.0, 1.0),), models=(("mlp", "relu"),),
                              epochs=5)
    res = PAPER.experiment("sines").run(cfg, out_dir=tmp_path)
    assert res.rows == [{"amplitudes": "(1.0, 1.0, 1.0)", "model": "mlp", "activation": "relu", "seed": 0,
                         "diverged": 1}]
    assert res.verdicts[0].verdict == "inconclusive at this scale" and not res.figures
    assert any("diverged" in n for n in res.notes)


def test_win_tie_loss_decides_each_cell_by_a_paired_test_over_seeds():
    from paperlab.experiments.frele.bench import win_tie_loss

    def rows(ds, frele, mse):
        return [{"backbone": "dlinear", "dataset": ds, "H": 96, "loss": loss, "seed": s, "test_mse": v}
                for loss, vals in (("frele", frele), ("mse", mse)) for s, v in enumerate(vals)]

    data = (rows("a", [0.30, 0.31, 0.29], [0.35, 0.36, 0.34])  # FreLE better on every seed: a win
            + rows("b", [0.30, 0.36, 0.29], [0.33, 0.31, 0.32])  # mixed: a tie
            + rows("c", [0.40, 0.41, 0.42], [0.30, 0.31, 0.30])  # worse on every seed: a loss
            + rows("d", [0.30], [0.35]))  # one seed: undecided
    (row,) = win_tie_loss(data, "dlinear", ("mse", "frele"))
    assert (row["win"], row["tie"], row["loss"], row["undecided"]) == (1, 1, 1, 1)


def test_claims_take_one_value_per_seed_not_per_cell():
    from paperlab.experiments.frele.benchmark import seed_effects

    rows = [{"backbone": "dlinear", "dataset": ds, "H": 96, "loss": loss, "seed": s, "test_mse": v}
            for ds in ("a", "b") for s in (0, 1) for loss, v in (("mse", 0.4), ("frele", 0.3 if s == 0 else 0.4))]
    assert seed_effects(rows, "mse", seeds=(0, 1, 2)) == pytest.approx([25.0, 0.0])


def test_band_ratio_claims_take_one_value_per_seed():
    from paperlab.experiments.frele.benchmark import seed_means

    rows = [{"seed": s, "test_HF": hf, "test_LF": 1.0} for s, hf in ((1, 2.0), (1, 4.0), (2, 1.0), (2, 3.0))]
    assert seed_means(rows, lambda r: r["test_HF"] / r["test_LF"]) == [3.0, 2.0]  # four cells, two seeds
