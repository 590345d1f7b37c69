"""Audit-suite plumbing: shadow-cost shares, per-audit wall and CPU seconds, exact w1 anchors."""

from __future__ import annotations

import numpy as np
import torch

from paperlab.audit.mixture import w1_proportion
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


def test_w1_exact_at_the_anchors():
    rng = np.random.default_rng(0)
    m, n = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 500)
    ones = [np.ones((k, 1)) for k in (300, 300, 500)]
    assert w1_proportion(m, m, n, *ones)[0] == 0.0  # F equals M: exactly 0, no cumsum rounding left over
    assert w1_proportion(n, m, n, ones[2], ones[1], ones[2])[0] == 1.0
