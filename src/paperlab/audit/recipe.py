"""The recommended unlearning audit, end to end: a 1-d membership score and SMI's ``w1`` estimator.

arXiv 2602.01150 audits an unlearned model by the non-member proportion of the forget set's features; which
features is ours to choose. On the small models we measured (docs/smi.md), penultimate features and logits
carry the class structure, not membership (witness AUC 0.48-0.56, SMI abstains or is noise), while the 1-d
logit-scaled true-class confidence ``log(p_y / (1 - p_y))`` with the ``w1`` estimator recovered partial
retraining within 0.05. :func:`audit_unlearning` runs that recipe on a model and index sets into one dataset.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from paperlab._validate import check_int
from paperlab.audit.base import AuditResult
from paperlab.audit.features import extract_features
from paperlab.audit.mia import SCORES, membership_score
from paperlab.audit.models import predict_logits
from paperlab.audit.smi import SMI

__all__ = ["audit_unlearning"]

_LONG = 10  # batches: more than this shows a progress bar when progress=None


def audit_unlearning(model: nn.Module, data: tuple[Any, Any], retain: Any, nonmember: Any, forget: Any, *,
                     features: str = "scaled_confidence", auditor: SMI | None = None, batch_size: int = 1024,
                     progress: bool | None = None) -> AuditResult:
    """Audit how much of ``forget`` the (unlearned) ``model`` has forgotten, with SMI on a membership score.

    Args:
        model: the audited classifier (any device; run in eval mode, its mode restored).
        data: ``(x [n, ...], y [n])``, inputs and integer labels of one dataset (arrays or tensors).
        retain: indices (or a bool mask ``[n]``) of retained training points: the member references.
        nonmember: indices of points the model never trained on: the non-member references.
        forget: indices of the forget set; disjoint from both.
        features: a :func:`~paperlab.audit.membership_score` kind (default ``scaled_confidence``, 1-d, the
            recommended recipe), or ``penultimate``, ``logits``, ``softmax`` or a submodule name
            (:func:`~paperlab.audit.extract_features`).
        auditor: the SMI auditor to fit (unfitted; default ``SMI(estimator="w1")``); labels are passed for its
            class reweighting.
        batch_size: examples per forward pass.
        progress: show a tqdm bar over the forward passes; ``None``: only when there are more than 10 batches.

    Returns:
        The :class:`~paperlab.audit.AuditResult`: ``forgetting_rate`` NaN (with a ``NotSeparableWarning``)
        when the model's outputs do not separate members from non-members.
    """
    check_int("batch_size", batch_size, minimum=1)
    if auditor is not None and not isinstance(auditor, SMI):
        raise TypeError(f"auditor must be an SMI instance or None, got {type(auditor).__name__}")
    x, y = _dataset(data)
    sets = {"retain": _indices("retain", retain, len(y)), "nonmember": _indices("nonmember", nonmember, len(y)),
            "forget": _indices("forget", forget, len(y))}
    names = list(sets)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = np.intersect1d(sets[a], sets[b])
            if len(both):
                raise ValueError(f"{a} and {b} must be disjoint; they share {len(both)} indices, e.g. {both[:5]}")
    idx = np.concatenate(list(sets.values()))
    out = _outputs(model, x, y, idx, features=features, batch_size=batch_size, progress=progress)
    ends = np.cumsum([len(v) for v in sets.values()])
    m, n, f = out[:ends[0]], out[ends[0]:ends[1]], out[ends[1]:]
    lm, ln, lf = (y[v].numpy() for v in sets.values())
    smi = SMI(estimator="w1") if auditor is None else auditor
    return smi.fit(m, n, member_labels=lm, nonmember_labels=ln).estimate(f, labels=lf)


def _dataset(data: Any) -> tuple[torch.Tensor, torch.Tensor]:
    if not (isinstance(data, tuple | list) and len(data) == 2):
        raise TypeError(f"data must be a pair (x, y), got {type(data).__name__}")
    x, y = (v if isinstance(v, torch.Tensor) else torch.as_tensor(np.asarray(v)) for v in data)
    if y.dim() != 1 or len(x) != len(y) or y.is_floating_point() and not torch.equal(y, y.round()):
        raise ValueError(f"data must be (x [n, ...], y [n] integer labels), got shapes {tuple(x.shape)} and "
                         f"{tuple(y.shape)} (y dtype {y.dtype})")
    return x, y.long()


def _indices(name: str, idx: Any, n: int) -> np.ndarray:
    """Index array ``int64 [k]`` from integer indices or a bool mask ``[n]``; checked against ``n``."""
    arr = np.asarray(idx.detach().cpu() if isinstance(idx, torch.Tensor) else idx)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ValueError(f"{name} as a bool mask must have shape ({n},), got {arr.shape}")
        arr = np.flatnonzero(arr)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-d array of integer indices or a bool mask, got dtype {arr.dtype} "
                         f"and shape {arr.shape}")
    if len(arr) and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{name} indices must lie in [0, {n}), got range [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


def _outputs(model: nn.Module, x: torch.Tensor, y: torch.Tensor, idx: np.ndarray, *, features: str,
             batch_size: int, progress: bool | None) -> np.ndarray:
    """Scores ``[k]`` or features ``[k, d]`` of the points ``idx``, one forward pass per batch."""
    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    starts = range(0, len(idx), batch_size)
    show = len(starts) > _LONG if progress is None else progress
    chunks = []
    for s in tqdm(starts, desc="audit forward passes", disable=not show):
        xb = x[torch.as_tensor(idx[s:s + batch_size])].to(device)
        if xb.is_floating_point() and param is not None:
            xb = xb.to(param.dtype)
        if features in SCORES:
            logits = predict_logits(model, xb, batch_size=len(xb)).cpu()
            chunks.append(membership_score(logits, y[idx[s:s + batch_size]], kind=features))
        else:
            layer = None if features == "penultimate" else features
            chunks.append(extract_features(model, xb, layer=layer, batch_size=len(xb)).cpu().double().numpy())
    return np.concatenate(chunks)
