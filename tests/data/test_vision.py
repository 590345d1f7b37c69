"""Vision loaders: IDX parsing (MNIST), sklearn digits, the synthetic set and balanced splits."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest

from paperlab.data import DatasetNotFoundError
from paperlab.data.vision import balanced_split, load_digits, load_mnist, make_synthetic, read_idx


def test_read_idx_plain_and_gzip(tmp_path):
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    raw = struct.pack(">BBBB", 0, 0, 0x08, 3) + struct.pack(">iii", 2, 3, 4) + arr.tobytes()
    (tmp_path / "a.idx").write_bytes(raw)
    (tmp_path / "a.idx.gz").write_bytes(gzip.compress(raw))
    assert np.array_equal(read_idx(tmp_path / "a.idx"), arr)
    assert np.array_equal(read_idx(tmp_path / "a.idx.gz"), arr)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(raw[:-1])
    with pytest.raises(ValueError, match="header says shape"):
        read_idx(tmp_path / "short")


def test_load_mnist_test_split():
    try:
        images, labels = load_mnist()
    except DatasetNotFoundError:
        pytest.skip("MNIST files not available (set PAPERLAB_DATA)")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10000,) and labels.min() == 0 and labels.max() == 9
    assert labels[:5].tolist() == [7, 2, 1, 0, 4]  # the well-known first test digits


def test_load_digits():
    images, labels = load_digits()
    assert images.shape == (1797, 8, 8) and images.min() >= 0.0 and images.max() <= 1.0
    assert np.bincount(labels).tolist()[:2] == [178, 182]


def test_make_synthetic_same_seed_same_bits():
    a, b, c = make_synthetic(50, seed=3), make_synthetic(50, seed=3), make_synthetic(50, seed=4)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    with pytest.raises(ValueError, match="label_noise"):
        make_synthetic(5, label_noise=2.0)


def test_balanced_split_sizes_disjoint_balanced():
    labels = np.repeat(np.arange(4), [100, 50, 30, 20])
    parts = balanced_split(labels, [100, 40, 20], seed=0)
    assert [len(p) for p in parts] == [100, 40, 20]
    assert len(np.unique(np.concatenate(parts))) == 160
    assert np.bincount(labels[parts[0]], minlength=4).tolist() == [50, 25, 15, 10]
    assert [p.tolist() for p in balanced_split(labels, [100, 40, 20], seed=0)] == [p.tolist() for p in parts]
    with pytest.raises(ValueError, match="sizes sum to"):
        balanced_split(labels, [150, 60])
