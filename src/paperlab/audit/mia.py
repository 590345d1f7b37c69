"""Membership-inference baselines turned into forgetting-rate estimates (our baselines for arXiv 2602.01150).

Each attack gives a per-example *membership score* (higher = more member-like) and a decision threshold; the
forgetting rate is the share of the forget set called non-member (``raw_rate``), optionally debiased as
``(rate - r_M) / (r_N - r_M)`` with ``r_M``, ``r_N`` the shares of the member / non-member references called
non-member (the ACC/DUCI correction). Attacks:

- :class:`ThresholdMIA`: loss, confidence, entropy or modified entropy (Song & Mittal 2021); the threshold
  maximises balanced accuracy on the references.
- :class:`SVCMIA`: the "MIA-efficacy" of SalUn-style papers: ``SVC(C=3, kernel="rbf", gamma="auto")`` on the
  true-class confidence, trained on member (retain) vs non-member (test) outputs of the audited model, classes
  balanced by subsampling; rate = share of F predicted non-member.
- :class:`LiRA` (Carlini et al. 2022) with K shadow models: offline (OUT shadows; one-sided p-value of the
  logit-scaled confidence under a Gaussian, "not detected" when p > 0.05) or online (IN and OUT Gaussians,
  member when the likelihood ratio exceeds 1). Global variance by default (few shadows).
- :class:`RMIA` (Zarifzadeh et al. 2024): ``Pr(x|theta) / Pr(x)`` with ``Pr(x)`` from OUT references via
  ``((1 + a)/2) P_out + (1 - a)/2`` (a = 0.3), compared with the non-member references as population ``z``;
  threshold on M vs N.

Inputs are :class:`AttackData` (or ``(logits, labels)`` tuples for attacks that need no shadows).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from paperlab._validate import check_bool, check_choice, check_in_range, check_int
from paperlab.audit.base import (
    MIN_SAMPLES,
    AuditResult,
    NotSeparableWarning,
    Params,
    auc,
    check_scores,
    resample_counts,
)
from paperlab.exceptions import NotFittedError

__all__ = ["SCORES", "SVCMIA", "AttackData", "ThresholdMIA", "balanced_threshold", "detection_threshold",
           "membership_score", "scaled_confidence"]


@dataclass(frozen=True, eq=False)
class AttackData:
    """Model outputs on a set of examples.

    Attributes:
        logits: ``[n, C]`` audited-model logits; labels: ``[n]`` true classes.
        shadow_logits: ``[K, n, C]`` logits of K shadow/reference models on the same examples (LiRA, RMIA).
        shadow_in: ``[K, n]`` bool, whether each example was in each shadow's training set (online LiRA).
    """

    logits: Any
    labels: Any
    shadow_logits: Any = None
    shadow_in: Any = None


def _np(x: Any, dtype: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype)


def _logits(name: str, logits: Any) -> np.ndarray:
    """``logits`` as a float64 array; bool, complex, text and other non-numeric input raise ``TypeError``."""
    if logits is None:
        raise TypeError(f"{name} must be a numeric array or tensor of logits, got None")
    if isinstance(logits, torch.Tensor) and (logits.is_complex() or logits.dtype == torch.bool):
        raise TypeError(f"{name} must be real-valued logits, got a {logits.dtype} tensor")
    try:
        raw = _np(logits, None)
    except (TypeError, ValueError) as err:  # ragged nested lists
        raise TypeError(f"{name} must be a numeric array or tensor of logits, got {type(logits).__name__}") from err
    if raw.dtype.kind in "bc":
        raise TypeError(f"{name} must be real-valued logits, got dtype {raw.dtype} "
                        f"({'bool' if raw.dtype.kind == 'b' else 'complex'} values)")
    if raw.dtype.kind not in "iuf" and not _numeric(raw):
        raise TypeError(f"{name} must be a numeric array or tensor of logits, got {type(logits).__name__} "
                        f"{str(logits)[:40]!r} (dtype {raw.dtype})")
    return np.asarray(raw, dtype=np.float64)


def _labels(name: str, labels: Any) -> np.ndarray:
    """``labels`` as int64 class ids; floats must be whole numbers (a cast would truncate 3.5 to class 3)."""
    if labels is None:
        raise TypeError(f"{name} must be integer class ids, got None")
    raw = _np(labels, None)
    if raw.dtype.kind == "c" or (raw.dtype.kind not in "iubf" and not _numeric(raw)):
        raise TypeError(f"{name} must be integer class ids, got dtype {raw.dtype} (e.g. {raw.ravel()[:3].tolist()})")
    if raw.dtype.kind not in "iub":
        values = raw.astype(np.float64)
        bad = values[~(np.isfinite(values) & (values == np.round(values)))]
        if bad.size:
            raise ValueError(f"{name} must be integer class ids, got {bad.size} non-integer values such as "
                             f"{bad[:3].tolist()}")
    return raw.astype(np.int64)


def _numeric(raw: np.ndarray) -> bool:
    """Whether an object array converts to float64 (numbers in an object array, not text)."""
    if raw.dtype.kind != "O":
        return False
    try:
        raw.astype(np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _as_attack(name: str, data: Any, *, need_shadows: bool = False) -> AttackData:
    if isinstance(data, tuple) and len(data) == 2:
        data = AttackData(*data)
    if not isinstance(data, AttackData):
        raise TypeError(f"{name} must be an AttackData or a (logits, labels) tuple, got {type(data).__name__}")
    logits, labels = _logits(f"{name}.logits", data.logits), _labels(f"{name}.labels", data.labels)
    if logits.ndim != 2 or labels.shape != (len(logits),):
        raise ValueError(f"{name}: logits must be [n, C] and labels [n], got {logits.shape} and {labels.shape}")
    if len(logits) < MIN_SAMPLES:
        raise ValueError(f"{name} needs at least {MIN_SAMPLES} examples, got {len(logits)}")
    if not np.isfinite(logits).all():
        raise ValueError(f"{name}.logits contains NaN or inf values (shape {logits.shape})")
    if labels.min() < 0 or labels.max() >= logits.shape[1]:
        raise ValueError(f"{name}.labels must lie in [0, {logits.shape[1]}), got range "
                         f"[{labels.min()}, {labels.max()}]")
    shadow = shadow_in = None
    if data.shadow_logits is not None:
        shadow = _logits(f"{name}.shadow_logits", data.shadow_logits)
        if shadow.ndim != 3 or shadow.shape[1:] != logits.shape:
            raise ValueError(f"{name}.shadow_logits must be [K, {len(logits)}, {logits.shape[1]}], got {shadow.shape}")
        if not np.isfinite(shadow).all():
            raise ValueError(f"{name}.shadow_logits contains NaN or inf values")
        if data.shadow_in is not None:
            shadow_in = _np(data.shadow_in, bool)
            if shadow_in.shape != shadow.shape[:2]:
                raise ValueError(f"{name}.shadow_in must be {shadow.shape[:2]}, got {shadow_in.shape}")
    elif need_shadows:
        raise ValueError(f"{name}.shadow_logits is required by this attack ([K, n, C] shadow-model logits)")
    return AttackData(logits, labels, shadow, shadow_in)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _true_class(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return np.take_along_axis(values, np.broadcast_to(labels[..., None], values.shape[:-1] + (1,)), -1)[..., 0]


def scaled_confidence(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """LiRA's ``log(p_y / (1 - p_y))`` computed stably as ``z_y - logsumexp_{c != y} z_c``; ``logits[..., 0]``."""
    z_y = _true_class(logits, labels)
    others = logits.copy()
    np.put_along_axis(others, np.broadcast_to(labels[..., None], logits.shape[:-1] + (1,)), -np.inf, -1)
    top = others.max(-1, keepdims=True)
    return z_y - (top[..., 0] + np.log(np.exp(others - top).sum(-1)))


