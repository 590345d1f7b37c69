"""Models, training helper and feature extraction."""

from __future__ import annotations

import pytest
import torch

from paperlab.audit import LeNet, TrainConfig, accuracy, extract_features, fit_classifier, make_model, predict_logits
from paperlab.audit.models import epoch_batches
from paperlab.data.vision import make_synthetic


def test_make_model_is_seeded_and_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = make_model("mlp", in_shape=(5,), seed=1), make_model("mlp", in_shape=(5,), seed=1)
    c = make_model("mlp", in_shape=(5,), seed=2)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.head.weight, c.head.weight)


@pytest.mark.parametrize("hw", [8, 28])
def test_lenet_shapes(hw):
    net = LeNet()
    x = torch.randn(3, 1, hw, hw)
    assert net(x).shape == (3, 10)
    assert extract_features(net, x).shape == (3, 84)


def test_epoch_batches_cover_each_index_once_per_epoch():
    at, per_epoch = epoch_batches(10, 4, seed=0)
    assert per_epoch == 3
    for epoch in range(2):
        idx = torch.cat([at(epoch * per_epoch + k) for k in range(per_epoch)])
        assert sorted(idx.tolist()) == list(range(10))
    assert torch.equal(at(0), epoch_batches(10, 4, seed=0)[0](0))


def test_fit_classifier_learns_separable_task():
    x, y = make_synthetic(400, dim=8, classes=3, label_noise=0.0, seed=1)
    x, y = torch.as_tensor(x), torch.as_tensor(y)
    model = fit_classifier(make_model("mlp", in_shape=(8,), classes=3, width=32), x, y, config=TrainConfig(epochs=10,
                                                                                                   lr=3e-3))
    assert accuracy(model, x, y) > 0.95


def test_features_penultimate_named_logits_softmax():
    model = make_model("mlp", in_shape=(6,), classes=4, seed=0)
    model.train()
    x = torch.randn(13, 6)
    pen = extract_features(model, x, batch_size=5)
    with torch.no_grad():
        torch.testing.assert_close(pen, model.body(x))
        torch.testing.assert_close(extract_features(model, x, layer="logits"), model(x))
    assert model.training  # mode restored
    torch.testing.assert_close(extract_features(model, x, layer="softmax").sum(1), torch.ones(13))
    first = extract_features(model, x, layer="body.2")
    assert first.shape == (13, 256) and (first >= 0).all()
    torch.testing.assert_close(predict_logits(model, x, batch_size=4), extract_features(model, x, layer="logits"))


def test_features_bad_inputs():
    model = make_model("mlp", in_shape=(6,), classes=4)
    with pytest.raises(ValueError, match="is not a submodule"):
        extract_features(model, torch.randn(2, 6), layer="nope")
    with pytest.raises(ValueError, match="at least one example"):
        extract_features(model, torch.randn(0, 6))
    with pytest.raises(ValueError, match="no nn.Linear"):
        extract_features(torch.nn.Conv1d(1, 1, 1), torch.randn(2, 1, 3))
    with pytest.raises(ValueError, match="arch='rnn' is not valid"):
        make_model("rnn", in_shape=(6,))
