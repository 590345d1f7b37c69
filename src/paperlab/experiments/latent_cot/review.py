"""The latent-CoT paper's review hook: a decided verdict needs every arm its claim compares at a tuned learning rate,
which the ``lr_tuning`` experiment of the same run finds (its rows' ``status``). Import-light (no torch)."""

from __future__ import annotations

import dataclasses

from paperlab.experiments.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Result, Verdict

__all__ = ["CLAIM_ARMS", "OK_STATUS", "review_verdicts"]

OK_STATUS = ("tuned", "tied", "ceiling")
# the arms ("task/method") each latent-CoT claim compares: its verdict is decided only at their tuned lrs
CLAIM_ARMS: dict[str, tuple[str, ...]] = {
    "lcot-exploration": ("graph/cot", "graph/coconut"),
    "lcot-symbolic-index": ("graph/cot", "graph/coconut"),
    "lcot-tradeoff": ("graph/cot", "graph/coconut", "arith/cot", "arith/coconut"),
    "lcot-exploration-kl": ("graph/cot", "graph/coconut"),
    "lcot-noise": ("graph/cot", "graph/coconut"),
    "lcot-curriculum": ("graph/coconut", "graph/no_curriculum"),
    "lcot-error-accumulation": ("graph/coconut",),
    "lcot-si-causal": ("graph/coconut", "arith/coconut"),  # soft thoughts train at Coconut's lr
    "lcot-thought-contraction": ("graph/coconut",),
}


def review_verdicts(results: list[Result]) -> None:
    """The latent-CoT paper's review hook (``Paper.review``), run on all of a run's results: a decided verdict
    (reproduced / not reproduced) becomes inconclusive when an arm of its claim (``CLAIM_ARMS``) is not tuned,
    tied or at the ceiling in this run's ``lr_tuning`` result, or when the run has no such result."""
    tuning = next((r for r in results if r.experiment == "lr_tuning"), None)
    status = {} if tuning is None else {f"{r['task']}/{r['method']}": r.get("status") for r in tuning.rows
                                        if r.get("recipe")}
    for res in results:
        res.verdicts = [_reviewed(v, status, tuning is not None) for v in res.verdicts]


def _reviewed(v: Verdict, status: dict[str, str | None], tuned_in_run: bool) -> Verdict:
    if v.verdict not in (REPRODUCED, NOT_REPRODUCED) or v.claim not in CLAIM_ARMS:
        return v
    if not tuned_in_run:
        why = "learning rates not checked in this run (experiment lr_tuning did not run)"
    else:
        bad = [a for a in CLAIM_ARMS[v.claim] if status.get(a) not in OK_STATUS]
        if not bad:
            return v
        why = f"{bad} not at a tuned learning rate (experiment lr_tuning: {[status.get(a) for a in bad]})"
    return dataclasses.replace(v, verdict=INCONCLUSIVE, rule=f"{v.rule}; undecided: {why}")