SCORES = ("loss", "confidence", "entropy", "m_entropy", "scaled_confidence")


def membership_score(logits: Any, labels: Any, *, kind: str) -> np.ndarray:
    """Per-example membership score, higher = more member-like.

    ``loss``: minus cross-entropy; ``confidence``: ``p_y``; ``entropy``: minus prediction entropy;
    ``m_entropy``: minus Song & Mittal's ``-(1 - p_y) log p_y - sum_{c != y} p_c log(1 - p_c)``;
    ``scaled_confidence``: LiRA's ``log(p_y / (1 - p_y))``.
    Args: logits ``[n, C]`` (real numbers; NaN/inf propagate), labels ``[n]`` class ids in ``[0, C)``
    (``scaled_confidence`` needs ``C >= 2``). Returns ``[n]``. Other shapes, dtypes and ids raise.
    """
    check_choice("kind", kind, SCORES)
    z, y = _check_scored(logits, labels, kind)
    if kind == "scaled_confidence":
        return scaled_confidence(z, y)
    logp = _log_softmax(z)
    labels = y
    p = np.exp(logp)
    lp_y = _true_class(logp, labels)
    if kind == "loss":
        return lp_y
    if kind == "confidence":
        return np.exp(lp_y)
    if kind == "entropy":
        return (p * logp).sum(-1)
    log1m = np.log(np.clip(1.0 - p, 1e-300, None))
    p_y = np.exp(lp_y)
    rest = (p * log1m).sum(-1) - p_y * _true_class(log1m, labels)
    return (1.0 - p_y) * lp_y + rest


