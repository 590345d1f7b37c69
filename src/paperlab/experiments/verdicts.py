"""Verdict helpers every experiment uses, on the evidence protocol (:mod:`paperlab.experiments.protocol`).

- :func:`verdict_from_effect`: a per-seed effect (paired where arms share a seed) with a claimed sign;
- :func:`verdict_from_threshold`: per-seed values against a target ("accuracy >= 0.95");
- :func:`quick_verdict`: what a ``--quick`` run reports instead (a pipeline check decides nothing);
- :func:`all_of`: the verdict of a claim that needs every one of its parts;
- :class:`ConsistencyCheck`: a check that cannot fail the paper, shown in its own table without a verdict.

Both verdict helpers decide by a 95% Student-t interval over the seeds and never decide from fewer than 3.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from paperlab.experiments.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict
from paperlab.experiments.intervals import confidence_intervals
from paperlab.experiments.protocol import (
    MIN_SEEDS,
    NO_VERDICT_QUICK,
    TOO_FEW_SEEDS,
    ClaimSpec,
    Decision,
    Difference,
    decide,
)

__all__ = ["ConsistencyCheck", "all_of", "claim_row", "consistency_rows", "quick_verdict", "verdict_from_effect",
           "verdict_from_threshold", "verdict_within"]


def verdict_from_effect(claim: str, effects: Sequence[float], *, claimed_sign: int = 1, unit: str = "",
                        scale_note: str = "", paper_effect: float | None = None,
                        size_claim: bool = False) -> Verdict:
    """Verdict on the direction of an effect measured once per seed (e.g. KLA minus GDN accuracy, paired).

    Rule: the 95% t interval of the mean over seeds must lie wholly on the claimed side of 0 for "reproduced";
    "not reproduced" when it lies wholly on the wrong side, or wholly short of ``paper_effect`` (the paper's
    effect in the same unit, signed like the claim) when given; else "inconclusive" with the seeds that would
    decide it. Fewer than 3 seeds: "too few seeds". NaN effects (diverged runs) are dropped and counted.
    ``size_claim`` (an equivalence rule, see ``ClaimSpec.size_claim``): an interval wholly short of
    ``paper_effect`` is "not reproduced" even when it lies on the claimed side of 0.
    """
    if claimed_sign not in (1, -1):
        raise ValueError(f"claimed_sign must be +1 or -1, got {claimed_sign}")
    direction = "greater" if claimed_sign > 0 else "less"
    reference = 0.0 if paper_effect is None else float(paper_effect)
    spec = ClaimSpec(effect=claim, unit=unit.strip(), direction=direction, paper_effect=reference,
                     size_claim=size_claim)
    return _decide_values(claim, spec, effects, scale_note=scale_note)


def verdict_from_threshold(claim: str, values: Sequence[float], *, target: float, higher_is_better: bool = True,
                           tolerance: float = 0.0, unit: str = "", scale_note: str = "") -> Verdict:
    """Verdict on reaching a target (e.g. "100% needle accuracy", "error <= 0.05"), one value per seed.

    Rule: "reproduced" if the 95% t interval of the mean lies wholly at or beyond ``target`` (less ``tolerance``)
    on the better side; "not reproduced" if it lies wholly on the worse side; else "inconclusive". Fewer than 3 seeds:
    "too few seeds".
    """
    sign = 1 if higher_is_better else -1
    level = float(target) - sign * float(tolerance)
    spec = ClaimSpec(effect=claim, unit=unit.strip(), direction="greater" if higher_is_better else "less",
                     paper_effect=level, threshold=level, inclusive=True)
    return _decide_values(claim, spec, values, scale_note=scale_note)


def verdict_within(claim: str, values: Sequence[float], *, target: float, tolerance: float, unit: str = "",
                   scale_note: str = "") -> Verdict:
    """Verdict on a measurement agreeing with a prediction (e.g. a measured exponent against its closed form),
    one value per seed: an equivalence test.

    Rule: "reproduced" if the 95% t interval of the mean lies wholly inside ``target +- tolerance``; "not
    reproduced" if it lies wholly outside it (on either side); else "inconclusive". Fewer than 3 finite values:
    "too few seeds". At a true mean exactly on a tolerance edge, "reproduced" comes out at most 2.5% of the time
    (the interval must clear that edge), so agreement is never claimed from noise.
    """
    tolerance = float(tolerance)
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
    vals = [float(v) for v in values if math.isfinite(float(v))]
    n_run, n = len(values), len(vals)
    u = f" {unit.strip()}" if unit.strip() else ""
    rule = (f"95% t interval of the mean over seeds wholly within {target:.4g} +- {tolerance:g}{u}: reproduced; "
            "wholly outside: not reproduced; else inconclusive; under 3 seeds never decides")
    if n < MIN_SEEDS:
        shown = f"{sum(vals) / n:.3g}{u}" if n else "no finite value"
        return Verdict(claim=claim, verdict=TOO_FEW_SEEDS, ours=f"{shown} (n={n})", rule=rule,
                       scale_note=scale_note, n_run=n_run, n_kept=n)
    low, high, _ = confidence_intervals(vals)
    lo, hi, mean = float(low[0]), float(high[0]), sum(vals) / n
    if target - tolerance <= lo and hi <= target + tolerance:
        verdict = REPRODUCED
    elif hi < target - tolerance or lo > target + tolerance:
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    return Verdict(claim=claim, verdict=verdict, ours=f"{mean:.3g} [{lo:.3g}, {hi:.3g}]{u} (n={n})", rule=rule,
                   scale_note=scale_note, n_run=n_run, n_kept=n)


def _decide_values(claim: str, spec: ClaimSpec, values: Sequence[float], *, scale_note: str) -> Verdict:
    values = [float(v) for v in values]
    if not values:
        raise ValueError(f"{claim}: no values to decide from (one per seed expected)")
    finite = {seed: {"run": {"value": v}} for seed, v in enumerate(values) if math.isfinite(v)}
    diverged = len(values) - len(finite)
    if not finite:
        return Verdict(claim=claim, verdict=TOO_FEW_SEEDS, ours=f"no finite value (n=0) of {len(values)} run",
                       rule="every seed diverged (NaN)", scale_note=scale_note, n_run=len(values), n_kept=0)
    verdict = decide(spec, finite, effect=Difference(metric="value", a="run")).to_verdict(claim, scale_note=scale_note)
    if diverged:
        verdict = dataclasses.replace(verdict, n_run=len(values),
                                      rule=f"{diverged} diverged seed(s) dropped; {verdict.rule}")
    return verdict


def all_of(parts: Sequence[Verdict]) -> str:
    """The verdict of a claim that needs every part: "too few seeds" if there is no part or any part has too
    few, "not reproduced" if any part is decided against, "reproduced" if every part is, else inconclusive."""
    decided = [v.verdict for v in parts]
    if not decided or TOO_FEW_SEEDS in decided:
        return TOO_FEW_SEEDS
    if NOT_REPRODUCED in decided:
        return NOT_REPRODUCED
    return REPRODUCED if all(v == REPRODUCED for v in decided) else INCONCLUSIVE


def quick_verdict(verdict: Verdict) -> Verdict:
    """What a ``--quick`` run reports: the numbers, and "quick: no verdict" unless >= 3 seeds were kept."""
    if verdict.n_kept is not None and verdict.n_kept >= MIN_SEEDS:
        return verdict
    return dataclasses.replace(verdict, verdict=NO_VERDICT_QUICK,
                               rule=f"quick is a pipeline check, not evidence; {verdict.rule}")


@dataclass(frozen=True, kw_only=True)
class ConsistencyCheck:
    """A check that the code is consistent (it cannot fail the paper): reported in its own table, never a verdict."""

    name: str
    measured: float
    expected: float
    passed: bool
    note: str = ""

    @classmethod
    def within(cls, name: str, *, measured: float, expected: float, tolerance: float,
               note: str = "") -> ConsistencyCheck:
        """``passed`` computed as ``|measured - expected| <= tolerance`` (never typed by hand)."""
        passed = math.isfinite(measured) and abs(measured - expected) <= tolerance
        return cls(name=name, measured=measured, expected=expected, passed=passed,
                   note=note or f"tolerance {tolerance:g}")


def consistency_rows(checks: Sequence[ConsistencyCheck]) -> list[dict[str, object]]:
    """Rows of the 'consistency checks' table: ``check | measured | expected | holds | note`` (no verdict)."""
    return [{"check": c.name, "measured": c.measured, "expected": c.expected, "holds": "yes" if c.passed else "NO",
             "note": c.note} for c in checks]


def claim_row(claim_text: str, paper_number: str, decision: Decision, scale_note: str = "") -> dict[str, str]:
    """A claim-table row: ``claim | paper's number | ours | verdict | rule / scale note``."""
    note = "; ".join(p for p in (decision.explanation(), scale_note) if p)
    return {"claim": claim_text, "paper's number": paper_number, "ours": decision.ours(),
            "verdict": decision.verdict, "rule / scale note": note}
