"""S-NIAH generator: determinism, needle placement, unambiguous answers."""

from __future__ import annotations

import pytest
import torch

from paperlab.data.mqar import IGNORE_INDEX
from paperlab.data.niah import niah


def test_same_seed_same_tensors() -> None:
    a, b = niah(7, seq_len=50, vocab_size=40, seed=5), niah(7, seq_len=50, vocab_size=40, seed=5)
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.labels, b.labels) and torch.equal(a.depths, b.depths)
    assert not torch.equal(a.inputs, niah(7, seq_len=50, vocab_size=40, seed=6).inputs)


@pytest.mark.parametrize(("t", "depth", "pos"), [(3, 0.5, 0), (103, 0.0, 0), (103, 1.0, 100), (103, 0.5, 50)])
def test_needle_at_requested_depth(t: int, depth: float, pos: int) -> None:
    d = niah(20, seq_len=t, vocab_size=16, seed=0, depth=depth)
    assert torch.equal(d.needle_pos, torch.full((20,), pos))
    assert torch.equal(d.distances, torch.full((20,), t - 1 - pos))
    rows = torch.arange(20)
    key, value = d.inputs[rows, pos], d.inputs[rows, pos + 1]
    assert int(key.max()) < 8 and int(value.min()) >= 8
    assert torch.equal(d.inputs[:, -1], key) and torch.equal(d.labels[:, -1], value)
    assert torch.equal(d.query_mask.sum(1), torch.ones(20, dtype=torch.long))
    assert bool((d.labels[:, :-1] == IGNORE_INDEX).all())
    # the key occurs exactly twice (needle and query): the answer is unambiguous
    assert torch.equal((d.inputs == key[:, None]).sum(1), torch.full((20,), 2))


def test_random_and_listed_depths() -> None:
    d = niah(500, seq_len=64, vocab_size=32, seed=1)
    assert float(d.depths.min()) >= 0.0 and float(d.depths.max()) <= 1.0 and float(d.depths.std()) > 0.2
    listed = niah(3, seq_len=13, vocab_size=32, seed=1, depth=[0.0, 0.5, 1.0])
    assert listed.needle_pos.tolist() == [0, 5, 10]
    assert len(listed.subset(slice(1, 3))) == 2


@pytest.mark.parametrize(("kwargs", "err", "match"), [
    (dict(seq_len=2, vocab_size=16), ValueError, "seq_len must be >= 3"),
    (dict(seq_len=10, vocab_size=16, depth=1.5), ValueError, r"depth must lie in \[0.0, 1.0\]"),
    (dict(seq_len=10, vocab_size=16, depth=[0.1]), ValueError, "depth must have num_examples=2"),
    (dict(seq_len=10, vocab_size=2), ValueError, "vocab_size must be >= 4"),
])
def test_bad_input_raises(kwargs: dict, err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        niah(2, seed=0, **kwargs)


def test_value_noise_keeps_every_key_but_the_needle_out_of_the_haystack() -> None:
    d = niah(50, seq_len=64, vocab_size=32, seed=1, depth=0.5, noise="values")
    rows = torch.arange(50)
    hay = d.inputs.clone()
    hay[rows, d.needle_pos] = 16
    hay[:, -1] = 16
    assert bool((hay >= 16).all())  # only the needle's key (twice) is below the value half
    with pytest.raises(ValueError, match="noise"):
        niah(2, seq_len=8, vocab_size=8, seed=0, noise="keys")
