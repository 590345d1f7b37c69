"""The evidence protocol: how a claim's verdict follows from per-seed measurements.

A claim declares (:class:`ClaimSpec`) its effect, one number per seed computed from that seed's arms (so arms
that share a seed are paired), its unit, the claimed direction, the paper's effect size in that unit (or, when
the paper gives none, the smallest effect of interest with the reason), plus competence gates (:class:`Gate`)
and mechanism gates (:class:`MechanismGate`). :func:`decide` applies, in this order:

1. competence gates per seed and per arm; a seed that fails any gate in any arm is dropped;
2. fewer than 3 seeds run: ``too few seeds`` (``quick: no verdict`` with ``quick=True``); 3 or more run but
   fewer than 3 kept: ``models did not learn the task``, with the failing values;
3. mechanism gates, on the mean over kept seeds: ``mechanism absent``, with the measurement;
4. a two-sided 95% interval of the mean effect over kept seeds, Student t with df = n - 1, or, for skewed
   effects and at least 10 kept seeds, the expanded percentile bootstrap (Hesterberg 2015, "What teachers should
   know about the bootstrap", sec. 3.2; fewer kept seeds fall back to t and the rule says so). "Reproduced": the
   interval lies wholly beyond the threshold on the claimed side (0 for a direction claim); else "not
   reproduced": it lies wholly short of the paper's effect, on the side toward the threshold (which includes
   lying wholly on the wrong side); else "inconclusive", with the seeds that would decide it. A claim about the
   effect's size (``ClaimSpec.size_claim``) turns the precedence round: an interval wholly short of the paper's
   effect (or the smallest of interest) is "not reproduced" even when it clears the threshold.

False positives: at a true mean effect exactly on the threshold, the two-sided 95% interval lies wholly beyond
it 2.5% of the time (one tail; exact for normal per-seed effects at any n >= 3). On strongly skewed effects
neither interval holds its level at n <= 20 (measured 11-15% one-sided on log-normal effects).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from scipy import stats

from paperlab._validate import check_choice, check_int
from paperlab.experiments.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict
from paperlab.experiments.intervals import LEVEL, MIN_BOOTSTRAP_SEEDS, confidence_intervals

__all__ = [
    "CONSISTENCY_ONLY", "ClaimSpec", "DID_NOT_LEARN", "Decision", "Difference", "Drop", "Gate", "INCONCLUSIVE",
    "MECHANISM_ABSENT", "MIN_BOOTSTRAP_SEEDS", "MIN_SEEDS", "MechanismGate", "MechanismResult", "NOT_REPRODUCED",
    "NOT_TESTABLE", "NO_VERDICT_QUICK", "REPRODUCED", "TOO_FEW_SEEDS", "classify", "confidence_intervals", "decide",
    "seeds_to_decide",
]

TOO_FEW_SEEDS = "too few seeds"
DID_NOT_LEARN = "models did not learn the task"
MECHANISM_ABSENT = "mechanism absent"
NO_VERDICT_QUICK = "quick: no verdict"
CONSISTENCY_ONLY = "consistency check only: no verdict"
NOT_TESTABLE = "not testable at this setting"

MIN_SEEDS = 3

Seed = int | str
_SeedT = TypeVar("_SeedT", bound=Seed)  # a Mapping is invariant in its keys: {0: ...} is no Mapping[int | str, ...]
Arms = Mapping[str, Mapping[str, float]]  # arm name -> metric name -> value, for one seed


@dataclass(frozen=True, kw_only=True)
class ClaimSpec:
    """What a claim's effect is and which values decide it.

    ``effect`` names the per-seed effect (e.g. ``"GDN - KLA bits/byte"``); ``direction`` is ``"greater"`` or
    ``"less"``. ``threshold`` is what the interval must clear on the claimed side for "reproduced": 0 for a
    direction claim, the target for a threshold claim ("accuracy >= 0.95"). Give ``paper_effect`` (the paper's
    effect in ``unit``), or ``smallest_effect`` with ``smallest_effect_reason`` when the paper gives none; an
    interval wholly short of it means "not reproduced". It may equal the threshold (then only an interval on the
    wrong side means "not reproduced"). ``interval`` is ``"t"`` or ``"bootstrap"``. ``size_claim=True`` makes
    "not reproduced" win when an interval both clears the threshold and falls wholly short of the reference (a
    claim whose size is the point, such as "+7 points better"); by default "reproduced" wins there and the
    detail says the effect is smaller.
    """

    effect: str
    unit: str
    direction: str
    paper_effect: float | None = None
    smallest_effect: float | None = None
    smallest_effect_reason: str = ""
    threshold: float = 0.0
    interval: str = "t"
    inclusive: bool = False  # a target claim ("accuracy >= 1.0") is met by an interval that touches the threshold
    size_claim: bool = False

    def __post_init__(self) -> None:
        check_choice("direction", self.direction, ("greater", "less"))
        check_choice("interval", self.interval, ("t", "bootstrap"))
        if (self.paper_effect is None) == (self.smallest_effect is None):
            raise ValueError("give paper_effect, or smallest_effect when the paper gives none (not both); got "
                             f"paper_effect={self.paper_effect!r}, smallest_effect={self.smallest_effect!r}")
        if self.smallest_effect is not None and not self.smallest_effect_reason:
            raise ValueError("smallest_effect needs smallest_effect_reason: why that size is the one of interest")
        if not all(math.isfinite(v) for v in (self.reference, self.threshold)):
            raise ValueError(f"threshold and the reference effect must be finite, got {self.threshold!r}, "
                             f"{self.reference!r}")
        if self.sign * (self.reference - self.threshold) < 0:
            raise ValueError(f"the reference effect {self.reference:g} must lie on the claimed ({self.direction}) "
                             f"side of threshold={self.threshold:g} or equal it")

    @property
    def sign(self) -> int:
        return 1 if self.direction == "greater" else -1

    @property
    def reference(self) -> float:
        """The effect whose exclusion means "not reproduced": the paper's, else the smallest of interest."""
        if self.paper_effect is not None:
            return float(self.paper_effect)
        assert self.smallest_effect is not None  # __post_init__ requires one of the two
        return float(self.smallest_effect)

    def reference_words(self) -> str:
        if self.paper_effect is not None:
            return f"the paper's {_num(self.paper_effect, self.unit)}"
        return f"the smallest effect of interest {_num(self.reference, self.unit)} ({self.smallest_effect_reason})"


