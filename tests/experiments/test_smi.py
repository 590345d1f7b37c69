"""The SMI unlearning-audit experiment on a shrunk config: row schema, invariants, verdicts and figures."""

from __future__ import annotations

import math

import pytest

from paperlab.experiments.smi import PAPER, AuditConfig

TINY = dict(seeds=(0,), blocks=("synthetic-mlp",), n_train=200, n_forget=40, n_nonmember=120, n_test=60,
            n_population=120, n_member_ref=120, rhos=(0.0, 1.0), epochs=2, k_offline=2, shadow_subset=60,
            k_online=2, rmia_refs=2, n_bootstrap=5, methods=("finetune",),
            auditors=("smi-mmd", "smi-mmd-score", "smi-w1-score", "mia-loss", "mia-loss-debiased", "lira-offline",
                      "lira-online", "rmia"))


def test_shrunk_experiment_rows_tables_verdicts(tmp_path):
    config = AuditConfig(**TINY)
    result = PAPER.experiment("unlearning-audit").run(config, out_dir=tmp_path)
    keys = {"block", "seed", "setting", "true_rate", "auditor", "estimate", "low", "high", "raw", "residual", "auc",
            "audit_s", "setup_s", "audit_cpu_s", "setup_cpu_s", "UA", "RA", "TA", "train_s"}
    # 2 rho models + 1 method, each audited by every auditor
    assert len(result.rows) == 3 * len(config.auditors)
    for row in result.rows:
        assert set(row) == keys
        assert 0.0 <= row["low"] <= row["high"] <= 1.0
        if math.isfinite(row["estimate"]):
            assert 0.0 <= row["estimate"] <= 1.0
        shadow_based = row["auditor"] in ("lira-offline", "lira-online", "rmia")
        for key in ("setup_s", "setup_cpu_s"):
            assert row[key] > 0 if shadow_based else row[key] == 0
        assert row["audit_s"] > 0 and row["audit_cpu_s"] > 0
    assert {v.claim for v in result.verdicts} == {c.id for c in PAPER.claims if c.experiment == "unlearning-audit"}
    table = result.tables["A. partial-retraining ground truth, synthetic-mlp"]
    assert [r["auditor"] for r in table] == list(config.auditors)
    assert all(0.0 <= r["MAE"] <= 1.0 and 0.0 <= r["coverage"] <= 1.0 for r in table)
    for fig in result.figures:
        assert (tmp_path / fig.file).stat().st_size > 1000


def test_config_rules():
    quick = AuditConfig.quick()
    assert quick.seeds == (0,) and quick.primary in quick.auditors
    assert {c.experiment for c in PAPER.claims} == {"unlearning-audit", "optimism"}
    from paperlab.audit.registry import AUDITORS

    assert AuditConfig().auditors == tuple(AUDITORS)  # every registered auditor, in registry order
    assert all(a == quick.primary or AUDITORS[a].family == "mia" for a in quick.auditors)
    with pytest.raises(ValueError, match="auditor='mia-nope' is not valid"):
        AuditConfig(auditors=("mia-nope", "smi-w1-score", "lira-offline"))
    with pytest.raises(ValueError, match="primary"):
        AuditConfig(primary="smi-w1-score", auditors=("smi-mmd", "lira-offline"))
    with pytest.raises(ValueError, match="rhos"):
        AuditConfig(rhos=(0.0, 0.5))
    with pytest.raises(ValueError, match="n_forget"):
        AuditConfig(n_train=10, n_forget=10)


def test_digits_cnn_block_runs():
    from paperlab.experiments.smi.study import run_block

    config = AuditConfig(**{**TINY, "blocks": ("digits-cnn",), "k_online": 0, "methods": ("salun",),
                            "auditors": ("smi-w1-score", "mia-loss", "lira-offline")})
    rows = run_block(config, "digits-cnn", 0)
    assert {r["setting"] for r in rows} == {"rho=0", "rho=1", "salun"}
    assert all(r["block"] == "digits-cnn" and 0.0 <= r["TA"] <= 1.0 for r in rows)


def test_a_diverged_method_is_skipped_and_named_and_blocks_are_cached(tmp_path, monkeypatch):
    from paperlab.experiments.smi import study

    real_unlearn = study.unlearn

    def unlearn(method, *args, **kwargs):
        if method == "grad_ascent":
            raise FloatingPointError("loss became nan; lower the learning rate or enable grad_clip")
        return real_unlearn(method, *args, **kwargs)

    monkeypatch.setattr(study, "unlearn", unlearn)
    config = AuditConfig(**{**TINY, "methods": ("finetune", "grad_ascent"), "k_online": 0,
                            "auditors": ("smi-w1-score", "mia-loss", "lira-offline")})
    result = study.run(config, out_dir=tmp_path)
    assert {r["setting"] for r in result.rows} == {"rho=0", "rho=1", "finetune"}
    assert any("diverged" in n and "grad_ascent (synthetic-mlp, seed 0)" in n for n in result.notes)
    monkeypatch.setattr(study, "run_block", lambda *a, **k: pytest.fail("the cached block was recomputed"))
    again = study.run(config, out_dir=tmp_path)
    assert [str(r["estimate"]) for r in again.rows] == [str(r["estimate"]) for r in result.rows]  # NaN-aware
