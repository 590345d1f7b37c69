"""The ``optimism`` experiment: are membership-inference audits optimistic where the paper places the bias
(approximate unlearning, arXiv 2602.01150)? The design is ours.

Per seed: the original model (trained on retain + forget) and the retrained model (retain only: the ground
truth); approximate methods swept from under- to over-unlearning by their learning rate ("strength"), so the
forget-set accuracy moves from the original's to below the retrained model's. Each unlearned model ``u`` gets

- a **reference forgetting rate** from behaviour: ``t = (UA_orig - UA_u) / (UA_orig - UA_retrained)``, the
  share of the way from the original to the retrained model on forget-set accuracy (on exact partial
  retraining UA moves linearly in the share of the forget set left out, so t equals that share there);
- every auditor's rate (MIAs: the raw share called non-member, as an MIA audit reports it; SMI: its estimate);
- the **alignment** measurement: W1 distance of u's forget-set scores (logit-scaled true-class confidence) to
  u's own non-member scores, and to the retrained model's forget-set scores. Alignment = the forget set looks
  more like u's non-members than like a retrained model's forget set, which an MIA calibrated on u rewards.

An auditor's signed error is its rate minus t, averaged per seed over the under-unlearned points (t <= 1; over-
unlearning, t > 1, is a different failure and is reported, not scored). "Systematically optimistic" is
reproduced when every MIA's signed error is above 0 over seeds.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.stats import wasserstein_distance

from paperlab.audit.mia import membership_score
from paperlab.audit.models import TrainConfig, accuracy, fit_classifier, make_model, predict_logits
from paperlab.audit.registry import get_auditor
from paperlab.audit.unlearning import UnlearnConfig, unlearn
from paperlab.experiments.base import Figure, Result, Verdict, mean_std
from paperlab.experiments.protocol import TOO_FEW_SEEDS
from paperlab.experiments.smi.study import block_splits, with_available_data
from paperlab.experiments.smi.suite import run_auditors, train_shadows
from paperlab.experiments.verdicts import all_of, verdict_from_effect
from paperlab.tables import save_figure

__all__ = ["reference_rate", "run", "signed_errors"]

_SCALE = "MNIST/digits MLP, 2000 training examples; reference rate from forget-set accuracy (our design)"


def reference_rate(ua: float, *, ua_original: float, ua_retrained: float) -> float:
    """Share of the way from the original to the retrained model on forget-set accuracy (NaN when the two
    models agree within 0.01: there is nothing to forget and no reference)."""
    gap = ua_original - ua_retrained
    return (ua_original - ua) / gap if gap >= 0.01 else math.nan


def _w1(a: np.ndarray, b: np.ndarray) -> float:
    return float(wasserstein_distance(a, b))


def _seed_rows(config: Any, seed: int) -> list[dict[str, Any]]:
    """Every (method, strength, auditor) row of one seed, plus the retrained model's rows (t = 1)."""
    b = block_splits(config, config.blocks[0], seed)
    x, y, arch, sz, sets = b.x, b.y, b.arch, b.sizes, b.sets
    train, nonmember, population, forget, retain = b.train, b.nonmember, b.population, b.forget, b.retain
    tcfg = TrainConfig(epochs=config.epochs)

    def fresh(i: int = 0) -> torch.nn.Module:
        return make_model(arch, in_shape=tuple(x.shape[1:]), seed=seed * 7919 + i)

    original = fit_classifier(fresh(), x[train], y[train], config=tcfg, seed=seed)
    retrained = fit_classifier(fresh(), x[retain], y[retain], config=tcfg, seed=seed)
    offline = None
    if any(get_auditor(a).shadows == "offline" for a in config.auditors):
        offline = train_shadows(x, y, pool=population, k=config.k_offline, subset=sz["shadow_subset"],
                                make_model=lambda i: fresh(100 + i), config=tcfg, seed=seed)
    ua_o, ua_r = (accuracy(m, x[forget], y[forget]) for m in (original, retrained))

    def scores(m: torch.nn.Module, idx: np.ndarray) -> np.ndarray:
        return membership_score(predict_logits(m, x[idx]), y[idx], kind="scaled_confidence")

    retrained_forget = scores(retrained, forget)
    rows: list[dict[str, Any]] = []

    def audit(model: torch.nn.Module, method: str, strength: float) -> None:
        ua = accuracy(model, x[forget], y[forget])
        f = scores(model, forget)
        base = {"seed": seed, "method": method, "strength": strength, "UA": ua, "UA original": ua_o,
                "UA retrained": ua_r, "t": reference_rate(ua, ua_original=ua_o, ua_retrained=ua_r),
                "W1 to own non-members": _w1(f, scores(model, nonmember)),
                "W1 to retrained forget": _w1(f, retrained_forget)}
        for run in run_auditors(model, x, y, sets, names=config.auditors, offline=offline,
                                n_bootstrap=config.n_bootstrap, seed=seed):
            spec = get_auditor(run.result.method)
            rate = run.result.raw_rate if spec.raw else run.result.forgetting_rate
            rows.append({**base, "auditor": run.result.method, "rate": rate})

    audit(retrained, "retrain", math.nan)
    for method, strengths in config.strengths:
        for s in strengths:
            ucfg = UnlearnConfig(retrain=tcfg, **({"ga_lr": s} if method == "grad_ascent" else {"lr": s}))
            try:
                model = unlearn(method, original, retain=(x[retain], y[retain]), forget=(x[forget], y[forget]),
                                config=ucfg, seed=seed)
            except FloatingPointError:  # too strong: the loss diverged; recorded, not audited
                rows.append({"seed": seed, "method": method, "strength": s, "auditor": "diverged"})
                continue
            audit(model, method, s)
    return rows


