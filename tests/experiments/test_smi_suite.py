"""Audit-suite plumbing: shadow-cost shares, per-audit wall and CPU seconds, auditors from the registry."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from paperlab.audit.models import TrainConfig, make_model
from paperlab.experiments.smi.suite import AuditSets, run_auditors, train_shadows


def test_shadow_share_and_audit_costs():
    torch.manual_seed(0)
    x, y = torch.randn(160, 6), torch.randint(0, 3, (160,))
    shadows = train_shadows(x, y, pool=np.arange(80, 160), k=4, subset=40, config=TrainConfig(epochs=1),
                            make_model=lambda i: make_model("mlp", in_shape=(6,), classes=3, width=8, seed=i), seed=0)
    assert shadows.seconds > 0 and shadows.cpu_seconds > 0
    half = shadows.first(2)
    assert len(half.models) == 2 and half.cpu_seconds == shadows.cpu_seconds / 2 and half.seconds == shadows.seconds / 2
    sets = AuditSets(member=np.arange(0, 30), nonmember=np.arange(30, 60), forget=np.arange(60, 80))
    model = make_model("mlp", in_shape=(6,), classes=3, width=8, seed=9)
    runs = run_auditors(model, x, y, sets, names=("smi-mmd-score", "lira-offline", "rmia"), offline=shadows,
                        rmia_refs=2, n_bootstrap=5)
    assert [r.result.method for r in runs] == ["smi-mmd-score", "lira-offline", "rmia"]
    assert runs[0].setup_s == runs[0].setup_cpu_s == 0.0
    assert runs[1].setup_cpu_s == shadows.cpu_seconds and runs[2].setup_cpu_s == half.cpu_seconds
    assert all(r.audit_s > 0 and r.audit_cpu_s > 0 and r.result.seconds == r.audit_s for r in runs)
    assert len(shadows.cache) == 3  # shadow outputs on member / non-member / forget computed once, then reused
    again = run_auditors(model, x, y, sets, names=("lira-offline",), offline=shadows, n_bootstrap=5)
    assert again[0].result.forgetting_rate == runs[1].result.forgetting_rate and len(shadows.cache) == 3



def _tiny():
    torch.manual_seed(1)
    x, y = torch.randn(120, 5), torch.randint(0, 3, (120,))
    sets = AuditSets(member=np.arange(0, 40), nonmember=np.arange(40, 80), forget=np.arange(80, 120))
    return x, y, sets, make_model("mlp", in_shape=(5,), classes=3, width=8, seed=3)


@pytest.fixture
def toy_auditor(monkeypatch):
    """One new registry entry (a debiased confidence attack), removed again after the test."""
    from paperlab.audit import AUDITORS, AuditorSpec, ThresholdMIA

    spec = AuditorSpec(family="mia", features="logits",
                       factory=lambda **kw: ThresholdMIA(score="confidence", debias=True, **kw))
    monkeypatch.setitem(AUDITORS, "toy-confidence-debiased", spec)
    return "toy-confidence-debiased"


def test_a_registered_auditor_runs_end_to_end(toy_auditor):
    from paperlab.audit import ThresholdMIA
    from paperlab.audit.mia import AttackData
    from paperlab.audit.models import predict_logits
    from paperlab.experiments.smi import AuditConfig

    x, y, sets, model = _tiny()
    run = run_auditors(model, x, y, sets, names=(toy_auditor, "mia-confidence"), n_bootstrap=7, seed=2)
    assert [r.result.method for r in run] == [toy_auditor, "mia-confidence"] and run[0].setup_s == 0.0
    data = {k: AttackData(predict_logits(model, x[v]), y[v]) for k, v in vars(sets).items()}
    want = ThresholdMIA(score="confidence", debias=True, n_bootstrap=7, seed=2).fit(data["member"], data["nonmember"])
    res = want.estimate(data["forget"])
    assert (run[0].result.forgetting_rate, run[0].result.low, run[0].result.high) == (res.forgetting_rate, res.low,
                                                                                      res.high)
    assert toy_auditor in AuditConfig(auditors=(toy_auditor, "smi-w1-score", "lira-offline")).auditors


def test_unknown_auditor_and_missing_shadows_raise():
    from paperlab.experiments.smi import AuditConfig

    x, y, sets, model = _tiny()
    with pytest.raises(ValueError, match=r"auditor='smi-nope' is not valid; choose one of \[.*'smi-w1-score'"):
        run_auditors(model, x, y, sets, names=("mia-loss", "smi-nope"))
    with pytest.raises(ValueError, match="auditor 'lira-online' needs online shadows"):
        run_auditors(model, x, y, sets, names=("mia-loss", "lira-online"), offline=None)
    with pytest.raises(ValueError, match="auditor='smi-nope' is not valid"):
        AuditConfig(auditors=("smi-nope", "smi-w1-score", "lira-offline"))