@dataclass(frozen=True, kw_only=True)
class Difference:
    """Per-seed paired effect ``arms[a][metric] - arms[b][metric]``, or ``arms[a][metric]`` when ``b`` is None (a
    threshold claim about one arm); usable as ``effect`` or as a mechanism's ``measure``."""

    metric: str
    a: str
    b: str | None = None

    def __call__(self, arms: Arms) -> float:
        base = 0.0 if self.b is None else _lookup(arms, self.b, self.metric)
        return _lookup(arms, self.a, self.metric) - base


@dataclass(frozen=True, kw_only=True)
class Gate:
    """A competence gate, checked per seed and per arm: ``metric`` ``op`` ``value`` in each of ``arms`` (every arm
    of the seed when None). A non-finite value (a diverged run) fails."""

    metric: str
    op: str
    value: float
    arms: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_choice("op", self.op, (">=", "<="))

    @classmethod
    def at_least(cls, metric: str, value: float, *, arms: tuple[str, ...] | None = None) -> Gate:
        return cls(metric=metric, op=">=", value=value, arms=arms)

    @classmethod
    def at_most(cls, metric: str, value: float, *, arms: tuple[str, ...] | None = None) -> Gate:
        return cls(metric=metric, op="<=", value=value, arms=arms)

    def passes(self, x: float) -> bool:
        return _holds(x, self.op, self.value)

    def describe(self) -> str:
        where = ", ".join(self.arms) if self.arms else "every arm"
        return f"{self.metric} {self.op} {self.value:g} in {where}, per seed"


@dataclass(frozen=True, kw_only=True)
class MechanismGate:
    """A mechanism that must be present for the claim to be tested: ``measure`` (per seed, from its arms, e.g.
    ``Difference(metric="acc", a="full", b="thoughts_ablated")``) averaged over kept seeds ``op`` ``value``."""

    name: str
    measure: Callable[[Arms], float]
    op: str
    value: float
    unit: str = ""

    def __post_init__(self) -> None:
        check_choice("op", self.op, (">=", "<="))

    @classmethod
    def at_least(cls, name: str, measure: Callable[[Arms], float], value: float, *, unit: str = "") -> MechanismGate:
        return cls(name=name, measure=measure, op=">=", value=value, unit=unit)

    def describe(self) -> str:
        return f"{self.name} {self.op} {_num(self.value, self.unit)} (mean over kept seeds)"