def signed_errors(rows: list[dict[str, Any]], auditor: str, *, seeds: tuple[int, ...]) -> list[float]:
    """Per seed: mean (rate - t) of ``auditor`` over the under-unlearned sweep points (0 <= t <= 1, retrained
    model excluded); seeds with no such point are left out."""
    out = []
    for s in seeds:
        errs = [r["rate"] - r["t"] for r in rows if r["seed"] == s and r["auditor"] == auditor
                and r["method"] != "retrain" and math.isfinite(r.get("t", math.nan)) and 0 <= r["t"] <= 1
                and math.isfinite(r["rate"])]
        if errs:
            out.append(float(np.mean(errs)))
    return out


def _claim(per_mia: list[Verdict]) -> Verdict:
    verdict = all_of(per_mia)
    n = min((v.n_kept or 0) for v in per_mia) if per_mia else 0
    return Verdict(claim="smi-optimistic", verdict=verdict, ours="; ".join(f"{v.claim}: {v.ours}" for v in per_mia),
                   rule="per MIA: 95% t interval over seeds of the mean signed error (raw rate minus the "
                        "accuracy-based reference t, under-unlearned points) wholly above 0 is optimistic; the claim "
                        "is reproduced if every MIA is, not reproduced if any is decided at or below 0",
                   scale_note=_SCALE, n_run=n, n_kept=n)


def _gated(rows: list[dict[str, Any]], seeds: tuple[int, ...]) -> tuple[list[int], list[str]]:
    """Seeds whose sweep can score an audit: the original model memorised the forget set beyond the retrained
    model (UA gap >= 0.01) and some method moved from above to at-or-below the retrained model's UA."""
    kept, why = [], []
    for s in seeds:
        mine = [r for r in rows if r["seed"] == s and r.get("method") not in (None, "retrain") and "t" in r]
        ts = [r["t"] for r in mine if math.isfinite(r["t"])]
        if not ts:
            why.append(f"seed {s}: the original and retrained models agree on the forget set (no reference)")
        elif not (min(ts) < 1 <= max(ts)):
            why.append(f"seed {s}: the sweep never crossed the retrained model (t from {min(ts):.2f} to "
                       f"{max(ts):.2f})")
        else:
            kept.append(s)
    return kept, why


