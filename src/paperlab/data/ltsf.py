"""Long-term time-series forecasting datasets with the Time-Series-Library (TSL) conventions.

Files come from ``paperlab.data.path(name)`` (``$PAPERLAB_DATA/timeseries/...``; ``.gz`` read transparently) and
are md5-checked after decompression against ``MD5`` (sums we recorded). ECL and Traffic are not available here.

Conventions (as TSL's ``data_provider``):

- ETTh1/ETTh2: 12/4/4 months of 30 days: train rows ``[0, 8640)``, val ``[8640, 11520)``, test
  ``[11520, 14400)``; later rows are unused. ETTm1/ETTm2: the same x4 (34560 / 46080 / 57600).
- weather, exchange_rate, national_illness: ``n_train = int(0.7 n)``, ``n_test = int(0.2 n)``, val the rest.
- Val and test segments start ``lookback`` rows early, so their first window predicts the split's first row.
- All columns but ``date``; mean and population std fitted on the train rows only; values are standardised.
- Windows per split: ``segment - L - H + 1``; none is dropped (TSL's test loader drops the last partial batch).
- L = 96 (ILI 36); H in {96, 192, 336, 720} (ILI {24, 36, 48, 60}).

Split sizes are logged (``logging.getLogger('paperlab.data.ltsf')``) and returned by :meth:`LTSFData.describe`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from paperlab._validate import check_choice, check_int
from paperlab.data.download import ChecksumError
from paperlab.data.registry import path as data_path

__all__ = ["DEFAULT_HORIZONS", "DEFAULT_LOOKBACK", "LTSF_DATASETS", "MD5", "LTSFData", "load_ltsf", "md5_of",
           "read_csv", "split_borders", "synthetic_seasonal"]

logger = logging.getLogger(__name__)

MD5: dict[str, str] = {
    "ETTh1": "8381763947c85f4be6ac456c508460d6",
    "ETTh2": "51a229a3fc13579dd939364fefe9c7ab",
    "ETTm1": "82d6bd89109c63d075d99c1077b33f38",
    "ETTm2": "7687e47825335860bf58bccb31be0c56",
    "weather": "2e79e5e4c921d3542684c4a34c6748b4",
    "exchange_rate": "60553ab6c2bed1a235cbcf194ac04f57",
    "national_illness": "652810719aa3cb6be48b277dd1b9da8a",
}
LTSF_DATASETS = tuple(MD5)
DEFAULT_LOOKBACK = {name: (36 if name == "national_illness" else 96) for name in LTSF_DATASETS}
DEFAULT_HORIZONS = {name: ((24, 36, 48, 60) if name == "national_illness" else (96, 192, 336, 720))
                    for name in LTSF_DATASETS}
SPLITS = ("train", "val", "test")


def _read_bytes(file: Path) -> bytes:
    with (gzip.open(file, "rb") if file.suffix == ".gz" else open(file, "rb")) as f:
        return f.read()


def md5_of(file: str | os.PathLike) -> str:
    """md5 of a file's content, after gunzip for ``.gz`` files."""
    return hashlib.md5(_read_bytes(Path(file))).hexdigest()


def read_csv(file: str | os.PathLike, *, md5: str | None = None) -> tuple[list[str], np.ndarray]:
    """Read a forecasting CSV: header ``date,<col>,...``; returns (column names without date, ``[N, C]`` float64).

    Raises ``ChecksumError`` (a ValueError) when ``md5`` is given and does not match the content.
    """
    raw = _read_bytes(Path(file))
    if md5 is not None:
        got = hashlib.md5(raw).hexdigest()
        if got != md5:
            raise ChecksumError(f"md5 of {file} is {got}, expected {md5}: the file is not the canonical one")
    text = io.StringIO(raw.decode("utf-8"))
    header = text.readline().strip().split(",")
    if not header or header[0] != "date":
        raise ValueError(f"{file}: first column must be 'date', got header {header[:3]}")
    values = np.loadtxt(text, delimiter=",", usecols=range(1, len(header)), dtype=np.float64, ndmin=2)
    return header[1:], values


def split_borders(name: str, n_rows: int, lookback: int) -> dict[str, tuple[int, int]]:
    """Row ranges ``[start, end)`` of each split (val/test start ``lookback`` rows early), TSL conventions."""
    check_int("n_rows", n_rows, minimum=1)
    check_int("lookback", lookback, minimum=1)
    if name.startswith("ETT"):
        unit = 30 * 24 * (4 if name.startswith("ETTm") else 1)
        tr, va, te = 12 * unit, 16 * unit, 20 * unit
        if n_rows < te:
            raise ValueError(f"{name} needs >= {te} rows for the standard ETT split, got {n_rows}")
    else:
        n_train, n_test = int(n_rows * 0.7), int(n_rows * 0.2)
        tr, va, te = n_train, n_rows - n_test, n_rows
    return {"train": (0, tr), "val": (tr - lookback, va), "test": (va - lookback, te)}


