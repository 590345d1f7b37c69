"""The ``defaults`` experiment: which (features, estimator) pair should an SMI audit use by default? (ours)

Per model family and seed: models retrained without a known share rho of the forget set (rho in 0, 0.5, 1:
exactly rho of it are non-members), then SMI fitted on member (retain) and non-member references and estimated
on the forget set, once per candidate pair. A pair's error is |estimate - rho|; an abstention (NaN: the
references are not usably separated) is counted apart, since the user then gets a warning, not a wrong number.

Families: an MLP and a CNN on MNIST (digits when the MNIST files are absent), an MLP on a Gaussian-cluster set
with 20% random labels (the user report behind this experiment), and a scikit-learn random forest on the same
set (outputs: its log-probabilities). Candidates: SMI's class default (``mmd``) on penultimate features and on
logits (torch models only), and ``mmd`` / ``w1`` on the 1-d logit-scaled true-class confidence.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.ensemble import RandomForestClassifier

from paperlab.audit.base import NotSeparableWarning
from paperlab.audit.features import extract_features
from paperlab.audit.mia import membership_score
from paperlab.audit.models import TrainConfig, fit_classifier, make_model, predict_logits
from paperlab.audit.smi import SMI
from paperlab.data import vision
from paperlab.data.vision import balanced_split
from paperlab.experiments.base import Result, mean_std
from paperlab.experiments.smi.study import available_blocks, load_block

__all__ = ["CANDIDATES", "run"]

# (features, estimator): features are "penultimate" / "logits" (torch models) or a membership-score kind
CANDIDATES = (("penultimate", "mmd"), ("logits", "mmd"), ("scaled_confidence", "mmd"), ("scaled_confidence", "w1"))


def _family_data(family: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    if family.startswith("mnist"):
        x, y = load_block("mnist", seed=seed)
        return (x.flatten(1) if family.endswith("mlp") else x), y
    if family.startswith("digits"):
        x, y = load_block("digits", seed=seed)
        return (x.flatten(1) if family.endswith("mlp") else x), y
    xs, ys = vision.make_synthetic(6000, dim=32, label_noise=0.2, seed=2000 + seed)
    return torch.as_tensor(xs), torch.as_tensor(ys)


def _outputs(family: str, model: Any, x: torch.Tensor, y: torch.Tensor, idx: np.ndarray, features: str
             ) -> np.ndarray | None:
    """What SMI reads for ``features`` on the points ``idx`` (None: the family has no such output)."""
    if family.endswith("forest"):
        if features in ("penultimate",):
            return None
        logits = np.log(np.clip(model.predict_proba(x[idx].numpy()), 1e-12, None))
    else:
        if features == "penultimate":
            return extract_features(model, x[idx]).double().numpy()
        logits = predict_logits(model, x[idx]).double().numpy()
    if features == "logits":
        return logits
    return membership_score(logits, y[idx].numpy(), kind=features)


def _fit(family: str, x: torch.Tensor, y: torch.Tensor, idx: np.ndarray, config: Any, seed: int) -> Any:
    if family.endswith("forest"):
        return RandomForestClassifier(n_estimators=100, random_state=seed).fit(x[idx].numpy(), y[idx].numpy())
    arch = "cnn" if family.endswith("cnn") else "mlp"
    model = make_model(arch, in_shape=tuple(x.shape[1:]), seed=seed * 7919)
    return fit_classifier(model, x[idx], y[idx], config=TrainConfig(epochs=config.epochs), seed=seed)


def _family_rows(config: Any, family: str, seed: int) -> list[dict[str, Any]]:
    x, y = _family_data(family, seed)
    scale = min(1.0, len(y) / (config.n_train + config.n_nonmember))
    n_train, n_non = int(config.n_train * scale), int(config.n_nonmember * scale)
    train, nonmember = balanced_split(y.numpy(), [n_train, n_non], seed=seed)
    n_forget = int(config.n_forget * scale)
    forget, retain = train[:n_forget], train[n_forget:]
    rng = np.random.default_rng([seed, 17])
    rows = []
    for rho in config.rhos:
        dropped = rng.permutation(forget)[:round(rho * len(forget))]
        model = _fit(family, x, y, np.setdiff1d(train, dropped), config, seed)
        for features, estimator in CANDIDATES:
            parts = [_outputs(family, model, x, y, idx, features) for idx in (retain, nonmember, forget)]
            if parts[0] is None:
                continue
            smi = SMI(estimator=estimator, n_bootstrap=config.n_bootstrap, seed=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NotSeparableWarning)
                res = smi.fit(parts[0], parts[1], member_labels=y[retain].numpy(),
                              nonmember_labels=y[nonmember].numpy()).estimate(parts[2], labels=y[forget].numpy())
            rows.append({"family": family, "seed": seed, "rho": rho, "features": features, "estimator": estimator,
                         "estimate": res.forgetting_rate, "low": res.low, "high": res.high, "auc": res.auc})
    return rows


def _table(rows: list[dict[str, Any]], families: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for features, estimator in CANDIDATES:
        row: dict[str, Any] = {"features": features, "estimator": estimator}
        errs_all, answered = [], 0
        for fam in families:
            mine = [r for r in rows if (r["family"], r["features"], r["estimator"]) == (fam, features, estimator)]
            if not mine:
                row[fam] = "n/a"
                continue
            errs = [abs(r["estimate"] - r["rho"]) for r in mine if math.isfinite(r["estimate"])]
            errs_all += errs
            answered += bool(errs)
            abstained = len(mine) - len(errs)
            row[fam] = (f"{mean_std(errs)[0]:.3f}" if errs else "-") + (f" ({abstained}/{len(mine)} abstained)"
                                                                           if abstained else "")
        row["families answered"] = f"{answered} of {len(families)}"
        row["MAE over families"] = mean_std(errs_all)[0] if errs_all else math.nan
        out.append(row)
    return out


def run(config: Any, *, out_dir: Path) -> Result:
    """Every family x seed x rho x candidate; a table of MAE (and abstentions) per family."""
    families, swapped = available_blocks(config.families)  # no MNIST files: the same models on digits
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        rows = [r for f in families for s in config.seeds for r in _family_rows(config, f, s)]
    finally:
        torch.set_num_threads(threads)
    table = _table(rows, families)

    def rank(r: dict[str, Any]) -> tuple[int, float]:  # answer on the most families, then the lowest error
        mae = r["MAE over families"]
        return int(r["families answered"].split()[0]), -mae if math.isfinite(mae) else -math.inf

    best = max(table, key=rank)
    notes = [f"the pair answering on the most families, then with the lowest error: {best['features']} + "
             f"{best['estimator']} ({best['families answered']}, MAE {best['MAE over families']:.3f}); "
             "audit_unlearning's default is scaled_confidence + w1",
             "MAE over the non-abstaining audits; an abstention returns NaN with a warning naming what to try"]
    if swapped:
        notes.insert(0, swapped)
    return Result(experiment="defaults", config=dataclasses.asdict(config), rows=rows,
                  tables={"|estimate - rho| per (features, estimator) and model family": table}, notes=notes)
