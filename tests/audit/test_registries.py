"""The two audit registries (SMI estimators, named auditors) and the library's one not-fitted error."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from paperlab.audit import (
    AUDITORS,
    ESTIMATORS,
    SMI,
    AuditorSpec,
    MixtureEstimator,
    NotFittedError,
    ThresholdMIA,
    get_auditor,
    get_estimator,
)
from paperlab.audit.mia import SCORES


class MeanShift(MixtureEstimator):
    """A toy estimator: the proportion from the weighted means of the first standardised feature."""

    def fit(self, member, nonmember, blocks, *, n_components, seed):
        self.m, self.n = member[:, 0].numpy(), nonmember[:, 0].numpy()
        return self.m, self.n, 0.5

    def forget_scores(self, forget, k_fm, k_fn):
        return {"f": forget[:, 0].numpy()}, 0.5

    def proportion(self, means, w, scores):
        wf, wm, wn = (x.numpy() for x in w)

        def mean(v: np.ndarray, wt: np.ndarray) -> np.ndarray:
            return (v[:, None] * wt).sum(0) / wt.sum(0)

        gm = mean(self.m, wm)
        return (mean(scores["f"], wf) - gm) / (mean(self.n, wn) - gm)


@pytest.fixture
def toy_estimator(monkeypatch):
    """``ESTIMATORS["mean-shift"]`` for one test (monkeypatch removes the entry afterwards)."""
    monkeypatch.setitem(ESTIMATORS, "mean-shift", MeanShift)
    return "mean-shift"


def _planted(pi: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    u = np.array([2.5, 0.0, 0.0])
    m, n = rng.standard_normal((300, 3)), rng.standard_normal((300, 3)) + u
    k = round(pi * 300)
    return m, n, np.concatenate([rng.standard_normal((k, 3)) + u, rng.standard_normal((300 - k, 3))])


def test_estimator_registry_lookups():
    assert list(ESTIMATORS) == ["mmd", "energy", "w1", "em", "classifier"]
    assert all(issubclass(cls, MixtureEstimator) and get_estimator(name) is cls for name, cls in ESTIMATORS.items())
    assert get_estimator("energy").kernel == "energy" and get_estimator("mmd").kernel is None
    with pytest.raises(ValueError, match=r"estimator='nope' is not valid; choose one of \['classifier', 'em'"):
        get_estimator("nope")
    with pytest.raises(ValueError, match=r"estimator='nope' is not valid; choose one of \[.*'w1'\]"):
        SMI(estimator="nope").fit(np.zeros((20, 2)), np.ones((20, 2)))


def test_a_registered_estimator_runs_end_to_end(toy_estimator):
    m, n, f = _planted(0.4)
    smi = SMI(estimator=toy_estimator, n_bootstrap=200, n_permutations=50).fit(m, n)
    res = smi.estimate(f)
    assert isinstance(smi.estimator_, MeanShift) and res.method == "smi-mean-shift"
    assert abs(res.forgetting_rate - 0.4) < 0.06 and res.low < res.forgetting_rate < res.high
    assert res.auc == 0.5 and res.identifiable
    raw = SMI(estimator=toy_estimator, n_bootstrap=0).fit(m, n).estimate(f).raw_rate
    assert raw == pytest.approx((f[:, 0].mean() - m[:, 0].mean()) / (n[:, 0].mean() - m[:, 0].mean()), rel=1e-12)


def test_auditor_registry_fields():
    assert len(AUDITORS) == 15 and all(get_auditor(name) is spec for name, spec in AUDITORS.items())
    for name, spec in AUDITORS.items():
        auditor = spec.build(n_bootstrap=3, seed=1)
        assert auditor.n_bootstrap == 3 and auditor.seed == 1
        if spec.family == "smi":
            assert spec.params["estimator"] in ESTIMATORS and spec.shadows == "none"
            assert isinstance(auditor, SMI) and auditor.estimator == spec.params["estimator"]
        else:  # an MIA's own name is its registry key
            assert spec.features == "logits" and auditor.name == name
    assert [n for n, s in AUDITORS.items() if s.family == "mia" and not s.raw] == ["mia-loss-debiased"]
    assert {n: s.shadows for n, s in AUDITORS.items() if s.shadows != "none"} == {
        "lira-offline": "offline", "lira-online": "online", "rmia": "offline"}
    assert [n for n, s in AUDITORS.items() if s.limit_shadows] == ["rmia"]
    assert all(s.features in ("penultimate", *SCORES) for s in AUDITORS.values() if s.family == "smi")
    with pytest.raises(TypeError):
        AUDITORS["mia-loss"].params["score"] = "entropy"  # type: ignore[index]
    with pytest.raises(ValueError, match=r"auditor='nope' is not valid; choose one of \[.*'rmia'"):
        get_auditor("nope")


def _factory(**kw: Any) -> ThresholdMIA:
    return ThresholdMIA(**kw)


def test_auditor_spec_checks_its_fields():
    with pytest.raises(ValueError, match="family='lira' is not valid"):
        AuditorSpec(family="lira", features="logits", factory=_factory)
    with pytest.raises(ValueError, match="features='logits' does not fit family='smi'"):
        AuditorSpec(family="smi", features="logits", factory=_factory)
    with pytest.raises(ValueError, match="shadows='sometimes' is not valid"):
        AuditorSpec(family="mia", features="logits", shadows="sometimes", factory=_factory)
    with pytest.raises(ValueError, match="limit_shadows=True needs shadows='offline'"):
        AuditorSpec(family="mia", features="logits", limit_shadows=True, factory=_factory)
    spec = AuditorSpec(family="mia", features="logits", factory=_factory, params={"score": "entropy"})
    assert spec.build(n_bootstrap=0, seed=0).name == "mia-entropy"


def test_registries_import_without_torch():
    code = "import sys, paperlab.audit, paperlab.audit.registry; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_one_not_fitted_error_for_the_library():
    import paperlab.exceptions
    from paperlab.scaling.fit import LawFitter
    from paperlab.scaling.isoflop import IsoFlopFitter

    assert NotFittedError is paperlab.exceptions.NotFittedError
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    for unfitted, query in ((SMI(), lambda a: a.witness(np.zeros((3, 2)))),
                            (ThresholdMIA(), lambda a: a.estimate((np.zeros((20, 3)), np.zeros(20, dtype=int)))),
                            (LawFitter("chinchilla"), lambda a: a.predict([1e9], [1e10])),
                            (IsoFlopFitter(), lambda a: a.predict([1e20]))):
        with pytest.raises(NotFittedError, match="not fitted"):
            query(unfitted)


def test_estimator_instances_are_per_fit():
    m, n, f = _planted(0.3, seed=2)
    a, b = SMI(n_bootstrap=0, n_permutations=20).fit(m, n), SMI(n_bootstrap=0, n_permutations=20).fit(n, m)
    assert a.estimator_ is not b.estimator_ and a.s_m_ is a.estimator_.s_m  # fit makes a fresh instance