@dataclass(frozen=True, kw_only=True)
class Drop:
    """A seed dropped by a competence gate: the arm, metric and value that failed the rule."""

    seed: Seed
    arm: str
    metric: str
    value: float
    rule: str

    def describe(self) -> str:
        return f"seed {self.seed} {self.arm}: {self.metric} = {self.value:.3g} (needs {self.rule})"


@dataclass(frozen=True, kw_only=True)
class MechanismResult:
    """A mechanism gate's measurement over the kept seeds."""

    name: str
    mean: float
    per_seed: tuple[float, ...]
    passed: bool
    rule: str

    def describe(self) -> str:
        seeds = ", ".join(f"{v:.3g}" for v in self.per_seed)
        return f"{self.name} = {self.mean:.3g} (per kept seed: {seeds}; needs {self.rule})"


@dataclass(frozen=True, kw_only=True)
class Decision:
    """A claim's verdict with everything that decided it.

    ``effects`` holds the per-seed effect of each kept seed; ``ci`` the 95% interval (NaN below 2 kept seeds);
    ``seeds_needed`` the number of seeds at which the observed mean and sd would decide (set when inconclusive;
    None when more than 1,000 would be needed); ``detail`` why this verdict, with the numbers.
    """

    verdict: str
    spec: ClaimSpec
    mean: float
    ci: tuple[float, float]
    method: str
    effects: tuple[float, ...]
    seeds_run: tuple[Seed, ...]
    seeds_kept: tuple[Seed, ...]
    dropped: tuple[Drop, ...]
    mechanisms: tuple[MechanismResult, ...]
    gates: tuple[str, ...]
    seeds_needed: int | None
    rule: str
    detail: str

    @property
    def n_run(self) -> int:
        return len(self.seeds_run)

    @property
    def n_kept(self) -> int:
        return len(self.seeds_kept)

    def ours(self) -> str:
        """The report's ``ours`` cell: ``mean [low, high] unit (n=K)``, plus ``of N run`` when seeds were dropped."""
        unit = f" {self.spec.unit}" if self.spec.unit else ""
        count = f"(n={self.n_kept})" + (f" of {self.n_run} run" if self.n_run != self.n_kept else "")
        if self.n_kept == 0:
            return f"no seed kept {count}"
        if self.n_kept == 1:
            return f"{self.mean:.3g}{unit} {count}, no interval"
        return f"{self.mean:.3g} [{self.ci[0]:.3g}, {self.ci[1]:.3g}]{unit} {count}"

    def explanation(self) -> str:
        """Why, the rule in words and the gates: the report's ``rule / scale note`` cell before the scale note."""
        gates = f"gates: {'; '.join(self.gates)}" if self.gates else ""
        dropped = "" if not self.dropped or "dropped" in self.detail else \
            "dropped " + ", ".join(d.describe() for d in self.dropped)
        return "; ".join(p for p in (self.detail, dropped, f"rule: {self.rule}", gates) if p)

    def to_verdict(self, claim: str, *, scale_note: str = "") -> Verdict:
        """The :class:`~paperlab.experiments.base.Verdict` an experiment's ``Result`` carries."""
        return Verdict(claim=claim, verdict=self.verdict, ours=self.ours(), rule=self.explanation(),
                       scale_note=scale_note, n_run=self.n_run, n_kept=self.n_kept)


