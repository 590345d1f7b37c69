"""The SMI optimism experiment: the behavioural reference, signed errors, the claim rule and a shrunk sweep."""

from __future__ import annotations

import math

import pytest

from paperlab.experiments.base import Verdict
from paperlab.experiments.smi import PAPER, OptimismConfig
from paperlab.experiments.smi.optimism import _claim, _gated, _seed_rows, reference_rate, run, signed_errors

SMALL = dict(seeds=(0,), blocks=("digits-mlp",), n_train=600, n_forget=200, n_nonmember=300, n_test=100,
             n_population=300, n_member_ref=200, epochs=30, k_offline=2, shadow_subset=200, n_bootstrap=5,
             strengths=(("grad_ascent", (0.01, 0.02)), ("random_label", (1e-3, 3e-2))),
             auditors=("mia-loss", "mia-loss-fpr5", "lira-offline", "smi-w1-score"))


def test_reference_rate_runs_from_the_original_to_the_retrained_model():
    assert reference_rate(1.0, ua_original=1.0, ua_retrained=0.9) == 0.0
    assert reference_rate(0.9, ua_original=1.0, ua_retrained=0.9) == pytest.approx(1.0)
    assert reference_rate(0.8, ua_original=1.0, ua_retrained=0.9) == pytest.approx(2.0)  # over-unlearned
    assert math.isnan(reference_rate(0.9, ua_original=0.905, ua_retrained=0.9))  # nothing to forget


def _row(seed, auditor, t, rate, method="grad_ascent"):
    return {"seed": seed, "auditor": auditor, "t": t, "rate": rate, "method": method}


def test_signed_errors_score_under_unlearned_points_only():
    rows = [_row(0, "a", 0.2, 0.5), _row(0, "a", 0.8, 0.9), _row(0, "a", 2.0, 1.0),  # t > 1: not scored
            _row(0, "a", 1.0, 0.0, method="retrain"), _row(1, "a", 0.5, 0.5), _row(1, "b", 0.5, 0.0)]
    assert signed_errors(rows, "a", seeds=(0, 1, 2)) == pytest.approx([0.2, 0.0])
    assert signed_errors(rows, "b", seeds=(0, 1)) == pytest.approx([-0.5])


def test_claim_needs_every_mia_optimistic():
    def v(verdict):
        return Verdict(claim="x", verdict=verdict, ours="", rule="", n_run=3, n_kept=3)

    assert _claim([v("reproduced"), v("reproduced")]).verdict == "reproduced"
    assert _claim([v("reproduced"), v("not reproduced")]).verdict == "not reproduced"
    assert _claim([v("reproduced"), v("inconclusive at this scale")]).verdict.startswith("inconclusive")
    assert _claim([v("reproduced"), v("too few seeds")]).verdict == "too few seeds"


def test_sweep_crosses_the_retrained_model_and_every_auditor_reports():
    """The recipe learns its task: the original memorises the forget set beyond the retrained model, and the
    sweep moves forget accuracy from above to below the retrained model's (the seed passes its gate)."""
    config = OptimismConfig(**SMALL)
    rows = _seed_rows(config, 0)
    kept, why = _gated(rows, config.seeds)
    assert kept == [0] and not why
    first = next(r for r in rows if r["method"] == "retrain")
    assert first["UA original"] - first["UA retrained"] >= 0.02 and first["t"] == pytest.approx(1.0)
    assert {r["auditor"] for r in rows} == set(config.auditors)
    assert all(0.0 <= r["rate"] <= 1.0 for r in rows if math.isfinite(r["rate"]))


def test_shrunk_run_tables_figure_and_claim(tmp_path):
    res = run(OptimismConfig(**SMALL), out_dir=tmp_path)
    (verdict,) = res.verdicts
    assert verdict.claim == "smi-optimistic" and verdict.verdict == "too few seeds"  # one seed decides nothing
    table = res.tables["signed error per auditor (under-unlearned points, positive = optimistic)"]
    assert [r["auditor"] for r in table] == list(SMALL["auditors"])
    assert (tmp_path / res.figures[0].file).stat().st_size > 1000
    assert any(n.startswith("alignment:") for n in res.notes)


def test_config_rules_and_registration():
    assert PAPER.experiment("optimism").quick().seeds == (0,)
    assert next(c for c in PAPER.claims if c.id == "smi-optimistic").experiment == "optimism"
    with pytest.raises(ValueError, match="one block"):
        OptimismConfig(blocks=("mnist-mlp", "digits-mlp"))
    with pytest.raises(ValueError, match="strengths"):
        OptimismConfig(strengths=(("retrain", (0.1,)),))
    with pytest.raises(ValueError, match="auditor='nope'"):
        OptimismConfig(auditors=("nope",))