@dataclass
class LTSFData:
    """A standardised multivariate series with its splits; windows are cut on demand.

    Attributes:
        name: dataset name; columns: channel names.
        values: ``[N, C]`` float32 standardised with the train rows' mean and population std.
        mean, std: ``[C]`` scaler (float64).
        borders: ``{split: (start, end)}`` row ranges, see :func:`split_borders`.
        lookback, horizon: L and H.
        source: where the values came from (file path or ``'generated: ...'``).
    """

    name: str
    columns: list[str]
    values: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor
    borders: dict[str, tuple[int, int]]
    lookback: int
    horizon: int
    source: str = ""
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def channels(self) -> int:
        return self.values.shape[1]

    def n_windows(self, split: str) -> int:
        """``segment - L - H + 1`` windows of ``split``."""
        check_choice("split", split, SPLITS)
        start, end = self.borders[split]
        return max(0, end - start - self.lookback - self.horizon + 1)

    def sizes(self) -> dict[str, int]:
        return {s: self.n_windows(s) for s in SPLITS}

    def describe(self) -> str:
        """One line: name, shape, split rows and window counts."""
        parts = [f"{s} rows [{a}, {b}) windows {self.n_windows(s)}" for s, (a, b) in self.borders.items()]
        return (f"{self.name}: {self.values.shape[0]} rows x {self.channels} channels, L={self.lookback}, "
                f"H={self.horizon}; " + "; ".join(parts))

    def windows(self, split: str, index: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs ``[n, L, C]`` and targets ``[n, H, C]`` of ``split`` (all windows, or those at ``index``)."""
        n = self.n_windows(split)
        idx = torch.arange(n) if index is None else index
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise ValueError(f"window index out of range [0, {n}) for split {split!r}")
        start = self.borders[split][0] + idx
        rows_x = start[:, None] + torch.arange(self.lookback)
        rows_y = start[:, None] + self.lookback + torch.arange(self.horizon)
        return self.values[rows_x], self.values[rows_y]

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        """Undo the standardisation of ``[..., C]`` values."""
        return x * self.std.to(x.dtype) + self.mean.to(x.dtype)


def _standardise(values: np.ndarray, train_end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean = values[:train_end].mean(axis=0)
    std = values[:train_end].std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (values - mean) / std, mean, std


def from_array(values: np.ndarray, *, name: str, lookback: int, horizon: int, columns: list[str] | None = None,
               source: str = "") -> LTSFData:
    """Build :class:`LTSFData` from raw ``[N, C]`` values with ``name``'s split convention (70/10/20 if custom)."""
    check_int("horizon", horizon, minimum=1)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"values must be [N, C], got shape {values.shape}")
    borders = split_borders(name, values.shape[0], lookback)
    scaled, mean, std = _standardise(values, borders["train"][1])
    data = LTSFData(name=name, columns=columns or [str(i) for i in range(values.shape[1])],
                    values=torch.from_numpy(scaled).float(), mean=torch.from_numpy(mean),
                    std=torch.from_numpy(std), borders=borders, lookback=lookback, horizon=horizon, source=source)
    for split in SPLITS:
        if data.n_windows(split) < 1:
            raise ValueError(f"{name}: split {split!r} has no window for L={lookback}, H={horizon} "
                             f"({data.describe()})")
    logger.info("%s", data.describe())
    return data


def load_ltsf(name: str, *, horizon: int, lookback: int | None = None, root: str | os.PathLike | None = None,
              verify: bool = True) -> LTSFData:
    """Load a registered forecasting dataset (ETTh1, ETTh2, ETTm1, ETTm2, weather, exchange_rate,
    national_illness) as standardised :class:`LTSFData`.

    Args:
        name: dataset name.
        horizon: H.
        lookback: L (default 96; 36 for national_illness).
        root: data root overriding ``$PAPERLAB_DATA``.
        verify: check the registry's sha256 and the md5 of the (decompressed) CSV.
    """
    check_choice("name", name, LTSF_DATASETS)
    lookback = DEFAULT_LOOKBACK[name] if lookback is None else check_int("lookback", lookback, minimum=1)
    file = data_path(name, root=root, verify=verify)
    columns, values = read_csv(file, md5=MD5[name] if verify else None)
    return from_array(values, name=name, lookback=lookback, horizon=horizon, columns=columns, source=str(file))


def synthetic_seasonal(*, horizon: int, lookback: int = 96, n_rows: int = 4000, channels: int = 3,
                       noise: float = 0.3, seed: int = 0) -> LTSFData:
    """A generated multi-seasonal series (daily + weekly + a fast component, trend, AR noise) for data-free runs.

    Each channel mixes periods 24, 168 and 6 with random amplitudes and phases; split 70/10/20.
    """
    check_int("n_rows", n_rows, minimum=1)
    check_int("channels", channels, minimum=1)
    rng = np.random.default_rng(seed)
    t = np.arange(n_rows, dtype=np.float64)[:, None]
    out = 0.002 * t * rng.normal(size=(1, channels))
    for period in (24.0, 168.0, 6.0):
        amp, phase = rng.uniform(0.3, 1.5, size=(1, channels)), rng.uniform(0, 2 * math.pi, size=(1, channels))
        out = out + amp * np.sin(2 * math.pi * t / period + phase)
    eps = rng.normal(scale=noise, size=(n_rows, channels))
    for i in range(1, n_rows):  # AR(1) noise, phi 0.7
        eps[i] += 0.7 * eps[i - 1]
    return from_array(out + eps, name="synthetic_seasonal", lookback=lookback, horizon=horizon,
                      source=f"generated: synthetic_seasonal(seed={seed}, n_rows={n_rows}, channels={channels})")
