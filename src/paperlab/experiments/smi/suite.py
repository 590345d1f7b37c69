"""Run every auditor on one audited model: the shared machinery of the SMI experiments (arXiv 2602.01150).

An :class:`AuditSets` names global index arrays into one dataset ``(x, y)``: member references (a retain
subset), non-member references (held-out data) and the forget set. :func:`train_shadows` trains the shadow
models LiRA and RMIA need (their cost is the "setup" time); :func:`run_auditors` returns one
:class:`~paperlab.audit.AuditResult` per auditor name plus its setup seconds. Auditors are entries of
:data:`paperlab.audit.registry.AUDITORS`: what each reads and which shadows it needs are fields there.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from paperlab._validate import check_int
from paperlab.audit.base import AuditResult, NotSeparableWarning
from paperlab.audit.features import extract_features
from paperlab.audit.mia import AttackData, membership_score
from paperlab.audit.models import TrainConfig, fit_classifier, predict_logits
from paperlab.audit.registry import AUDITORS, AuditorSpec, get_auditor
from paperlab.audit.scratch import reuse_scratch
from paperlab.audit.smi import SMI

__all__ = ["AuditRun", "AuditSets", "Shadows", "run_auditors", "train_shadows"]


@dataclass(frozen=True, kw_only=True)
class AuditSets:
    """Global index arrays (``int64 [n]``) into the dataset: member refs, non-member refs, forget set."""

    member: np.ndarray
    nonmember: np.ndarray
    forget: np.ndarray


@dataclass(kw_only=True)
class Shadows:
    """K shadow models and the global indices each was trained on; ``seconds`` / ``cpu_seconds`` are the
    training's wall-clock and process CPU time."""

    models: list[nn.Module]
    trained_on: list[np.ndarray]
    seconds: float
    cpu_seconds: float = 0.0
    # shadow logits and IN masks per audited index set: they do not depend on the audited model, so an
    # auditor computes them once per dataset, as LiRA / RMIA are run in practice
    cache: dict[bytes, tuple[torch.Tensor, np.ndarray]] = field(default_factory=dict, repr=False)

    def first(self, k: int) -> Shadows:
        """The first ``k`` shadows, with the proportional share of the training time."""
        share = min(k, len(self.models)) / len(self.models)
        return Shadows(models=self.models[:k], trained_on=self.trained_on[:k], seconds=self.seconds * share,
                       cpu_seconds=self.cpu_seconds * share)


@dataclass(frozen=True, kw_only=True)
class AuditRun:
    """One auditor's result and cost: shadow-training setup and the audit itself, wall and process CPU seconds.

    The audit covers logit / feature extraction, ``fit`` and ``estimate`` (bootstrap included); SMI and
    threshold attacks have no setup.
    """

    result: AuditResult
    setup_s: float
    setup_cpu_s: float
    audit_s: float
    audit_cpu_s: float


def train_shadows(x: torch.Tensor, y: torch.Tensor, *, pool: np.ndarray, k: int, subset: int,
                  make_model: Callable[[int], nn.Module], config: TrainConfig, seed: int) -> Shadows:
    """Train ``k`` shadows, each on a seeded random ``subset``-sized draw from the global indices ``pool``.

    Offline LiRA / RMIA: ``pool`` excludes every audited example (all shadows are OUT). Online LiRA: ``pool``
    includes them, and ``subset = len(pool) // 2`` makes each example IN for about half of the shadows.
    ``make_model(i)`` returns the i-th freshly initialised model.
    """
    check_int("k", k, minimum=1)
    check_int("subset", subset, minimum=1)
    if subset > len(pool):
        raise ValueError(f"subset={subset} exceeds the pool of {len(pool)} examples")
    start, cpu = time.perf_counter(), time.process_time()
    rng = np.random.default_rng([seed, 31])
    models, sets = [], []
    for i in range(k):
        idx = np.sort(rng.permutation(pool)[:subset])
        models.append(fit_classifier(make_model(i), x[idx], y[idx], config=config, seed=seed * 1000 + i))
        sets.append(idx)
    return Shadows(models=models, trained_on=sets, seconds=time.perf_counter() - start,
                   cpu_seconds=time.process_time() - cpu)


