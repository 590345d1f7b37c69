"""Long-term forecasting data: md5 checks, TSL splits and window counts, train-only scaling."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
import torch

from paperlab.data import ChecksumError
from paperlab.data.ltsf import LTSF_DATASETS, MD5, from_array, load_ltsf, read_csv, split_borders, synthetic_seasonal


def _write_csv(path, n_rows, n_cols, *, seed=0, gz=False):
    rng = np.random.default_rng(seed)
    vals = rng.normal(size=(n_rows, n_cols)) + np.arange(n_cols)
    lines = ["date," + ",".join(f"c{i}" for i in range(n_cols))]
    lines += [f"2020-01-01 {i}," + ",".join(f"{v:.6f}" for v in row) for i, row in enumerate(vals)]
    data = ("\n".join(lines) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return vals


def test_md5_mismatch_raises(tmp_path):
    _write_csv(tmp_path / "timeseries" / "ETTh1.csv", 20, 2)
    with pytest.raises(ChecksumError, match="sha256"):  # the registry's check comes first
        load_ltsf("ETTh1", horizon=4, root=tmp_path)
    with pytest.raises(ChecksumError, match="md5"):
        read_csv(tmp_path / "timeseries" / "ETTh1.csv", md5=MD5["ETTh1"])


def test_read_csv_gzip_and_md5(tmp_path):
    vals = _write_csv(tmp_path / "x.csv.gz", 10, 3, gz=True)
    cols, got = read_csv(tmp_path / "x.csv.gz")
    assert cols == ["c0", "c1", "c2"]
    np.testing.assert_allclose(got, vals, atol=1e-6)


def test_split_borders_conventions():
    assert split_borders("ETTh1", 17420, 96) == {"train": (0, 8640), "val": (8544, 11520), "test": (11424, 14400)}
    assert split_borders("ETTm2", 69680, 96)["test"] == (46080 - 96, 57600)
    b = split_borders("weather", 52696, 96)
    assert b["train"] == (0, 36887) and b["test"][1] - b["test"][0] - 96 == 10539
    assert b["val"][1] - b["val"][0] - 96 == 5270
    b = split_borders("national_illness", 966, 36)
    assert (b["train"][1], b["val"][1] - b["val"][0] - 36, b["test"][1] - b["test"][0] - 36) == (676, 97, 193)


def test_train_only_scaler_and_windows():
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(200, 2))
    raw[140:] += 10.0  # val/test shift must not leak into the scaler
    data = from_array(raw, name="custom", lookback=8, horizon=4)
    np.testing.assert_allclose(data.mean.numpy(), raw[:140].mean(axis=0))
    np.testing.assert_allclose(data.std.numpy(), raw[:140].std(axis=0))
    assert data.sizes() == {"train": 140 - 11, "val": 20 + 8 - 11, "test": 40 + 8 - 11}
    x, y = data.windows("test", torch.tensor([0]))
    # the first test window predicts the first test row, reading L rows before it
    torch.testing.assert_close(data.inverse(y[0, 0]).double(), torch.from_numpy(raw[160]), atol=1e-4, rtol=0)
    torch.testing.assert_close(data.inverse(x[0, -1]).double(), torch.from_numpy(raw[159]), atol=1e-4, rtol=0)
    xl, yl = data.windows("test", torch.tensor([data.n_windows("test") - 1]))
    torch.testing.assert_close(data.inverse(yl[0, -1]).double(), torch.from_numpy(raw[199]), atol=1e-4, rtol=0)
    with pytest.raises(ValueError, match="out of range"):
        data.windows("val", torch.tensor([data.n_windows("val")]))
    assert "train rows [0, 140)" in data.describe()


def test_synthetic_seasonal_is_seeded():
    a, b = synthetic_seasonal(horizon=24, seed=1), synthetic_seasonal(horizon=24, seed=1)
    assert torch.equal(a.values, b.values) and a.source.startswith("generated")
    assert not torch.equal(a.values, synthetic_seasonal(horizon=24, seed=2).values)


@pytest.mark.skipif(not os.environ.get("PAPERLAB_DATA"), reason="PAPERLAB_DATA not set")
def test_real_ett_window_counts():
    data = load_ltsf("ETTh1", horizon=96)
    assert data.sizes() == {"train": 8449, "val": 2785, "test": 2785}
    assert data.channels == 7 and set(MD5) == set(LTSF_DATASETS)
    train = data.values[: 8640]
    torch.testing.assert_close(train.mean(dim=0), torch.zeros(7), atol=1e-4, rtol=0)
