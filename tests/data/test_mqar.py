"""MQAR generators: determinism, layout, vocabulary rules and slice metadata."""

from __future__ import annotations

import pytest
import torch

from paperlab.data.mqar import IGNORE_INDEX, key_reoccurs, mqar


@pytest.mark.parametrize("style", ["zoology", "kla"])
def test_same_seed_same_tensors_other_seed_differs(style: str) -> None:
    a = mqar(8, seq_len=64, num_pairs=6, vocab_size=128, seed=3, style=style)
    b = mqar(8, seq_len=64, num_pairs=6, vocab_size=128, seed=3, style=style)
    c = mqar(8, seq_len=64, num_pairs=6, vocab_size=128, seed=4, style=style)
    for name in ("inputs", "labels", "distances", "num_pairs", "seq_lens"):
        assert torch.equal(getattr(a, name), getattr(b, name))
    assert not torch.equal(a.inputs, c.inputs)


@pytest.mark.parametrize("style", ["zoology", "kla"])
@pytest.mark.parametrize(("n", "t", "p", "v"), [(5, 64, 8, 64), (3, 97, 5, 50), (1, 24, 6, 30)],
                         ids=["N5-T64-P8", "N3-T97-P5", "N1-T24-P6"])
def test_layout_labels_and_distances(style: str, n: int, t: int, p: int, v: int) -> None:
    d = mqar(n, seq_len=t, num_pairs=p, vocab_size=v, seed=0, style=style)
    assert d.inputs.shape == d.labels.shape == d.distances.shape == (n, t)
    assert d.inputs.dtype == torch.long and int(d.inputs.min()) >= 0 and int(d.inputs.max()) < v
    assert torch.equal(d.num_pairs, torch.full((n,), p)) and torch.equal(d.seq_lens, torch.full((n,), t))
    mask = d.query_mask
    assert torch.equal(mask.sum(1), torch.full((n,), p))  # every pair asked exactly once
    assert not mask[:, : 2 * p].any()  # labels only in the query region
    assert torch.equal(d.distances >= 0, mask)
    half = v // 2
    keys, values = d.inputs[:, 0:2 * p:2], d.inputs[:, 1:2 * p:2]
    assert int(keys.max()) < half and int(values.min()) >= half
    for i in range(n):
        pos = mask[i].nonzero().squeeze(1)
        for q in pos.tolist():
            key_pos = q - int(d.distances[i, q])
            assert key_pos % 2 == 0 and key_pos < 2 * p  # points at a key slot
            assert int(d.inputs[i, key_pos]) == int(d.inputs[i, q])  # the query repeats that key
            assert int(d.labels[i, q]) == int(d.inputs[i, key_pos + 1])  # the label is its value
        asked = sorted(((pos - d.distances[i, pos]) // 2).tolist())
        assert asked == list(range(p))


def test_zoology_keys_distinct_and_gaps_power_law() -> None:
    d = mqar(400, seq_len=256, num_pairs=8, vocab_size=512, seed=1, style="zoology")
    keys, values = d.inputs[:, 0:16:2], d.inputs[:, 1:16:2]
    assert all(len(set(r.tolist())) == 8 for r in keys)  # without replacement
    assert all(len(set(r.tolist())) == 8 for r in values)
    assert int(keys.min()) >= 1
    q = d.query_mask.nonzero()[:, 1]
    assert torch.equal(q % 2, torch.zeros_like(q))  # even offsets into the query region
    gap = (q - 16) // 2  # 0 .. 119
    # p(gap) ∝ gap^-0.99: the first 12 of 120 gaps carry far more than 10% of the mass
    assert float((gap < 12).float().mean()) > 0.3


def test_kla_style_samples_with_replacement_and_spreads_queries() -> None:
    d = mqar(2000, seq_len=64, num_pairs=16, vocab_size=32, seed=2, style="kla")
    keys = d.inputs[:, 0:32:2]
    assert any(len(set(r.tolist())) < 16 for r in keys)  # 16 draws from 16 keys: duplicates occur
    pos = d.query_mask.nonzero()[:, 1].view(2000, 16) - 32  # sorted per row; bins of width 2
    assert torch.equal(pos // 2, torch.arange(16).expand(2000, 16))  # exactly one query per bin
    assert abs(float((pos % 2 == 0).float().mean()) - 0.5) < 0.02  # uniform inside each bin


def test_longer_sequences_keep_pairs_and_stretch_distances() -> None:
    short = mqar(200, seq_len=64, num_pairs=8, vocab_size=256, seed=0, style="kla")
    long = mqar(200, seq_len=512, num_pairs=8, vocab_size=256, seed=0, style="kla")
    assert int(short.query_mask.sum()) == int(long.query_mask.sum()) == 1600
    assert float(long.distances[long.query_mask].float().mean()) > 4 * float(
        short.distances[short.query_mask].float().mean())


def test_subset_keeps_metadata() -> None:
    d = mqar(6, seq_len=32, num_pairs=4, vocab_size=64, seed=0)
    s = d.subset(torch.tensor([4, 1]))
    assert len(s) == 2 and torch.equal(s.inputs[0], d.inputs[4]) and torch.equal(s.labels[1], d.labels[1])
    assert s.style == d.style and IGNORE_INDEX in s.labels


@pytest.mark.parametrize(("kwargs", "err", "match"), [
    (dict(seq_len=15, num_pairs=4, vocab_size=64), ValueError, "seq_len must be >= 16"),
    (dict(seq_len=64, num_pairs=4, vocab_size=8), ValueError, "distinct keys"),
    (dict(seq_len=64, num_pairs=4, vocab_size=64, style="x"), ValueError, "style='x'"),
    (dict(seq_len=64.0, num_pairs=4, vocab_size=64), TypeError, "seq_len must be an int"),
    (dict(seq_len=64, num_pairs=0, vocab_size=64), ValueError, "num_pairs must be >= 1"),
])
def test_bad_input_raises(kwargs: dict, err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        mqar(2, seed=0, **kwargs)


@pytest.mark.parametrize("style", ["kla", "zoology"])
def test_value_filler_never_contains_a_key(style: str) -> None:
    d = mqar(64, seq_len=256, num_pairs=8, vocab_size=64, seed=3, style=style, filler="values")
    filler = ~d.query_mask
    filler[:, :16] = False  # the pairs
    assert bool((d.inputs[filler] >= 32).all())
    assert not bool(key_reoccurs(d)[d.query_mask].any()) or style == "kla"  # kla keys repeat within an example


def test_key_reoccurs_marks_queries_whose_key_repeats_before_them() -> None:
    d = mqar(200, seq_len=512, num_pairs=4, vocab_size=32, seed=0, style="kla")
    hits = key_reoccurs(d)
    assert not bool(hits[~d.query_mask].any())
    n, q = next((int(a), int(b)) for a, b in zip(*torch.nonzero(hits, as_tuple=True), strict=True))
    assert bool((d.inputs[n, 8:q] == d.inputs[n, q]).any())
    # uniform filler over a small vocabulary makes re-occurrence common at long lengths, value filler removes it
    assert float(hits[d.query_mask].float().mean()) > 0.5
    clean = mqar(200, seq_len=512, num_pairs=4, vocab_size=32, seed=0, style="zoology", filler="values")
    assert not bool(key_reoccurs(clean).any())