def _check_scored(logits: Any, labels: Any, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``(logits [n, C] float64, labels [n] int64)`` checked for :func:`membership_score`."""
    z = _logits("logits", logits)
    if z.ndim != 2:
        raise ValueError(f"logits must be [n, C] (2 dims: examples, classes), got shape {z.shape}")
    if z.shape[1] < (2 if kind == "scaled_confidence" else 1):
        need = ("kind='scaled_confidence' needs at least 2 classes (log(p_y / (1 - p_y)) has no other class "
                "with one)") if kind == "scaled_confidence" else "logits must have at least one class (C >= 1)"
        raise ValueError(f"{need}; got logits of shape {z.shape}")
    y = _labels("labels", labels)
    if y.shape != (len(z),):
        raise ValueError(f"labels must be [n] with n = {len(z)} (one per row of logits {z.shape}), got shape "
                         f"{y.shape}")
    if y.size and (y.min() < 0 or y.max() >= z.shape[1]):
        raise ValueError(f"labels must be class ids in [0, {z.shape[1]}) for logits with {z.shape[1]} classes, got "
                         f"range [{y.min()}, {y.max()}]")
    return z, y


def balanced_threshold(member: np.ndarray, nonmember: np.ndarray) -> float:
    """Threshold ``t`` maximising balanced accuracy of "member iff score >= t" (ties: the smallest such t).

    Both score sets must be non-empty and free of NaN (``ValueError`` otherwise).
    """
    member, nonmember = check_scores("member", member), check_scores("nonmember", nonmember)
    cand = np.unique(np.concatenate([member, nonmember]))
    sm, sn = np.sort(member), np.sort(nonmember)
    tpr = 1.0 - np.searchsorted(sm, cand, side="left") / len(sm)
    tnr = np.searchsorted(sn, cand, side="left") / len(sn)
    return float(cand[int(np.argmax(tpr + tnr))])


def detection_threshold(nonmember: np.ndarray, *, fpr: float) -> float:
    """The smallest threshold ``t`` at which "member iff score >= t" calls at most ``fpr`` of ``nonmember``
    members: a detection rule at a fixed false-positive rate, as a membership test is used in practice."""
    sn = np.sort(check_scores("nonmember", nonmember))
    check_in_range("fpr", fpr, 0.0, 1.0, low_open=True, high_open=True)
    k = int(math.floor(fpr * len(sn) + 1e-9))  # non-members allowed at or above t
    return float(np.nextafter(sn[len(sn) - k - 1], np.inf))


class _ScoreMIA(Params):
    """Shared machinery: membership scores, threshold, debiasing and the bootstrap range."""

    _need_shadows = False
    _abstain_unless_separable = False  # True: no rate (NaN, range [0, 1]) when the scores' AUC on M vs N <= 0.5

    def __init__(self, *, rule: str, debias: bool, n_bootstrap: int, alpha: float, seed: int) -> None:
        self.rule, self.debias, self.n_bootstrap, self.alpha, self.seed = rule, debias, n_bootstrap, alpha, seed

    @property
    def name(self) -> str:
        return "mia"

    def _check_params(self) -> None:
        raise NotImplementedError

    def _check_common(self) -> None:
        check_choice("rule", self.rule, ("fixed", "balanced"))
        check_int("n_bootstrap", self.n_bootstrap, minimum=0)
        check_in_range("alpha", self.alpha, 0.0, 1.0, low_open=True, high_open=True)
        check_bool("debias", self.debias)
        check_int("seed", self.seed, minimum=0)

    def _fit_state(self, member: AttackData, nonmember: AttackData) -> None:
        """Attack-specific fitting (shadow statistics, classifiers); default none."""

    def _scores(self, data: AttackData) -> np.ndarray:
        raise NotImplementedError

    def _fixed_threshold(self) -> float:
        raise ValueError(f"{type(self).__name__} has no fixed threshold; use rule='balanced'")

    def _threshold(self, s_m: np.ndarray, s_n: np.ndarray) -> float:
        return self._fixed_threshold() if self.rule == "fixed" else balanced_threshold(s_m, s_n)

    def fit(self, member: Any, nonmember: Any) -> _ScoreMIA:
        """Fit on member (retain) and non-member (held-out) outputs of the audited model; returns self."""
        self._check_params()
        m = _as_attack("member", member, need_shadows=self._need_shadows)
        n = _as_attack("nonmember", nonmember, need_shadows=self._need_shadows)
        if m.logits.shape[1] != n.logits.shape[1]:
            raise ValueError(f"member and nonmember have {m.logits.shape[1]} and {n.logits.shape[1]} classes")
        start = time.perf_counter()
        self._fit_state(m, n)
        s_m, s_n = self._scores(m), self._scores(n)
        self.threshold_ = self._threshold(s_m, s_n)
        self.out_m_, self.out_n_ = (s_m < self.threshold_).astype(float), (s_n < self.threshold_).astype(float)
        self.auc_ = auc(s_m, s_n)
        self.n_classes_ = m.logits.shape[1]
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def estimate(self, forget: Any) -> AuditResult:
        """Share of the forget set called non-member (debiased if ``debias``), with a bootstrap range."""
        if not hasattr(self, "fit_seconds_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(member, nonmember)")
        start = time.perf_counter()
        f = _as_attack("forget", forget, need_shadows=self._need_shadows)
        if f.logits.shape[1] != self.n_classes_:
            raise ValueError(f"forget has {f.logits.shape[1]} classes, the attack was fitted on {self.n_classes_}")
        out_f = (self._scores(f) < self.threshold_).astype(float)
        rng = np.random.default_rng([self.seed, 11])
        sets = [(out_f, None), (self.out_m_, None), (self.out_n_, None)]
        rates = [np.array([o.mean()]) for o, _ in sets]
        if self.n_bootstrap:
            boot = [resample_counts(rng, len(o), self.n_bootstrap).T @ o / len(o) for o, _ in sets]
            rates = [np.concatenate([r, b]) for r, b in zip(rates, boot, strict=True)]
        raw = rates[0]
        est = raw
        if self.debias:
            gap = rates[2] - rates[1]
            est = np.where(np.abs(gap) > 1e-12, (raw - rates[1]) / np.where(gap == 0, 1, gap), np.nan)
        rate = float(np.clip(est[0], 0.0, 1.0))
        low = high = rate
        reps = np.clip(est[1:], 0.0, 1.0)
        reps = reps[np.isfinite(reps)]
        identifiable = bool(self.auc_ > 0.5) and not math.isnan(rate)
        if math.isnan(rate):  # debiased, and members and non-members are called non-member equally often
            warnings.warn(f"members and non-members are not separable: {self.name} calls {rates[1][0]:.3g} of the "
                          f"members and {rates[2][0]:.3g} of the non-members non-member; no forgetting rate is "
                          "returned", NotSeparableWarning, stacklevel=2)
            low, high = 0.0, 1.0
        elif not identifiable and self._abstain_unless_separable:  # AuditResult's NaN for non-separable
            warnings.warn(f"members and non-members are not separable: {self.name}'s scores separate them with "
                          f"AUC {self.auc_:.3g} <= 0.5; no forgetting rate is returned (raw_rate keeps the share "
                          "called non-member)", NotSeparableWarning, stacklevel=2)
            rate, low, high = math.nan, 0.0, 1.0
        elif self.n_bootstrap:  # no finite replicate: the uninformative range
            low, high = (float(q) for q in np.quantile(reps, [self.alpha / 2, 1 - self.alpha / 2])) if len(
                reps) else (0.0, 1.0)
        return AuditResult(method=self.name, forgetting_rate=rate, low=low, high=high, raw_rate=float(raw[0]),
                           auc=self.auc_, identifiable=identifiable,
                           n_forget=len(out_f),
                           n_member=len(self.out_m_), n_nonmember=len(self.out_n_),
                           seconds=time.perf_counter() - start)


class ThresholdMIA(_ScoreMIA):
    """Threshold attack on ``loss``, ``confidence``, ``entropy`` or ``m_entropy``: the balanced-accuracy threshold,
    or with ``fpr`` a detection rule calling at most that share of the non-member references members
    (:func:`detection_threshold`).

    When the scores do not separate the references (AUC on M vs N <= 0.5, e.g. identical references or a single
    class) no rate is returned: NaN with the range [0, 1] and a :class:`NotSeparableWarning`, as
    :class:`AuditResult` documents; ``raw_rate`` keeps the share of the forget set called non-member.
    """

    _abstain_unless_separable = True

    def __init__(self, *, score: str = "loss", fpr: float | None = None, debias: bool = False,
                 n_bootstrap: int = 200, alpha: float = 0.05, seed: int = 0) -> None:
        super().__init__(rule="balanced", debias=debias, n_bootstrap=n_bootstrap, alpha=alpha, seed=seed)
        self.score, self.fpr = score, fpr

    @property
    def name(self) -> str:
        return (f"mia-{self.score}" + (f"-fpr{100 * self.fpr:g}" if self.fpr is not None else "")
                + ("-debiased" if self.debias else ""))

    def _check_params(self) -> None:
        self._check_common()
        check_choice("score", self.score, SCORES)
        check_choice("rule", self.rule, ("balanced",))
        if self.fpr is not None:
            check_in_range("fpr", self.fpr, 0.0, 1.0, low_open=True, high_open=True)

    def _threshold(self, s_m: np.ndarray, s_n: np.ndarray) -> float:
        return balanced_threshold(s_m, s_n) if self.fpr is None else detection_threshold(s_n, fpr=self.fpr)

    def _scores(self, data: AttackData) -> np.ndarray:
        return membership_score(data.logits, data.labels, kind=self.score)


class SVCMIA(_ScoreMIA):
    """SalUn's "MIA-efficacy": an RBF SVC on true-class confidence, member vs non-member; needs scikit-learn."""

    def __init__(self, *, C: float = 3.0, debias: bool = False, n_bootstrap: int = 200, alpha: float = 0.05,
                 seed: int = 0) -> None:
        super().__init__(rule="fixed", debias=debias, n_bootstrap=n_bootstrap, alpha=alpha, seed=seed)
        self.C = C

    name = "svc-mia"

    def _check_params(self) -> None:
        self._check_common()
        check_in_range("C", self.C, 0.0, math.inf, low_open=True, high_open=True)

    def _fit_state(self, member: AttackData, nonmember: AttackData) -> None:
        try:
            from sklearn.svm import SVC
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError("SVCMIA needs scikit-learn: pip install 'paperlab[dev]' (or scikit-learn)") from err
        cm = membership_score(member.logits, member.labels, kind="confidence")
        cn = membership_score(nonmember.logits, nonmember.labels, kind="confidence")
        rng = np.random.default_rng(self.seed)
        k = min(len(cm), len(cn))  # balance the classes as SalUn does (subsample the larger side)
        cm, cn = rng.permutation(cm)[:k], rng.permutation(cn)[:k]
        x = np.concatenate([cm, cn])[:, None]
        y = np.concatenate([np.ones(k), np.zeros(k)])
        self.svc_ = SVC(C=self.C, kernel="rbf", gamma="auto").fit(x, y)

    def _scores(self, data: AttackData) -> np.ndarray:
        conf = membership_score(data.logits, data.labels, kind="confidence")
        return self.svc_.decision_function(conf[:, None])

    def _fixed_threshold(self) -> float:
        return 0.0
