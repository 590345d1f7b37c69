"""Degenerate inputs (constant features, identical references) and the lifetime of SMI's scratch memory."""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest

from paperlab.audit import ESTIMATORS, RMIA, SMI, SVCMIA, AttackData, LiRA, NotSeparableWarning, ThresholdMIA
from paperlab.audit.scratch import reuse_scratch, reusing, scratch_bytes

RNG = np.random.default_rng(0)
CONST, X = np.ones((60, 3)), RNG.standard_normal((60, 3))
CASES = {"constant": (CONST, CONST, CONST), "constant-references": (CONST, CONST, X), "identical": (X, X, X)}


def _no_rate(res) -> bool:
    return math.isnan(res.forgetting_rate) and (res.low, res.high) == (0.0, 1.0) and not res.identifiable


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_smi_degenerate_references_give_nan_with_a_warning(estimator, case):
    m, n, f = CASES[case]
    level = 1.0 if case != "identical" else 0.05  # constant: not separable even when the p-value gate passes
    smi = SMI(estimator=estimator, n_bootstrap=20, n_permutations=20, level=level).fit(m, n)
    with pytest.warns(NotSeparableWarning, match="not separable"):
        assert _no_rate(smi.estimate(f))


def test_smi_constant_forget_set_is_a_valid_audit():
    m, n = RNG.standard_normal((200, 2)), RNG.standard_normal((200, 2)) + [3.0, 0.0]
    res = SMI(n_bootstrap=20, n_permutations=20).fit(m, n).estimate(np.zeros((30, 2)))
    assert res.identifiable and 0.0 <= res.low <= res.forgetting_rate <= res.high <= 1.0


def _logits(kind: str, n: int = 80, classes: int = 4) -> tuple[np.ndarray, np.ndarray]:
    labels = np.arange(n) % classes
    if kind == "constant":
        return np.zeros((n, classes)), labels
    return np.random.default_rng(1).standard_normal((n, classes)), labels


@pytest.mark.parametrize("kind", ["constant", "identical"])
@pytest.mark.parametrize("make", [lambda: ThresholdMIA(debias=True, n_bootstrap=20),
                                  lambda: ThresholdMIA(score="entropy", debias=True, n_bootstrap=0),
                                  lambda: SVCMIA(debias=True, n_bootstrap=20)], ids=["loss", "entropy-B0", "svc"])
def test_debiased_mia_on_identical_references_gives_nan_with_a_warning(make, kind):
    data = _logits(kind)
    attack = make().fit(data, data)
    with pytest.warns(NotSeparableWarning, match="not separable"):
        assert _no_rate(attack.estimate(data))
    plain = make().set_params(debias=False).fit(data, data)
    if isinstance(plain, ThresholdMIA):  # AUC 0.5: no rate (AuditResult's contract); the raw count is kept
        with pytest.warns(NotSeparableWarning, match="not separable"):
            raw = plain.estimate(data)
        assert _no_rate(raw) and 0.0 <= raw.raw_rate <= 1.0
    else:  # the raw count is still defined
        assert 0.0 <= plain.estimate(data).forgetting_rate <= 1.0


def test_shadow_attacks_on_constant_outputs():
    logits, labels = _logits("constant")
    data = AttackData(logits, labels, np.zeros((4, *logits.shape)))
    with pytest.raises(ValueError, match="shadow_logits: LiRA needs a positive OUT-shadow variance"):
        LiRA().fit(data, data)
    attack = RMIA(debias=True, n_bootstrap=10).fit(data, data)
    with pytest.warns(NotSeparableWarning):
        assert _no_rate(attack.estimate(data))


def _planted_1d(seed: int = 0):
    g = np.random.default_rng(seed)
    return g.normal(0, 1, 300), g.normal(1, 1, 400), g.normal(0.5, 1, 200)


@pytest.mark.parametrize("dim", [1, 4])
def test_scratch_is_not_kept_by_default_and_dies_with_the_auditor(dim):
    m, n, f = (np.repeat(a[:, None], dim, 1) + 0.1 * np.arange(dim) for a in _planted_1d())
    smi = SMI(n_bootstrap=20, n_permutations=20).fit(m, n)
    smi.estimate(f)
    assert not reusing() and scratch_bytes() == 0  # nothing outlives the audit in module state
    block = weakref.ref(smi.k_mm_._base)  # the fitted reference block, held only through the auditor
    assert block() is not None
    del smi
    gc.collect()
    assert block() is None


@pytest.mark.parametrize("estimator", ["w1", "mmd"])
def test_reuse_scratch_keeps_buffers_then_releases_them_with_the_same_audit(estimator):
    m, n, f = _planted_1d(1)
    plain = SMI(estimator=estimator, n_bootstrap=30, n_permutations=20).fit(m, n).estimate(f).to_dict()
    with reuse_scratch():
        with reuse_scratch():  # nested: only the outermost exit releases
            reused = SMI(estimator=estimator, n_bootstrap=30, n_permutations=20).fit(m, n).estimate(f).to_dict()
        held = scratch_bytes()
        assert held >= (300 + 400) ** 2 * 8  # the pooled fp64 reference block at least
    assert scratch_bytes() == 0 and not reusing()
    plain.pop("seconds"), reused.pop("seconds")
    assert reused == plain
