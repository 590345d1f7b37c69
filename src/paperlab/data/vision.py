"""Small image-classification sets for the SMI unlearning-audit experiments (arXiv 2602.01150).

- :func:`read_idx` / :func:`load_mnist`: the MNIST test split (10k 28x28 images) in IDX format, read through
  ``paperlab.data.path("mnist_test", "images" | "labels")``.
- :func:`load_digits`: scikit-learn's bundled 8x8 digits (1797 images; needs scikit-learn).
- :func:`make_synthetic`: a seeded Gaussian-cluster classification set (no files, no extras).
- :func:`balanced_split`: class-balanced disjoint splits of a label vector, seeded.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from paperlab._validate import check_int, check_positive
from paperlab.data.registry import path

__all__ = ["balanced_split", "load_digits", "load_mnist", "make_synthetic", "read_idx"]

_IDX_DTYPES: dict[int, np.dtype] = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"),
                                    0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(file: str | os.PathLike) -> np.ndarray:
    """Parse one IDX file (gzip-compressed or plain).

    The header is two zero bytes, a dtype code (0x08 = uint8) and the number of dimensions, followed by one
    big-endian int32 per dimension: magic 2051 (0x00000803) is a 3-d uint8 image array, 2049 (0x00000801) a
    1-d uint8 label vector.

    Returns:
        the array with its native shape, e.g. ``[10000, 28, 28]`` uint8 for MNIST images.
    """
    file = Path(file)
    opener = gzip.open if file.suffix == ".gz" else open
    with opener(file, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise ValueError(f"{file} is not an IDX file: header bytes {data[:4]!r}")
    dtype, ndim = _IDX_DTYPES[data[2]], data[3]
    shape = tuple(int(v) for v in np.frombuffer(data, dtype=">i4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - offset != expected:
        raise ValueError(f"{file}: header says shape {shape} ({expected} bytes) but {len(data) - offset} follow")
    return np.frombuffer(data, dtype=dtype, offset=offset).reshape(shape).astype(dtype.newbyteorder("="))


def load_mnist(*, root: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The MNIST test split.

    Args:
        root: data folder; default ``$PAPERLAB_DATA`` then the user cache (see ``paperlab.data.path``).

    Returns:
        ``(images [10000, 28, 28] uint8, labels [10000] int64 in 0..9)``.
    """
    images = read_idx(path("mnist_test", "images", root=root))
    labels = read_idx(path("mnist_test", "labels", root=root)).astype(np.int64)
    if images.ndim != 3 or labels.shape != (images.shape[0],):
        raise ValueError(f"MNIST files disagree: images {images.shape}, labels {labels.shape}")
    return images, labels


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits, scaled to [0, 1].

    Returns:
        ``(images [1797, 8, 8] float32, labels [1797] int64)``.
    """
    try:
        from sklearn.datasets import load_digits as _load
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("load_digits needs scikit-learn: pip install 'paperlab[dev]' (or scikit-learn)") from err
    bunch = _load()
    return (bunch.images / 16.0).astype(np.float32), bunch.target.astype(np.int64)


def make_synthetic(
    n: int, *, dim: int = 32, classes: int = 10, spread: float = 1.0, label_noise: float = 0.05, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A seeded Gaussian-cluster classification set with a little label noise (so models can memorise).

    Class means are drawn once from ``N(0, I)`` scaled by 2; points are ``mean[y] + spread * N(0, I)``.
    A ``label_noise`` share of labels is replaced by uniform random classes: a model that fits them has
    memorised those points, which gives membership inference something to find.

    Returns:
        ``(x [n, dim] float32, y [n] int64)``; the same seed gives the same bits.
    """
    check_int("n", n, minimum=1)
    check_int("dim", dim, minimum=1)
    check_int("classes", classes, minimum=2)
    check_positive("spread", spread)
    if not 0.0 <= label_noise <= 1.0:
        raise ValueError(f"label_noise must lie in [0, 1], got {label_noise!r}")
    rng = np.random.default_rng(seed)
    means = 2.0 * rng.standard_normal((classes, dim))
    y = rng.integers(0, classes, size=n)
    x = means[y] + spread * rng.standard_normal((n, dim))
    flip = rng.random(n) < label_noise
    y = np.where(flip, rng.integers(0, classes, size=n), y)
    return x.astype(np.float32), y.astype(np.int64)


def balanced_split(labels: np.ndarray, sizes: Sequence[int], *, seed: int = 0) -> list[np.ndarray]:
    """Disjoint, class-balanced index sets of the given sizes.

    Each split takes ``size / n`` of every class (largest-remainder rounding keeps the total exact), drawn
    without replacement from a seeded permutation.

    Args:
        labels: ``[n]`` integer labels.
        sizes: the size of each split; their sum must not exceed ``n``.

    Returns:
        one shuffled ``int64`` index array per size.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-d, got shape {labels.shape}")
    sizes = [check_int("sizes[i]", int(s), minimum=0) for s in sizes]
    if sum(sizes) > len(labels):
        raise ValueError(f"sizes sum to {sum(sizes)} but only {len(labels)} labels are available")
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    pools = {c: list(rng.permutation(np.flatnonzero(labels == c))) for c in classes}
    freq = np.array([len(pools[c]) for c in classes], dtype=float) / len(labels)
    out = []
    for size in sizes:
        want = freq * size
        counts = np.floor(want).astype(int)
        order = np.argsort(-(want - counts), kind="stable")
        counts[order[: size - counts.sum()]] += 1
        idx = []
        for c, k in zip(classes, counts, strict=True):
            take = min(k, len(pools[c]))
            idx.extend(pools[c][:take])
            pools[c] = pools[c][take:]
        short = size - len(idx)
        if short:  # a class ran out: fill from what is left, still without replacement
            rest = rng.permutation(np.concatenate([np.asarray(p, dtype=np.int64) for p in pools.values()]))
            idx.extend(rest[:short])
            used = set(rest[:short].tolist())
            pools = {c: [i for i in p if i not in used] for c, p in pools.items()}
        out.append(rng.permutation(np.asarray(idx, dtype=np.int64)))
    return out
