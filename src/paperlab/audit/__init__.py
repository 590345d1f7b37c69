"""Unlearning audits (arXiv 2602.01150, SMI): an SMI-style forgetting-rate estimator (our reconstruction),
membership-inference baselines turned into rate estimates, unlearning methods and small CPU models.

Registries: ``ESTIMATORS`` (SMI's mixture-proportion estimators, ``estimators``) and ``AUDITORS`` (named
auditors with what they read, ``registry``). :func:`audit_unlearning` runs the recommended audit of a model end
to end (``recipe``). Import is light (no torch): the names below load their submodule on
first use (PEP 562), so the experiment configs can name auditors without loading the models. The unlearning
methods live in ``unlearning`` (entry point :func:`unlearn`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paperlab._lazy import lazy_exports

if TYPE_CHECKING:  # the same names, statically visible to type checkers and the import-structure test
    from paperlab.audit.base import AuditResult, NotSeparableWarning, as_features, auc
    from paperlab.audit.estimators import ESTIMATORS, MixtureEstimator, get_estimator
    from paperlab.audit.features import extract_features
    from paperlab.audit.lira import RMIA, LiRA
    from paperlab.audit.mia import (
        SVCMIA,
        AttackData,
        ThresholdMIA,
        balanced_threshold,
        detection_threshold,
        membership_score,
    )
    from paperlab.audit.models import MLP, LeNet, TrainConfig, accuracy, fit_classifier, make_model, predict_logits
    from paperlab.audit.recipe import audit_unlearning
    from paperlab.audit.registry import AUDITORS, AuditorSpec, get_auditor
    from paperlab.audit.smi import SMI
    from paperlab.audit.unlearning import METHODS, UnlearnConfig, saliency_mask, unlearn
    from paperlab.exceptions import NotFittedError

_EXPORTS = {
    **dict.fromkeys(("AuditResult", "NotSeparableWarning", "as_features", "auc"), "paperlab.audit.base"),
    **dict.fromkeys(("ESTIMATORS", "MixtureEstimator", "get_estimator"), "paperlab.audit.estimators"),
    "extract_features": "paperlab.audit.features",
    **dict.fromkeys(("RMIA", "LiRA"), "paperlab.audit.lira"),
    **dict.fromkeys(("SVCMIA", "AttackData", "ThresholdMIA", "balanced_threshold", "detection_threshold",
                     "membership_score"), "paperlab.audit.mia"),
    **dict.fromkeys(("MLP", "LeNet", "TrainConfig", "accuracy", "fit_classifier", "make_model", "predict_logits"),
                    "paperlab.audit.models"),
    "audit_unlearning": "paperlab.audit.recipe",
    **dict.fromkeys(("AUDITORS", "AuditorSpec", "get_auditor"), "paperlab.audit.registry"),
    "SMI": "paperlab.audit.smi",
    **dict.fromkeys(("METHODS", "UnlearnConfig", "saliency_mask", "unlearn"), "paperlab.audit.unlearning"),
    "NotFittedError": "paperlab.exceptions",
}

__all__ = [
    "AUDITORS", "ESTIMATORS", "METHODS", "MLP", "RMIA", "SMI", "SVCMIA", "AttackData", "AuditResult", "AuditorSpec",
    "LeNet", "LiRA", "MixtureEstimator", "NotFittedError", "NotSeparableWarning", "ThresholdMIA", "TrainConfig",
    "UnlearnConfig", "accuracy", "as_features", "auc", "audit_unlearning", "balanced_threshold",
    "detection_threshold", "extract_features", "fit_classifier",
    "get_auditor", "get_estimator", "make_model", "membership_score", "predict_logits", "saliency_mask",
    "unlearn",
]


__getattr__, __dir__ = lazy_exports("paperlab.audit", _EXPORTS, globals())
