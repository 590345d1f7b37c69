"""Unlearning methods: each does what it claims on a tiny synthetic task, and never touches the input model."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from paperlab.audit import METHODS, TrainConfig, UnlearnConfig, accuracy, fit_classifier, make_model, saliency_mask
from paperlab.audit.unlearning import unlearn as run_unlearn
from paperlab.data.vision import make_synthetic


@pytest.fixture(scope="module")
def task():
    x, y = make_synthetic(300, dim=8, classes=4, label_noise=0.0, seed=0)
    x, y = torch.as_tensor(x), torch.as_tensor(y)
    model = fit_classifier(make_model("mlp", in_shape=(8,), classes=4, width=32, seed=0), x, y,
                           config=TrainConfig(epochs=15, lr=3e-3), seed=0)
    return model, (x[60:], y[60:]), (x[:60], y[:60])


CFG = UnlearnConfig(epochs=2, ga_epochs=10, ga_lr=5e-2, retrain=TrainConfig(epochs=5, lr=3e-3))


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("method", METHODS)
def test_methods_copy_and_are_deterministic(task, method):
    model, retain, forget = task
    before = _state(model)
    kw = dict(retain=retain, forget=forget, config=CFG, seed=3,
              make_model=lambda: make_model("mlp", in_shape=(8,), classes=4, width=32, seed=9))
    a, b = run_unlearn(method, model, **kw), run_unlearn(method, model, **kw)
    assert a is not model and not a.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])
    for (ka, va), vb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(va, vb), ka


def _forget_loss(model, forget):
    with torch.no_grad():
        return float(nn.functional.cross_entropy(model(forget[0]), forget[1]))


def test_gradient_ascent_and_random_labels_raise_forget_loss(task):
    model, retain, forget = task
    ga = run_unlearn("grad_ascent", model, retain=retain, forget=forget, config=CFG)
    assert _forget_loss(ga, forget) > _forget_loss(model, forget) + 0.1
    rl = run_unlearn("random_label", model, retain=retain, forget=forget, config=UnlearnConfig(epochs=10))
    assert _forget_loss(rl, forget) > _forget_loss(model, forget) + 0.1
    assert accuracy(rl, *retain) > 0.9


def test_salun_moves_only_salient_weights(task):
    model, retain, forget = task
    masks = saliency_mask(model, forget, fraction=0.5)
    total = sum(m.numel() for m in masks.values())
    kept = sum(int(m.sum()) for m in masks.values())
    assert abs(kept / total - 0.5) < 0.01
    new = run_unlearn("salun", model, retain=retain, forget=forget, config=CFG)
    moved = 0
    for (name, p), q in zip(model.named_parameters(), new.parameters(), strict=True):
        assert torch.equal(p[~masks[name]], q[~masks[name]]), name
        moved += int((p != q).sum())
    assert moved > 0


def test_l1_sparse_shrinks_weights_more_than_finetune(task):
    model, retain, forget = task
    cfg = UnlearnConfig(epochs=2, l1_alpha=5e-3)
    ft = run_unlearn("finetune", model, retain=retain, forget=forget, config=cfg)
    l1 = run_unlearn("l1_sparse", model, retain=retain, forget=forget, config=cfg)

    def norm(m):
        return float(sum(p.detach().abs().sum() for p in m.parameters()))

    assert norm(l1) < norm(ft)


def test_bad_inputs_raise(task):
    model, retain, forget = task
    with pytest.raises(ValueError, match="method='nope' is not valid"):
        run_unlearn("nope", model, retain=retain, forget=forget)
    with pytest.raises(ValueError, match="needs make_model"):
        run_unlearn("retrain", model, retain=retain, forget=forget)
    with pytest.raises(TypeError, match=r"\(x, y\) tuple"):
        run_unlearn("finetune", model, retain=retain[0], forget=forget)
    with pytest.raises(ValueError, match="salun_fraction must lie in"):
        UnlearnConfig(salun_fraction=0.0)