def classify(spec: ClaimSpec, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Verdict per interval (object array of REPRODUCED / NOT_REPRODUCED / INCONCLUSIVE), same shape as ``low``.
    Reproduced takes precedence: an interval beyond the threshold but short of the paper's effect reproduces the
    claim with a smaller effect (the detail says so); under ``spec.size_claim`` not reproduced takes it."""
    lo, hi = _signed(spec, np.asarray(low), np.asarray(high))
    out = np.full(lo.shape, INCONCLUSIVE, dtype=object)
    short = hi < spec.sign * spec.reference
    out[short] = NOT_REPRODUCED
    beyond = _clears(spec, lo)
    out[beyond & ~short if spec.size_claim else beyond] = REPRODUCED
    return out


def _clears(spec: ClaimSpec, lo: Any) -> Any:
    """Whether a signed lower bound lies beyond the threshold on the claimed side (touching it counts when
    ``spec.inclusive``)."""
    return lo >= spec.sign * spec.threshold if spec.inclusive else lo > spec.sign * spec.threshold


def seeds_to_decide(spec: ClaimSpec, mean: float, sd: float, *, n_min: int = MIN_SEEDS,
                    cap: int = 1000) -> int | None:
    """The smallest n >= ``n_min`` at which a t interval around ``mean`` with spread ``sd`` would decide.

    With signed values m' = sign * mean (likewise threshold t', reference r'), the interval
    m' +- t_{0.975, n-1} * sd / sqrt(n) decides once its half-width is below max(m' - t', r' - m'). Plugging
    the observed mean in makes this a 50%-power estimate: at that n about half of reruns would decide.
    None when more than ``cap`` seeds would be needed.
    """
    check_int("n_min", n_min, minimum=2)
    gap = max(spec.sign * (mean - spec.threshold), spec.sign * (spec.reference - mean))
    ns = np.arange(n_min, check_int("cap", cap, minimum=n_min) + 1)
    half = stats.t.ppf(0.5 + LEVEL / 2, ns - 1) * sd / np.sqrt(ns)
    hits = np.flatnonzero(half < gap)
    return int(ns[hits[0]]) if hits.size else None


def decide(spec: ClaimSpec, per_seed: Mapping[_SeedT, Arms], *, effect: Callable[[Arms], float],
           competence: Sequence[Gate] = (), mechanism: Sequence[MechanismGate] = (), quick: bool = False,
           seed: int = 0) -> Decision:
    """Decide a claim from per-seed measurements.

    Args:
        spec: what the effect is and which values decide it.
        per_seed: ``{seed: {arm: {metric: value}}}``, one entry per seed run (a one-arm claim has one arm).
        effect: the per-seed effect from that seed's arms, e.g. ``Difference(metric="bpb", a="gdn", b="kla")``.
        competence: gates each seed must pass in each gated arm to be kept.
        mechanism: gates the mean over kept seeds must pass for the claim to be tested at all.
        quick: a pipeline check: no verdict unless at least 3 seeds ran.
        seed: seeds the bootstrap's generator.

    Returns:
        A :class:`Decision`; the module docstring gives the order of the rules.
    """
    if not per_seed:
        raise ValueError("per_seed is empty: decide needs at least one seed's measurements")
    kept, drops = _apply_competence(per_seed, competence)
    effects = tuple(_effect(effect, s, per_seed[s]) for s in kept)
    mechs = tuple(_measure(g, [per_seed[s] for s in kept]) for g in mechanism) if kept else ()
    mean = float(np.mean(effects)) if effects else math.nan
    low = high = math.nan
    method = "none (under 2 kept seeds)"
    if len(effects) >= 2:
        lows, highs, method = confidence_intervals(effects, method=spec.interval, seed=seed)
        low, high = float(lows[0]), float(highs[0])
    verdict, detail, needed = _verdict(spec, effects, drops, mechs, n_run=len(per_seed), quick=quick,
                                       ci=(low, high))
    return Decision(verdict=verdict, spec=spec, mean=mean, ci=(low, high), method=method, effects=effects,
                    seeds_run=tuple(per_seed), seeds_kept=tuple(kept), dropped=drops, mechanisms=mechs,
                    gates=tuple([g.describe() for g in competence] + [g.describe() for g in mechanism]),
                    seeds_needed=needed,
                    rule=_rule(spec, method if len(effects) >= 2 else None), detail=detail)


def _verdict(spec: ClaimSpec, effects: tuple[float, ...], drops: tuple[Drop, ...],
             mechs: tuple[MechanismResult, ...], *, n_run: int, quick: bool,
             ci: tuple[float, float]) -> tuple[str, str, int | None]:
    n = len(effects)
    dropped = "; dropped " + ", ".join(d.describe() for d in drops) if drops else ""
    if n_run < MIN_SEEDS:
        label = NO_VERDICT_QUICK if quick else TOO_FEW_SEEDS
        return label, f"{n_run} seed(s) run, {MIN_SEEDS} needed for a verdict{dropped}", None
    if n < MIN_SEEDS:
        return DID_NOT_LEARN, f"{n} of {n_run} seeds passed the competence gates{dropped}", None
    absent = [m for m in mechs if not m.passed]
    if absent:
        return MECHANISM_ABSENT, "; ".join(m.describe() for m in absent), None
    verdict = str(classify(spec, np.array([ci[0]]), np.array([ci[1]]))[0])
    interval, (lower, upper) = f"interval [{ci[0]:.3g}, {ci[1]:.3g}]", _signed(spec, *ci)
    if verdict == REPRODUCED:
        short = upper < spec.sign * spec.reference
        return verdict, f"{interval} lies wholly {_side(spec)} {_num(spec.threshold, spec.unit)}" + (
            f"; it excludes {spec.reference_words()}: a smaller effect" if short else ""), None
    if verdict == NOT_REPRODUCED:
        wrong = upper < spec.sign * spec.threshold
        return verdict, interval + (" lies on the wrong side" if wrong else f" excludes {spec.reference_words()}") + (
            f" (it lies wholly {_side(spec)} {_num(spec.threshold, spec.unit)}: the direction holds, the size "
            "does not)" if _clears(spec, lower) else ""), None  # only a size claim gets here with a clearing bound
    sd = float(np.std(effects, ddof=1))
    needed = seeds_to_decide(spec, float(np.mean(effects)), sd, n_min=n + 1)
    more = f"about {needed} seeds at the observed sd would decide" if needed else "more than 1000 seeds needed"
    both = f"{_num(spec.threshold, spec.unit)} and {spec.reference_words()}"
    return verdict, f"{interval} contains both {both}; {more}", needed


def _rule(spec: ClaimSpec, method: str | None) -> str:
    method = method or ("Student t" if spec.interval == "t" else "expanded percentile bootstrap")
    short = f"not reproduced if wholly {_side(spec, short=True)} {spec.reference_words()}"
    beyond = f"wholly {_side(spec)} {_num(spec.threshold, spec.unit)}"
    decides = (f"{short} (the size is the claim), else reproduced if {beyond}" if spec.size_claim else
               f"reproduced if {beyond}, {short}")
    return (f"95% interval of the mean {spec.effect} over kept seeds, by {method}: {decides}, else inconclusive; "
            f"under {MIN_SEEDS} kept seeds never decides")


def _signed(spec: ClaimSpec, low: Any, high: Any) -> tuple[Any, Any]:
    """The interval in signed units, where the claimed side is positive: (sign * low, sign * high), reordered."""
    return (low, high) if spec.sign > 0 else (-high, -low)


def _side(spec: ClaimSpec, *, short: bool = False) -> str:
    return "above" if (spec.sign > 0) != short else "below"


def _apply_competence(per_seed: Mapping[_SeedT, Arms], gates: Sequence[Gate]) -> tuple[list[_SeedT], tuple[Drop, ...]]:
    kept: list[_SeedT] = []
    drops: list[Drop] = []
    for seed, arms in per_seed.items():
        fails = [Drop(seed=seed, arm=arm, metric=g.metric, value=value, rule=f"{g.op} {g.value:g}")
                 for g in gates for arm in (g.arms or tuple(arms))
                 for value in (_lookup(arms, arm, g.metric, seed=seed),) if not g.passes(value)]
        drops.extend(fails)
        if not fails:
            kept.append(seed)
    return kept, tuple(drops)


def _effect(effect: Callable[[Arms], float], seed: Seed, arms: Arms) -> float:
    value = float(effect(arms))
    if not math.isfinite(value):
        raise ValueError(f"the effect of seed {seed!r} is {value}; add a competence gate that drops diverged runs")
    return value


def _measure(gate: MechanismGate, kept: list[Arms]) -> MechanismResult:
    values = tuple(float(gate.measure(arms)) for arms in kept)
    mean = float(np.mean(values))
    return MechanismResult(name=gate.name, mean=mean, per_seed=values, passed=_holds(mean, gate.op, gate.value),
                           rule=f"{gate.op} {_num(gate.value, gate.unit)}")


def _holds(x: float, op: str, value: float) -> bool:
    """``x op value``; a non-finite x (a diverged run) never holds."""
    return math.isfinite(x) and (x >= value if op == ">=" else x <= value)


def _lookup(arms: Arms, arm: str, metric: str, *, seed: Seed | None = None) -> float:
    where = "" if seed is None else f" of seed {seed!r}"
    if arm not in arms:
        raise ValueError(f"arm {arm!r} is missing{where}; arms are {sorted(arms)}")
    if metric not in arms[arm]:
        raise ValueError(f"metric {metric!r} is missing in arm {arm!r}{where}; metrics are {sorted(arms[arm])}")
    return float(arms[arm][metric])


def _num(value: float, unit: str) -> str:
    return f"{value:g} {unit}" if unit else f"{value:g}"
