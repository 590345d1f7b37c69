"""scikit-learn conventions on every auditor: get_params / set_params, sklearn.base.clone, and the repr."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.base import clone

from paperlab.audit import RMIA, SMI, SVCMIA, LiRA, ThresholdMIA

AUDITORS = [SMI, ThresholdMIA, SVCMIA, LiRA, RMIA]
CHANGED = {SMI: {"estimator": "w1", "n_bootstrap": 17, "bandwidth": 2.0},
           ThresholdMIA: {"score": "entropy", "debias": True, "alpha": 0.1},
           SVCMIA: {"C": 1.5, "seed": 3}, LiRA: {"online": True, "level": 0.01, "global_variance": False},
           RMIA: {"a": 0.5, "gamma": 2.0, "n_bootstrap": 0}}


def _keyword_parameters(cls) -> dict:
    return {p.name: p.default for p in inspect.signature(cls).parameters.values()}


@pytest.mark.parametrize("cls", AUDITORS, ids=lambda c: c.__name__)
def test_get_params_are_the_constructor_arguments(cls):
    params = cls(**CHANGED[cls]).get_params()
    assert params == {**_keyword_parameters(cls), **CHANGED[cls]}
    assert cls().get_params(deep=False) == _keyword_parameters(cls)


@pytest.mark.parametrize("cls", AUDITORS, ids=lambda c: c.__name__)
def test_set_params_returns_self_and_rejects_unknown_names(cls):
    auditor = cls()
    assert auditor.set_params(**CHANGED[cls]) is auditor
    assert auditor.get_params() == cls(**CHANGED[cls]).get_params()
    with pytest.raises(ValueError, match=rf"'nope' is not a parameter of {cls.__name__}; valid: \['"):
        auditor.set_params(nope=1)


@pytest.mark.parametrize("cls", AUDITORS, ids=lambda c: c.__name__)
def test_clone_gives_an_unfitted_copy_with_the_same_parameters(cls):
    auditor = cls(**CHANGED[cls])
    copy = clone(auditor)
    assert type(copy) is cls and copy is not auditor and copy.get_params() == auditor.get_params()


def test_clone_of_a_fitted_smi_is_unfitted_and_refits_identically():
    rng = np.random.default_rng(0)
    m, n, f = rng.normal(0, 1, 200), rng.normal(1.5, 1, 200), rng.normal(0.7, 1, 150)
    smi = SMI(estimator="w1", n_bootstrap=20, n_permutations=20).fit(m, n)
    copy = clone(smi)
    assert not hasattr(copy, "fit_seconds_")
    a, b = smi.estimate(f).to_dict(), copy.fit(m, n).estimate(f).to_dict()
    a.pop("seconds"), b.pop("seconds")
    assert a == b


@pytest.mark.parametrize("cls", AUDITORS, ids=lambda c: c.__name__)
def test_repr_shows_every_non_default_parameter(cls):
    assert repr(cls()) == f"{cls.__name__}()"
    text = repr(cls(**CHANGED[cls]))
    assert text == f"{cls.__name__}(" + ", ".join(f"{k}={v!r}" for k, v in sorted(
        CHANGED[cls].items(), key=lambda kv: list(_keyword_parameters(cls)).index(kv[0]))) + ")"
    assert repr(SMI(n_bootstrap=200, seed=0)) == "SMI()"  # passing a default explicitly does not show it
