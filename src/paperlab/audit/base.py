"""What every auditor shares: input checks, parameters, the result record and the not-separable warning.

An auditor (SMI or an MIA baseline) follows the estimator shape: ``__init__`` stores options only,
``fit(member, nonmember)`` returns ``self``, ``estimate(forget)`` returns an :class:`AuditResult` whose
``forgetting_rate`` is the estimated share of the forget set that looks like non-members; ``estimate`` before
``fit`` raises :class:`paperlab.exceptions.NotFittedError`. :class:`Params` gives every auditor scikit-learn's
``get_params`` / ``set_params`` (so ``sklearn.base.clone`` works) and a repr of its non-default options.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from scipy.stats import rankdata

__all__ = ["MIN_SAMPLES", "AuditResult", "NotSeparableWarning", "Params", "as_features", "auc", "check_scores",
           "resample_count_rows", "resample_counts"]

MIN_SAMPLES = 10
_P = TypeVar("_P", bound="Params")


class NotSeparableWarning(UserWarning):
    """Member and non-member references are not distinguishable: no confident forgetting rate exists."""


class Params:
    """scikit-learn's parameter convention for an auditor: the parameters are the keyword-only arguments of
    ``__init__``, stored unchanged under the same names (checked at ``fit``, not here).

    ``get_params`` / ``set_params`` follow ``sklearn.base.BaseEstimator``, so ``sklearn.base.clone`` gives an
    unfitted copy with the same options; the repr lists every parameter that differs from its default.
    """

    @classmethod
    def _defaults(cls) -> dict[str, Any]:
        sig = inspect.signature(cls.__init__)
        return {p.name: p.default for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """``{name: value}`` of every constructor parameter (``deep`` is accepted for scikit-learn; auditors
        hold no nested estimators)."""
        return {name: getattr(self, name) for name in self._defaults()}

    def set_params(self: _P, **params: Any) -> _P:
        """Set constructor parameters by name and return ``self``; an unknown name raises ``ValueError`` listing
        the valid ones (values are checked at the next ``fit``)."""
        valid = self._defaults()
        for name in params:
            if name not in valid:
                raise ValueError(f"{name!r} is not a parameter of {type(self).__name__}; valid: {sorted(valid)}")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = self._defaults()
        shown = [f"{k}={v!r}" for k, v in self.get_params().items()
                 if type(v) is not type(defaults[k]) or v != defaults[k]]
        return f"{type(self).__name__}({', '.join(shown)})"


def as_features(name: str, x: Any, *, dim: int | None = None, min_samples: int = MIN_SAMPLES) -> np.ndarray:
    """Check and convert ``[n, d]`` features (numpy, torch or nested lists) to float64 numpy.

    A 1-d input is read as ``n`` scalar scores (``d = 1``). Raises ``ValueError`` for other ranks, NaN/inf,
    fewer than ``min_samples`` rows, or a width that differs from ``dim``; ``TypeError`` for non-numeric or
    complex input.
    """
    if isinstance(x, torch.Tensor):
        if x.is_complex():  # .double() would drop the imaginary part
            raise TypeError(f"{name} must be real, got a complex tensor (dtype {x.dtype}, shape {tuple(x.shape)})")
        x = x.detach().cpu().double().numpy()
    elif np.iscomplexobj(x):  # np.asarray(..., float64) would drop the imaginary part with a warning only
        raise TypeError(f"{name} must be real, got complex values (dtype {np.asarray(x).dtype})")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric [n, d] array or tensor, got {type(x).__name__}") from err
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape [n, d] (or [n] scores), got shape {arr.shape}")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} needs at least {min_samples} samples, got {arr.shape[0]} (shape {arr.shape})")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name} has {arr.shape[1]} features but the auditor was fitted on {dim} "
                         f"(shape {arr.shape})")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf values (shape {arr.shape})")
    return arr


def check_scores(name: str, scores: Any) -> np.ndarray:
    """``scores`` raveled to a non-empty 1-d numpy array without NaN (``ValueError`` naming ``name``
    otherwise); +-inf are kept, they rank."""
    arr = np.ravel(scores)
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one score, got an empty array")
    if arr.dtype.kind in "fc" and np.isnan(arr).any():
        raise ValueError(f"{name} contains {int(np.isnan(arr).sum())} NaN score(s) (of {arr.size}); NaN has "
                         "no rank")
    return arr


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """Area under the ROC curve for "score is higher on ``positive``" (Mann-Whitney, ties count 1/2).

    Both score sets must be non-empty and free of NaN (``ValueError`` otherwise).
    """
    pos, neg = check_scores("positive", positive), check_scores("negative", negative)
    ranks = rankdata(np.concatenate([pos, neg]))
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


@dataclass(frozen=True, kw_only=True)
class AuditResult:
    """One audit of a forget set.

    Attributes:
        method: the auditor's name (e.g. ``"smi-mmd"``, ``"mia-loss"``, ``"lira-offline"``).
        forgetting_rate: estimated non-member share of the forget set, clipped to [0, 1]; NaN when the
            references are not separable (then ``low = 0``, ``high = 1``): SMI's gate, ThresholdMIA's AUC <= 0.5,
            any debiased MIA whose references are called non-member equally often. SVCMIA, LiRA and RMIA still
            return their rate with ``identifiable=False`` when their AUC is <= 0.5.
        low, high: the bootstrap range at the auditor's ``alpha`` (percentile; SMI's ``interval`` may choose
            basic or BCa).
        raw_rate: the unclipped estimate (SMI) or the un-debiased share called non-member (MIAs).
        residual: goodness of fit, ``MMD(F, mixture) / MMD(M, N)`` (SMI; NaN for MIAs). Large values mean the
            forget set is not a mixture of the references (misspecification, "alignment bias").
        auc: how separable members and non-members are under the auditor's score (0.5 = not at all).
        mmd2, p_value: MMD^2(M, N) and its permutation-test p-value (SMI; NaN for MIAs).
        identifiable: whether the separability gate passed (SMI: permutation test, witness AUC and range width).
        n_forget, n_member, n_nonmember: sizes used; seconds: wall time of ``estimate``.
    """

    method: str
    forgetting_rate: float
    low: float
    high: float
    raw_rate: float
    residual: float = math.nan
    auc: float = math.nan
    mmd2: float = math.nan
    p_value: float = math.nan
    identifiable: bool = True
    n_forget: int = 0
    n_member: int = 0
    n_nonmember: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN stays a float; ``json.dumps`` writes it as ``NaN``)."""
        return {k: (float(v) if isinstance(v, float | np.floating) else v) for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditResult:
        """Inverse of :meth:`to_dict`; unknown keys raise ``TypeError``."""
        return cls(**data)


def resample_counts(rng: np.random.Generator, n: int, replicates: int) -> np.ndarray:
    """Multinomial bootstrap counts ``[n, replicates]``: how often each point is drawn in ``n`` draws."""
    return resample_count_rows(rng, n, replicates).T.astype(float)


def resample_count_rows(rng: np.random.Generator, n: int, replicates: int) -> np.ndarray:
    """The same draws as :func:`resample_counts`, one row per replicate: ``int64 [replicates, n]``."""
    draws = rng.integers(0, n, size=(replicates, n)) + n * np.arange(replicates)[:, None]
    return np.bincount(draws.ravel(), minlength=n * replicates).reshape(replicates, n)