def _attack_data(model, x, y, idx, shadows: Shadows | None) -> AttackData:
    logits = predict_logits(model, x[idx])
    if shadows is None:
        return AttackData(logits, y[idx])
    key = np.asarray(idx).tobytes()
    if key not in shadows.cache:
        shadows.cache[key] = (torch.stack([predict_logits(s, x[idx]) for s in shadows.models]),
                              np.stack([np.isin(idx, t) for t in shadows.trained_on]))
    sh, mask = shadows.cache[key]
    return AttackData(logits, y[idx], sh, mask)


def run_auditors(model: nn.Module, x: torch.Tensor, y: torch.Tensor, sets: AuditSets, *,
                 names: Sequence[str] = tuple(AUDITORS), offline: Shadows | None = None, online: Shadows | None = None,
                 rmia_refs: int = 4, n_bootstrap: int = 200, seed: int = 0) -> list[AuditRun]:
    """Audit ``model`` with each named auditor (keys of ``AUDITORS``), timing each audit (wall and process CPU)
    in this process.

    Returns:
        one :class:`AuditRun` per name, in order; its setup is the shadow-training time the auditor depends
        on (RMIA: the share of its ``rmia_refs`` shadows; 0 for SMI and threshold attacks). Non-separable
        audits keep their NaN rate (warning silenced).
    """
    specs = [get_auditor(n) for n in names]
    for name, spec in zip(names, specs, strict=True):
        if {"none": False, "offline": offline is None, "online": online is None}[spec.shadows]:
            raise ValueError(f"auditor {name!r} needs {spec.shadows} shadows: pass {spec.shadows}=train_shadows(...)")
    out: list[AuditRun] = []
    with reuse_scratch():  # SMI's kernel blocks reuse one set of buffers across the audits, freed at the end
        for name, spec in zip(names, specs, strict=True):
            start, cpu = time.perf_counter(), time.process_time()
            res, shadows = _audit(spec, model, x, y, sets, offline=offline, online=online, rmia_refs=rmia_refs,
                                  n_bootstrap=n_bootstrap, seed=seed)
            audit_cpu, wall = time.process_time() - cpu, time.perf_counter() - start
            out.append(AuditRun(result=_with_seconds(res, name, wall), audit_s=wall, audit_cpu_s=audit_cpu,
                                setup_s=shadows.seconds if shadows else 0.0,
                                setup_cpu_s=shadows.cpu_seconds if shadows else 0.0))
    return out


def _audit(spec: AuditorSpec, model: nn.Module, x: torch.Tensor, y: torch.Tensor, sets: AuditSets, *,
           offline: Shadows | None, online: Shadows | None, rmia_refs: int, n_bootstrap: int, seed: int
           ) -> tuple[AuditResult, Shadows | None]:
    parts = {"member": sets.member, "nonmember": sets.nonmember, "forget": sets.forget}
    auditor = spec.build(n_bootstrap=n_bootstrap, seed=seed)
    if spec.family == "smi":
        assert isinstance(auditor, SMI)  # the registry's family field says which class its factory builds
        feats: dict[str, Any]
        if spec.features == "penultimate":
            feats = {k: extract_features(model, x[v]) for k, v in parts.items()}
        else:  # a 1-d membership score of the audited model's logits
            feats = {k: membership_score(predict_logits(model, x[v]), y[v], kind=spec.features)
                     for k, v in parts.items()}
        auditor.fit(feats["member"], feats["nonmember"], member_labels=y[sets.member],
                    nonmember_labels=y[sets.nonmember])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotSeparableWarning)
            return auditor.estimate(feats["forget"], labels=y[sets.forget]), None
    shadows = {"none": None, "offline": offline, "online": online}[spec.shadows]
    if shadows is not None and spec.limit_shadows:
        shadows = shadows.first(rmia_refs)
    data = {k: _attack_data(model, x, y, v, shadows) for k, v in parts.items()}
    with warnings.catch_warnings():  # a debiased attack whose references are called alike abstains (NaN)
        warnings.simplefilter("ignore", NotSeparableWarning)
        return auditor.fit(data["member"], data["nonmember"]).estimate(data["forget"]), shadows


def _with_seconds(res: AuditResult, name: str, seconds: float) -> AuditResult:
    return replace(res, method=name, seconds=seconds)
