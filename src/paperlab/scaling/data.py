"""Loaders for the public Chinchilla points (read through ``paperlab.data.path``; never copied into the repo).

- ``chinchilla_epoch``: Epoch AI's 245 runs digitised from Chinchilla's figure 4 (Besiroglu et al. 2024):
  N = ``Model Size``, C = ``Training FLOP``, loss = ``loss``; tokens D = C / (6 N) are inferred, not measured.
- ``chinchilla_kyo``: a 234-row subset with columns C, N, D, loss (kyo-takano/chinchilla); C = 6ND is checked.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from paperlab._validate import check_int
from paperlab.data.registry import path as data_path

__all__ = ["ScalingData", "load_csv", "load_epoch", "load_kyo"]


@dataclass(frozen=True)
class ScalingData:
    """Training runs as [n] float64 arrays: parameters N, tokens D, compute C (FLOP) and final loss."""

    N: np.ndarray
    D: np.ndarray
    C: np.ndarray
    loss: np.ndarray
    source: str = ""

    def __len__(self) -> int:
        return len(self.N)

    def subset(self, mask: np.ndarray) -> ScalingData:
        """The runs where the boolean ``mask`` [n] is True."""
        m = np.asarray(mask, dtype=bool)
        return ScalingData(self.N[m], self.D[m], self.C[m], self.loss[m], self.source)


def _read(path: Path) -> dict[str, np.ndarray]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path} has no data rows")
    cols: dict[str, np.ndarray] = {}
    for key in rows[0]:
        try:
            cols[key] = np.array([float(r[key]) for r in rows])
        except ValueError:
            continue  # non-numeric columns (colours) are skipped
    return cols


def load_csv(path: str | os.PathLike, *, columns: dict[str, str] | None = None,
             flops_per_param_token: float = 6.0) -> ScalingData:
    """Load a CSV of runs. ``columns`` maps roles N, D, C, loss to headers (defaults: those names, or Epoch's).

    Either D or C may be missing; it is derived from C = k N D with k = ``flops_per_param_token``.
    """
    cols = _read(Path(path))
    names = {"N": "N", "D": "D", "C": "C", "loss": "loss"}
    if "Model Size" in cols and columns is None:
        names.update(N="Model Size", C="Training FLOP")
    names.update(columns or {})
    unknown = set(names) - {"N", "D", "C", "loss"}
    if unknown:
        raise ValueError(f"columns keys must be among N, D, C, loss, got {sorted(unknown)}")
    for role in ("N", "loss"):
        if names[role] not in cols:
            raise ValueError(f"column {names[role]!r} for {role} not in {path}; numeric columns: {sorted(cols)}")
    N, loss = cols[names["N"]], cols[names["loss"]]
    D, C = cols.get(names["D"]), cols.get(names["C"])
    if D is None:
        if C is None:
            raise ValueError(f"{path} needs a D or a C column; numeric columns: {sorted(cols)}")
        D = C / (flops_per_param_token * N)
    elif C is None:
        C = flops_per_param_token * N * D
    return ScalingData(N, D, C, loss, source=str(path))


def load_epoch(*, drop_highest: int = 0, root: str | os.PathLike | None = None) -> ScalingData:
    """Epoch's 245 points; ``drop_highest=5`` removes the five highest-loss runs as Epoch's fit did."""
    check_int("drop_highest", drop_highest, minimum=0)
    data = load_csv(data_path("chinchilla_epoch", root=root))
    if drop_highest:
        keep = np.ones(len(data), bool)
        keep[np.argsort(-data.loss, kind="stable")[:drop_highest]] = False
        data = data.subset(keep)
    return data


def load_kyo(*, root: str | os.PathLike | None = None) -> ScalingData:
    """The 234-row subset; raises ValueError unless C = 6ND holds to 1e-8 relative on every row."""
    data = load_csv(data_path("chinchilla_kyo", root=root))
    rel = np.abs(data.C - 6 * data.N * data.D) / data.C
    if rel.max() > 1e-8:  # the CSV rounds to ~16 digits; the worst row is 7.1e-9 off
        raise ValueError(f"chinchilla_kyo: C != 6ND (max relative error {rel.max():.3g})")
    return data
