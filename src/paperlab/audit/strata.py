"""Class composition in SMI audits (arXiv 2602.01150 audits class-dependent features; these forms are ours).

The forget set's class histogram can differ from the references' (e.g. forgetting one class), and features
depend on the class, so SMI compares like with like in one of two ways:

- ``reweight``: M and N get per-point weights that match F's class histogram (:func:`class_weights`);
- ``per_class``: ``pi = sum_c (|F_c| / |F|) pi_c`` with ``pi_c`` estimated on class ``c`` of F, M and N alone
  (:func:`class_masks` gives the indicator columns), and the bootstrap resamples each class within itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["as_labels", "class_masks", "class_weights"]


def as_labels(name: str, labels: Any, n: int) -> np.ndarray | None:
    """``labels`` as a numpy array of shape ``[n]`` (``None`` stays ``None``); a wrong shape raises, and so do
    float labels that are not whole numbers (0.5 is no class) and complex ones."""
    if labels is None:
        return None
    if isinstance(labels, torch.Tensor):
        labels = labels.detach().cpu().numpy()
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match the features, got {arr.shape}")
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must be class labels, got complex values (dtype {arr.dtype})")
    if arr.dtype.kind == "f":
        bad = arr[~(np.isfinite(arr) & (arr == np.round(arr)))]
        if bad.size:
            raise ValueError(f"{name} must be integer class ids, got {bad.size} non-integer values such as "
                             f"{bad[:3].tolist()}")
    return arr


def _missing(target: np.ndarray, ref: np.ndarray, name: str, *, minimum: int, rule: str) -> None:
    classes, counts = np.unique(ref, return_counts=True)
    have = dict(zip(classes.tolist(), counts.tolist(), strict=True))
    missing = sorted(c for c in np.unique(target).tolist() if have.get(c, 0) < minimum)
    if missing:
        few = "no" if minimum == 1 else f"fewer than {minimum}"
        raise ValueError(f"forget-set classes {missing} have {few} {name} reference points; {rule}")


def class_weights(lf: np.ndarray, lm: np.ndarray, ln: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-point weights ``[nM]``, ``[nN]`` giving M and N the class histogram of the forget labels ``lf``
    (0 for classes absent from F); every forget class needs a point in both references."""
    classes, counts = np.unique(lf, return_counts=True)
    target = dict(zip(classes.tolist(), (counts / counts.sum()).tolist(), strict=True))
    out = []
    for name, ref in (("member", lm), ("nonmember", ln)):
        _missing(lf, ref, name, minimum=1, rule="stratify='reweight' needs every forget class in both references "
                                               "(or use stratify='none')")
        rc, rn = np.unique(ref, return_counts=True)
        have = dict(zip(rc.tolist(), (rn / rn.sum()).tolist(), strict=True))
        out.append(np.array([target.get(c, 0.0) / have[c] for c in ref.tolist()]))
    return out[0], out[1]


def class_masks(lf: np.ndarray, lm: np.ndarray, ln: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indicator columns ``[n, C]`` of F, M and N for the ``C`` classes of the forget set (sorted); every forget
    class needs at least two member and two non-member points (the within-set U-statistics)."""
    classes = np.unique(lf)
    for name, ref in (("member", lm), ("nonmember", ln)):
        _missing(lf, ref, name, minimum=2, rule="stratify='per_class' estimates a proportion per class (use "
                                               "stratify='reweight')")
    mf, mm, mn = ((lab[:, None] == classes[None, :]).astype(float) for lab in (lf, lm, ln))
    return mf, mm, mn
