"""audit_unlearning (the recommended recipe) on partial retraining of a memorising MLP, and its input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from paperlab.audit import SMI, NotSeparableWarning, TrainConfig, extract_features, fit_classifier, make_model
from paperlab.audit.recipe import audit_unlearning
from paperlab.data.vision import make_synthetic

FORGET, RETAIN, UNSEEN = np.arange(1000), np.arange(1000, 2000), np.arange(2000, 4000)


@pytest.fixture(scope="module")
def retrained():
    """Gaussian clusters with 20% random labels; an MLP trained from scratch on the retain set plus all, half or
    none of the forget set (true forgetting rate 0, 0.5, 1)."""
    x, y = (torch.as_tensor(a) for a in make_synthetic(4000, dim=32, label_noise=0.2, seed=0))
    models = {}
    for rho in (0.0, 0.5, 1.0):
        keep = np.concatenate([FORGET[round(rho * len(FORGET)):], RETAIN])
        models[rho] = fit_classifier(make_model("mlp", in_shape=(32,), width=64, seed=0), x[keep], y[keep],
                                     config=TrainConfig(epochs=40), seed=0)
    return x, y, models


def test_recipe_recovers_partial_retraining_where_the_default_abstains(retrained):
    x, y, models = retrained
    for rho, model in models.items():
        res = audit_unlearning(model, (x, y), RETAIN, UNSEEN, FORGET)
        assert res.identifiable and res.method == "smi-w1"
        assert abs(res.forgetting_rate - rho) <= 0.15, (rho, res)
        assert res.low <= res.forgetting_rate <= res.high
        # SMI's defaults on penultimate features: significant maybe, but no usable separation -> NaN, warned
        feats = {k: extract_features(model, x[v]) for k, v in (("m", RETAIN), ("n", UNSEEN), ("f", FORGET))}
        with pytest.warns(NotSeparableWarning, match="not separable"):
            default = SMI().fit(feats["m"], feats["n"]).estimate(feats["f"])
        assert math.isnan(default.forgetting_rate)


def test_recipe_layers_masks_progress_and_the_auditor(retrained, capsys):
    x, y, models = retrained
    model = models[0.0]
    mask = np.zeros(len(y), dtype=bool)
    mask[RETAIN] = True
    a = audit_unlearning(model, (x.numpy(), y.numpy()), mask, UNSEEN, FORGET, batch_size=512, progress=True,
                         auditor=SMI(estimator="w1", n_bootstrap=20, seed=3))
    b = audit_unlearning(model, (x, y), RETAIN, UNSEEN, FORGET, auditor=SMI(estimator="w1", n_bootstrap=20, seed=3))
    assert (a.forgetting_rate, a.low, a.high) == (b.forgetting_rate, b.low, b.high)
    assert "audit forward passes" in capsys.readouterr().err
    with pytest.warns(NotSeparableWarning):
        layer = audit_unlearning(model, (x, y), RETAIN, UNSEEN, FORGET, features="body.2",
                                 auditor=SMI(n_bootstrap=0, n_permutations=20))
    assert layer.n_forget == len(FORGET) and math.isnan(layer.forgetting_rate)


def test_recipe_checks_its_inputs(retrained):
    x, y, models = retrained
    model = models[0.0]
    with pytest.raises(ValueError, match="retain and forget must be disjoint; they share 10 indices"):
        audit_unlearning(model, (x, y), RETAIN, UNSEEN, np.concatenate([FORGET, RETAIN[:10]]))
    with pytest.raises(ValueError, match=r"nonmember indices must lie in \[0, 4000\), got range"):
        audit_unlearning(model, (x, y), RETAIN, UNSEEN + 5, FORGET)
    with pytest.raises(ValueError, match="forget must be a 1-d array of integer indices"):
        audit_unlearning(model, (x, y), RETAIN, UNSEEN, FORGET.astype(float))
    with pytest.raises(ValueError, match=r"retain as a bool mask must have shape \(4000,\)"):
        audit_unlearning(model, (x, y), np.ones(3, dtype=bool), UNSEEN, FORGET)
    with pytest.raises(ValueError, match="data must be"):
        audit_unlearning(model, (x, y[:-1]), RETAIN, UNSEEN, FORGET)
    with pytest.raises(TypeError, match="data must be a pair"):
        audit_unlearning(model, x, RETAIN, UNSEEN, FORGET)
    with pytest.raises(TypeError, match="auditor must be an SMI instance"):
        audit_unlearning(model, (x, y), RETAIN, UNSEEN, FORGET, auditor="w1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        audit_unlearning(model, (x, y), RETAIN, UNSEEN, FORGET, batch_size=0)