def _alignment_table(rows: list[dict[str, Any]], first: str) -> list[dict[str, Any]]:
    """Per (method, strength), mean over seeds: UA, t and the two W1 distances (one row per model: the rows of
    the auditor ``first``)."""
    points: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in rows:
        if "t" in r and r["auditor"] == first:
            points.setdefault((r["method"], r["strength"]), []).append(r)
    out = []
    for (method, strength), rs in points.items():
        out.append({"method": method, "strength (lr)": strength, "seeds": len(rs),
                    "UA": mean_std([r["UA"] for r in rs])[0], "t": mean_std([r["t"] for r in rs])[0],
                    "W1 to own non-members": mean_std([r["W1 to own non-members"] for r in rs])[0],
                    "W1 to retrained forget": mean_std([r["W1 to retrained forget"] for r in rs])[0]})
    return out


def _alignment_note(rows: list[dict[str, Any]], first: str) -> str:
    """How often an under-unlearned model's forget set sits nearer its own non-members than the retrained
    model's forget set (the alignment that makes an MIA calibrated on the model itself call it forgotten)."""
    pts = [r for r in rows if r["auditor"] == first and r["method"] != "retrain" and 0 <= r.get("t", -1) <= 1]
    closer = sum(r["W1 to own non-members"] < r["W1 to retrained forget"] for r in pts)
    return (f"alignment: on {closer} of {len(pts)} under-unlearned models the forget-set scores are nearer the "
            "model's own non-members than the retrained model's forget set (W1 of logit-scaled confidence)")


def _figure(rows: list[dict[str, Any]], auditors: tuple[str, ...], out_dir: Path) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 5))
    ax.plot([0, 1.5], [0, 1.5], "k--", lw=1, label="calibrated (rate = t)")
    for name in auditors:
        pts = [(r["t"], r["rate"]) for r in rows if r["auditor"] == name and math.isfinite(r.get("t", math.nan))]
        if pts:
            ax.plot(*zip(*pts, strict=True), "o" if name.startswith("smi") else "x", ms=4, label=name)
    ax.axvline(1.0, color="gray", lw=0.8)
    ax.set(xlabel="reference t (0: original, 1: retrained, > 1: over-unlearned)", ylabel="audit rate",
           title="audits along the unlearning-strength sweep")
    ax.legend(fontsize=7)
    return Figure(file=save_figure(fig, out_dir, "optimism_sweep"),
                  caption="Each auditor's rate against the accuracy-based reference t, every seed and strength")


def run(config: Any, *, out_dir: Path) -> Result:
    """Sweep every seed, then per-auditor signed errors, the claim, the alignment table and a figure."""
    config, note = with_available_data(config)
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        rows = [r for s in config.seeds for r in _seed_rows(config, s)]
    finally:
        torch.set_num_threads(threads)
    kept, why = _gated(rows, config.seeds)
    mias = [a for a in config.auditors if get_auditor(a).family == "mia"]
    table, per_mia = [], []
    for name in config.auditors:
        errs = signed_errors(rows, name, seeds=tuple(kept))
        v = verdict_from_effect(f"{name} signed error", errs, scale_note=_SCALE) if errs else Verdict(
            claim=f"{name} signed error", verdict=TOO_FEW_SEEDS, ours="no scored point (no kept seed, or the "
            "auditor abstained on every under-unlearned model)", rule="", n_run=len(config.seeds), n_kept=0)
        table.append({"auditor": name, "family": get_auditor(name).family, "signed error [95% CI]": v.ours,
                      "optimistic": v.verdict, "seeds kept": f"{len(errs)} of {len(config.seeds)}"})
        if name in mias:
            per_mia.append(v)
    diverged = [f"{r['method']}@{r['strength']:g}/seed {r['seed']}" for r in rows if r["auditor"] == "diverged"]
    notes = ([note] if note else []) + why + [f"diverged (not audited): {', '.join(diverged)}" if diverged else
                                              "no sweep point diverged", _alignment_note(rows, config.auditors[0])]
    return Result(experiment="optimism", config=dataclasses.asdict(config), rows=rows,
                  tables={"signed error per auditor (under-unlearned points, positive = optimistic)": table,
                          "alignment along the sweep (mean over seeds)": _alignment_table(rows, config.auditors[0])},
                  figures=[_figure(rows, config.auditors, Path(out_dir))], verdicts=[_claim(per_mia)], notes=notes)
