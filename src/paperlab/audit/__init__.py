"""Unlearning audits (arXiv 2602.01150, SMI): an SMI-style forgetting-rate estimator (our reconstruction),
membership-inference baselines turned into rate estimates, unlearning methods and small CPU models."""

from paperlab.audit.base import AuditResult, NotFittedError, NotSeparableWarning, as_features, auc
from paperlab.audit.features import extract_features
from paperlab.audit.lira import RMIA, LiRA
from paperlab.audit.mia import SVCMIA, AttackData, ThresholdMIA, balanced_threshold, membership_score
from paperlab.audit.models import MLP, LeNet, TrainConfig, accuracy, fit_classifier, make_model, predict_logits
from paperlab.audit.smi import ESTIMATORS, SMI
from paperlab.audit.unlearn import METHODS, UnlearnConfig, saliency_mask, unlearn

__all__ = [
    "ESTIMATORS", "METHODS", "MLP", "RMIA", "SMI", "SVCMIA", "AttackData", "AuditResult", "LeNet", "LiRA",
    "NotFittedError", "NotSeparableWarning", "ThresholdMIA", "TrainConfig", "UnlearnConfig", "accuracy",
    "as_features", "auc", "balanced_threshold", "extract_features", "fit_classifier", "make_model",
    "membership_score", "predict_logits", "saliency_mask", "unlearn",
]
