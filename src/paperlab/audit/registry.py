"""Named auditors of the unlearning audits (arXiv 2602.01150): one registry entry each, fields instead of names.

An :class:`AuditorSpec` says what the auditor is fitted on (``features``), which shadow models it needs and
how to build it: ``factory(**params, n_bootstrap=..., seed=...)``. Nothing reads meaning out of a name. Import
is light (no torch): a factory imports its class when called. A new auditor is one entry in :data:`AUDITORS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from paperlab._validate import check_choice

if TYPE_CHECKING:
    from paperlab.audit.lira import RMIA, LiRA
    from paperlab.audit.mia import SVCMIA, ThresholdMIA
    from paperlab.audit.smi import SMI

    Auditor = SMI | ThresholdMIA | SVCMIA | LiRA | RMIA

__all__ = ["AUDITORS", "FAMILIES", "FEATURES", "SHADOWS", "AuditorSpec", "get_auditor"]

FAMILIES = ("smi", "mia")
FEATURES = ("penultimate", "scaled_confidence", "logits")
_FAMILY_FEATURES = {"smi": ("penultimate", "scaled_confidence"), "mia": ("logits",)}
SHADOWS = ("none", "offline", "online")


@dataclass(frozen=True, kw_only=True, eq=False)
class AuditorSpec:
    """How one named auditor is built and what it reads from the audited model.

    Attributes:
        family: ``smi`` (the training-free :class:`~paperlab.audit.SMI`) or ``mia`` (a membership-inference
            baseline).
        features: what ``fit`` and ``estimate`` receive. SMI: ``penultimate`` features ``[n, d]``
            (:func:`~paperlab.audit.extract_features`) or ``scaled_confidence`` scores ``[n]`` (the logit-scaled
            true-class confidence, a :func:`~paperlab.audit.membership_score` kind); MIA: ``logits``
            (:class:`~paperlab.audit.AttackData`, with shadow logits when ``shadows`` is not ``none``).
        shadows: shadow models needed: ``none``, ``offline`` (all OUT) or ``online`` (IN and OUT).
        limit_shadows: only the first few offline shadows serve, as reference models (RMIA; how many is the
            caller's choice).
        raw: the rate is the raw share of the forget set called non-member, not corrected by the references'
            error rates (the audits whose optimism the study measures).
        factory: builds the unfitted auditor as ``factory(**params, n_bootstrap=..., seed=...)``.
        params: the auditor's own options (e.g. ``{"estimator": "w1"}``); read-only.
    """

    family: str
    features: str
    shadows: str = "none"
    limit_shadows: bool = False
    raw: bool = False
    factory: Callable[..., Auditor]
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice("family", self.family, FAMILIES)
        check_choice("features", self.features, FEATURES)
        if self.features not in _FAMILY_FEATURES[self.family]:
            raise ValueError(f"features={self.features!r} does not fit family={self.family!r}; choose one of "
                             f"{list(_FAMILY_FEATURES[self.family])}")
        check_choice("shadows", self.shadows, SHADOWS)
        if self.limit_shadows and self.shadows != "offline":
            raise ValueError(f"limit_shadows=True needs shadows='offline', got shadows={self.shadows!r}")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def build(self, *, n_bootstrap: int, seed: int) -> Auditor:
        """The unfitted auditor with ``n_bootstrap`` bootstrap replicates for its range, seeded by ``seed``."""
        return self.factory(**self.params, n_bootstrap=n_bootstrap, seed=seed)


def _smi(*, estimator: str, n_bootstrap: int, seed: int) -> SMI:
    from paperlab.audit.smi import SMI

    return SMI(estimator=estimator, n_bootstrap=n_bootstrap, seed=seed)


def _threshold(*, score: str, fpr: float | None = None, debias: bool = False, n_bootstrap: int,
               seed: int) -> ThresholdMIA:
    from paperlab.audit.mia import ThresholdMIA

    return ThresholdMIA(score=score, fpr=fpr, debias=debias, n_bootstrap=n_bootstrap, seed=seed)


def _svc(*, n_bootstrap: int, seed: int) -> SVCMIA:
    from paperlab.audit.mia import SVCMIA

    return SVCMIA(n_bootstrap=n_bootstrap, seed=seed)


def _lira(*, online: bool, n_bootstrap: int, seed: int) -> LiRA:
    from paperlab.audit.lira import LiRA

    return LiRA(online=online, n_bootstrap=n_bootstrap, seed=seed)


def _rmia(*, n_bootstrap: int, seed: int) -> RMIA:
    from paperlab.audit.lira import RMIA

    return RMIA(n_bootstrap=n_bootstrap, seed=seed)


def _smi_on(features: str, estimator: str) -> AuditorSpec:
    return AuditorSpec(family="smi", features=features, factory=_smi, params={"estimator": estimator})


def _threshold_mia(score: str, *, debias: bool = False, fpr: float | None = None) -> AuditorSpec:
    return AuditorSpec(family="mia", features="logits", raw=not debias, factory=_threshold,
                       params={"score": score, "debias": debias, "fpr": fpr})


# The plain-dict registry, in the study's table order. SMI runs on penultimate features (our default) or on the
# 1-d logit-scaled true-class confidence (a class-aware grey-box feature, the ``-score`` variants).
AUDITORS: dict[str, AuditorSpec] = {
    "smi-mmd": _smi_on("penultimate", "mmd"),
    "smi-energy": _smi_on("penultimate", "energy"),
    "smi-em": _smi_on("penultimate", "em"),
    "smi-mmd-score": _smi_on("scaled_confidence", "mmd"),
    "smi-w1-score": _smi_on("scaled_confidence", "w1"),
    "mia-loss": _threshold_mia("loss"),
    "mia-confidence": _threshold_mia("confidence"),
    "mia-entropy": _threshold_mia("entropy"),
    "mia-m_entropy": _threshold_mia("m_entropy"),
    "mia-loss-debiased": _threshold_mia("loss", debias=True),
    "mia-loss-fpr5": _threshold_mia("loss", fpr=0.05),  # a detection rule: at most 5% of non-members flagged
    "svc-mia": AuditorSpec(family="mia", features="logits", raw=True, factory=_svc),
    "lira-offline": AuditorSpec(family="mia", features="logits", shadows="offline", raw=True, factory=_lira,
                                params={"online": False}),
    "lira-online": AuditorSpec(family="mia", features="logits", shadows="online", raw=True, factory=_lira,
                               params={"online": True}),
    "rmia": AuditorSpec(family="mia", features="logits", shadows="offline", limit_shadows=True, raw=True,
                        factory=_rmia),
}


def get_auditor(name: str) -> AuditorSpec:
    """``AUDITORS[name]``; an unknown name raises ``ValueError`` listing the valid ones."""
    check_choice("auditor", name, AUDITORS)
    return AUDITORS[name]
