"""The evidence protocol on planted data: error rates by simulation, gates, the seed-count rules, the power
estimate against brute force, the KLA perplexity example, table rows, and the learning-rate search."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from paperlab.experiments.base import Verdict
from paperlab.experiments.lr_search import lr_cell, tune_lr
from paperlab.experiments.protocol import (
    DID_NOT_LEARN,
    INCONCLUSIVE,
    MECHANISM_ABSENT,
    NO_VERDICT_QUICK,
    NOT_REPRODUCED,
    REPRODUCED,
    TOO_FEW_SEEDS,
    ClaimSpec,
    Difference,
    Gate,
    MechanismGate,
    classify,
    confidence_intervals,
    decide,
    seeds_to_decide,
)
from paperlab.experiments.verdicts import ConsistencyCheck, claim_row, consistency_rows

DRAWS = 1000
EFFECT = Difference(metric="x", a="a")


def _spec(direction: str = "greater", **kw: object) -> ClaimSpec:
    kw.setdefault("paper_effect", 1.0 if direction == "greater" else -1.0)
    return ClaimSpec(effect="a", unit="pts", direction=direction, **kw)  # type: ignore[arg-type]


def _per_seed(effects: np.ndarray | list[float]) -> dict[int, dict[str, dict[str, float]]]:
    return {i: {"a": {"x": float(v)}} for i, v in enumerate(effects)}


def _rate(spec: ClaimSpec, draws: np.ndarray, *, method: str = "t") -> float:
    low, high, _ = confidence_intervals(draws, method=method, seed=0)
    return float(np.mean(classify(spec, low, high) == REPRODUCED))


def _exact(n: int, mean: float, sd: float) -> np.ndarray:
    """n values with exactly this mean and sample sd."""
    z = np.arange(n) - (n - 1) / 2
    return mean + sd * z / z.std(ddof=1)


@pytest.mark.parametrize("n", [3, 5, 10])
@pytest.mark.parametrize("direction", ["greater", "less"])
def test_null_effect_reproduces_at_most_5_percent(n: int, direction: str) -> None:
    draws = np.random.default_rng(n).normal(0.0, 1.0, (DRAWS, n))
    rate = _rate(_spec(direction), draws)
    # One tail of a two-sided 95% interval: 2.5% nominal; the lower bound shows the test can see false positives.
    assert 0.01 <= rate <= 0.05, rate


@pytest.mark.parametrize("n", [3, 5, 10])
def test_null_at_threshold_reproduces_at_most_5_percent(n: int) -> None:
    spec = _spec(threshold=0.95, paper_effect=1.0)
    draws = np.random.default_rng(10 + n).normal(0.95, 0.02, (DRAWS, n))
    assert _rate(spec, draws) <= 0.05


def test_planted_effect_twice_threshold_reproduces_at_n10() -> None:
    threshold, true, sd, n = 1.0, 2.0, 0.8, 10
    draws = np.random.default_rng(7).normal(true, sd, (DRAWS, n))
    rate = _rate(_spec(threshold=threshold, paper_effect=true), draws)
    exact = stats.nct.sf(stats.t.ppf(0.975, n - 1), n - 1, (true - threshold) / (sd / math.sqrt(n)))
    assert rate >= 0.8
    assert abs(rate - exact) < 3 * math.sqrt(exact * (1 - exact) / DRAWS), (rate, exact)


@pytest.mark.parametrize("n", [10, 20])
def test_bootstrap_null_reproduces_at_most_5_percent(n: int) -> None:
    draws = np.random.default_rng(20 + n).normal(0.0, 1.0, (DRAWS, n))
    spec = _spec(interval="bootstrap")
    low, high, method = confidence_intervals(draws, method="bootstrap", seed=1)
    assert "bootstrap" in method
    assert np.mean(classify(spec, low, high) == REPRODUCED) <= 0.05


def test_bootstrap_seeded_and_falls_back_to_t_below_10_seeds() -> None:
    x = np.random.default_rng(3).lognormal(0.0, 1.0, 12)
    a, b = confidence_intervals(x, method="bootstrap", seed=5), confidence_intervals(x, method="bootstrap", seed=5)
    c = confidence_intervals(x, method="bootstrap", seed=6)
    assert (a[0], a[1]) == (b[0], b[1]) and a[0] != c[0]
    low, high, method = confidence_intervals(x[:5], method="bootstrap")
    t_low, t_high, _ = confidence_intervals(x[:5], method="t")
    assert method == "Student t (df=4; bootstrap needs >= 10 seeds)"
    assert (low, high) == (t_low, t_high)


def test_decide_matches_vectorized_path() -> None:
    draws = np.random.default_rng(11).normal(0.4, 1.0, (40, 3))
    low, high, _ = confidence_intervals(draws)
    expected = classify(_spec(), low, high)
    assert {str(v) for v in expected} >= {REPRODUCED, INCONCLUSIVE}
    for row, want in zip(draws, expected, strict=True):
        assert decide(_spec(), _per_seed(row), effect=EFFECT).verdict == want


def test_one_or_two_seeds_never_decide() -> None:
    for effects in ([100.0], [100.0, 101.0], [-100.0, -101.0]):
        d = decide(_spec(), _per_seed(effects), effect=EFFECT)
        assert d.verdict == TOO_FEW_SEEDS
        assert f"(n={len(effects)})" in d.ours()
    quick = decide(_spec(), _per_seed([100.0]), effect=EFFECT, quick=True)
    assert quick.verdict == NO_VERDICT_QUICK and quick.ours() == "100 pts (n=1), no interval"
    assert math.isnan(quick.ci[0])
    assert decide(_spec(), _per_seed([3.0, 3.1, 2.9]), effect=EFFECT, quick=True).verdict == REPRODUCED


def _arms(kla_acc: float, gdn_acc: float, gap: float) -> dict[str, dict[str, float]]:
    return {"kla": {"acc": kla_acc, "bpb": 1.0}, "gdn": {"acc": gdn_acc, "bpb": 1.0 + gap}}


GAP = Difference(metric="bpb", a="gdn", b="kla")
LEARNED = Gate.at_least("acc", 0.95, arms=("kla", "gdn"))


def test_gates_drop_exactly_the_failing_seeds() -> None:
    per_seed = {0: _arms(0.99, 0.98, 0.02), 1: _arms(0.99, 0.41, 0.5), 2: _arms(0.97, 0.99, 0.03),
                3: _arms(0.50, math.nan, 0.9), 4: _arms(0.96, 0.96, 0.025), 5: _arms(1.0, 0.95, 0.02)}
    d = decide(_spec(paper_effect=0.02), per_seed, effect=GAP, competence=[LEARNED])
    assert d.seeds_kept == (0, 2, 4, 5) and d.n_run == 6
    assert {(x.seed, x.arm) for x in d.dropped} == {(1, "gdn"), (3, "kla"), (3, "gdn")}
    assert d.effects == pytest.approx([0.02, 0.03, 0.025, 0.02])
    assert d.mean == pytest.approx(0.02375) and "(n=4) of 6 run" in d.ours()
    only_kla = decide(_spec(paper_effect=0.02), per_seed, effect=GAP,
                      competence=[Gate.at_least("acc", 0.95, arms=("kla",))])
    assert only_kla.seeds_kept == (0, 1, 2, 4, 5)
    low_loss = decide(_spec(paper_effect=0.02), per_seed, effect=GAP, competence=[Gate.at_most("bpb", 1.1)])
    assert low_loss.seeds_kept == (0, 2, 4, 5)
    with pytest.raises(ValueError, match="metric 'accuracy' is missing in arm 'kla' of seed 0"):
        decide(_spec(), per_seed, effect=GAP, competence=[Gate.at_least("accuracy", 0.9)])


def test_did_not_learn_lists_the_accuracies() -> None:
    per_seed = {0: _arms(0.99, 0.41, 0.02), 1: _arms(0.37, 0.99, 0.02), 2: _arms(0.99, 0.99, 0.02)}
    d = decide(_spec(paper_effect=0.02), per_seed, effect=GAP, competence=[LEARNED])
    assert d.verdict == DID_NOT_LEARN and d.n_kept == 1
    row = claim_row("KLA beats GDN", "0.02 bits/byte", d)
    assert "seed 0 gdn: acc = 0.41 (needs >= 0.95)" in row["rule / scale note"]
    assert "seed 1 kla: acc = 0.37" in row["rule / scale note"]


def test_mechanism_absent_reports_the_measurement() -> None:
    def run(cost: float) -> dict[int, dict[str, dict[str, float]]]:
        return {s: {"full": {"acc": 90.0 + s}, "ablated": {"acc": 90.0 + s - cost - 0.5 * s}} for s in range(3)}

    gate = MechanismGate.at_least("accuracy lost without thoughts", Difference(metric="acc", a="full", b="ablated"),
                                  10.0, unit="points")
    effect = Difference(metric="acc", a="full")
    spec = ClaimSpec(effect="accuracy", unit="points", direction="greater", threshold=80.0, paper_effect=97.0)
    absent = decide(spec, run(3.0), effect=effect, mechanism=[gate])
    assert absent.verdict == MECHANISM_ABSENT
    assert "accuracy lost without thoughts = 3.5 (per kept seed: 3, 3.5, 4; needs >= 10 points)" in absent.detail
    present = decide(spec, run(15.0), effect=effect, mechanism=[gate])
    assert present.verdict == REPRODUCED and present.mechanisms[0].mean == pytest.approx(15.5)


@pytest.mark.parametrize(("mean", "sd", "decides_as"), [(0.3, 1.5, NOT_REPRODUCED), (0.8, 1.2, REPRODUCED)])
def test_inconclusive_seeds_needed_matches_brute_force(mean: float, sd: float, decides_as: str) -> None:
    d = decide(_spec(), _per_seed(_exact(3, mean, sd)), effect=EFFECT)
    assert d.verdict == INCONCLUSIVE and d.seeds_needed is not None
    first = next(n for n in range(4, 500)
                 if decide(_spec(), _per_seed(_exact(n, mean, sd)), effect=EFFECT).verdict != INCONCLUSIVE)
    assert d.seeds_needed == first and f"about {first} seeds" in d.detail
    assert decide(_spec(), _per_seed(_exact(first, mean, sd)), effect=EFFECT).verdict == decides_as
    assert seeds_to_decide(_spec(), 0.5, 1.0, cap=10) is None  # the interval must shrink below 0.5: far beyond 10


def test_kla_perplexity_gap_not_reproduced() -> None:
    # Paired GDN - KLA bits/byte over 3 seeds: mean -0.0018, 95% t interval about [-0.0043, +0.0007].
    diffs = _exact(3, -0.0018, 0.0025 * math.sqrt(3) / stats.t.ppf(0.975, 2))
    per_seed = {s: {"kla": {"bpb": 1.20}, "gdn": {"bpb": 1.20 + d}} for s, d in enumerate(diffs)}
    spec = ClaimSpec(effect="GDN - KLA bits/byte", unit="bits/byte", direction="greater", paper_effect=0.016)
    d = decide(spec, per_seed, effect=GAP)
    assert d.ci == pytest.approx((-0.0043, 0.0007), abs=1e-6)
    assert d.verdict == NOT_REPRODUCED and "excludes the paper's 0.016 bits/byte" in d.detail
    assert d.ours() == "-0.0018 [-0.0043, 0.0007] bits/byte (n=3)"


@pytest.mark.parametrize("direction", ["greater", "less"])
def test_sides_follow_the_direction(direction: str) -> None:
    sign = 1.0 if direction == "greater" else -1.0
    spec = _spec(direction)
    wrong = decide(spec, _per_seed(-sign * np.array([2.0, 2.2, 1.9])), effect=EFFECT)
    assert wrong.verdict == NOT_REPRODUCED and "wrong side" in wrong.detail
    small = decide(spec, _per_seed(sign * np.array([0.3, 0.32, 0.31])), effect=EFFECT)
    assert small.verdict == REPRODUCED and "a smaller effect" in small.detail
    assert decide(spec, _per_seed(sign * np.array([1.0, 1.1, 0.9])), effect=EFFECT).verdict == REPRODUCED


@pytest.mark.parametrize("direction", ["greater", "less"])
def test_size_claim_short_of_the_reference_is_not_reproduced(direction: str) -> None:
    # an interval beyond 0 but wholly short of the paper's 1.0: reproduced as a direction claim, not as a size claim
    sign = 1.0 if direction == "greater" else -1.0
    small = _per_seed(sign * np.array([0.3, 0.32, 0.31]))
    d = decide(_spec(direction, size_claim=True), small, effect=EFFECT)
    assert d.verdict == NOT_REPRODUCED and "the direction holds, the size does not" in d.detail
    assert "(the size is the claim)" in d.rule
    # an interval that reaches the reference still reproduces; one on the wrong side is still not reproduced
    assert decide(_spec(direction, size_claim=True), _per_seed(sign * np.array([1.0, 1.1, 0.9])),
                  effect=EFFECT).verdict == REPRODUCED
    wrong = decide(_spec(direction, size_claim=True), _per_seed(-sign * np.array([2.0, 2.2, 1.9])), effect=EFFECT)
    assert wrong.verdict == NOT_REPRODUCED and "the size does not" not in wrong.detail
    low, high, _ = confidence_intervals(np.random.default_rng(3).normal(sign * 0.5, 0.3, (200, 5)))
    plain, sized = classify(_spec(direction), low, high), classify(_spec(direction, size_claim=True), low, high)
    # the two rules differ exactly on intervals that both clear 0 and fall short of the reference
    lo, hi = (low, high) if sign > 0 else (-high, -low)
    both = (lo > 0) & (hi < 1.0)
    assert both.any() and (plain[both] == REPRODUCED).all() and (sized[both] == NOT_REPRODUCED).all()
    assert (plain[~both] == sized[~both]).all()


def test_claim_row_and_consistency_table() -> None:
    d = decide(_spec(), _per_seed([1.0, 1.1, 0.9]), effect=EFFECT, competence=[Gate.at_least("x", 0.0)])
    row = claim_row("a is positive", "1 pts", d, "tiny model")
    assert list(row) == ["claim", "paper's number", "ours", "verdict", "rule / scale note"]
    assert row["ours"] == "1 [0.752, 1.25] pts (n=3)" and row["verdict"] == REPRODUCED
    assert "Student t (df=2)" in row["rule / scale note"] and "x >= 0 in every arm" in row["rule / scale note"]
    assert row["rule / scale note"].endswith("tiny model")
    verdict = d.to_verdict("c1", scale_note="tiny model")
    assert isinstance(verdict, Verdict) and verdict.verdict == REPRODUCED and verdict.ours == row["ours"]
    checks = [ConsistencyCheck.within("chunk equals reference", measured=1e-7, expected=0.0, tolerance=1e-6),
              ConsistencyCheck.within("loss decreases", measured=0.5, expected=0.0, tolerance=0.1)]
    rows = consistency_rows(checks)
    assert [r["holds"] for r in rows] == ["yes", "NO"] and all("verdict" not in r for r in rows)


def test_spec_validation() -> None:
    with pytest.raises(ValueError, match="direction"):
        ClaimSpec(effect="e", unit="", direction="up", paper_effect=1.0)
    with pytest.raises(ValueError, match="not both"):
        ClaimSpec(effect="e", unit="", direction="greater", paper_effect=1.0, smallest_effect=0.5,
                  smallest_effect_reason="r")
    with pytest.raises(ValueError, match="smallest_effect_reason"):
        ClaimSpec(effect="e", unit="", direction="greater", smallest_effect=0.5)
    with pytest.raises(ValueError, match="claimed \\(less\\) side"):
        ClaimSpec(effect="e", unit="", direction="less", paper_effect=1.0)
    spec = ClaimSpec(effect="e", unit="pts", direction="greater", smallest_effect=0.5,
                     smallest_effect_reason="half a point is noise on this benchmark")
    assert spec.reference == 0.5 and "(half a point is noise on this benchmark)" in spec.reference_words()


def _log_quadratic(opt: float, calls: list[float] | None = None):
    def score(lr: float) -> float:
        if calls is not None:
            calls.append(lr)
        return (math.log10(lr) - math.log10(opt)) ** 2

    return score


GRID = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)


def test_lr_optimum_inside_the_grid() -> None:
    calls: list[float] = []
    choice = tune_lr(_log_quadratic(1e-3, calls), GRID)
    assert choice.lr == 1e-3 and choice.interior and choice.extensions == 0 and sorted(calls) == list(GRID)
    assert tune_lr(lambda lr: -_log_quadratic(1e-3)(lr), GRID, minimize=False).lr == 1e-3


def test_lr_extends_past_the_upper_edge() -> None:
    calls: list[float] = []
    choice = tune_lr(_log_quadratic(0.05, calls), GRID)
    assert choice.interior and choice.extensions == 2 and choice.lr == pytest.approx(1e-2 * (1e-2 / 3e-3))
    assert len(calls) == len(set(calls)) == len(choice.tried) == 7
    assert tune_lr(_log_quadratic(0.05), GRID, factor=10.0).lr == pytest.approx(0.1)


def test_lr_extends_past_the_lower_edge() -> None:
    choice = tune_lr(_log_quadratic(2e-5), GRID)
    assert choice.interior and choice.extensions == 2 and choice.lr == pytest.approx(1e-4 / 3)
    assert [lr for lr, _ in choice.tried][:2] == pytest.approx([1e-4 / 9, 1e-4 / 3])


def test_lr_beyond_the_cap_says_grid_edge() -> None:
    choice = tune_lr(_log_quadratic(1.0), GRID, max_extensions=2)
    assert choice.grid_edge and choice.extensions == 2 and choice.lr == pytest.approx(1e-2 * (10 / 3) ** 2)
    assert lr_cell({"kla": tune_lr(_log_quadratic(1e-3), GRID), "gdn": choice}) == "kla 0.001, gdn 0.111 (grid edge)"


def test_lr_diverged_runs_count_as_worst() -> None:
    choice = tune_lr(lambda lr: math.nan if lr >= 1e-2 else _log_quadratic(0.05)(lr), GRID)
    assert choice.lr == 3e-3 and choice.interior and choice.extensions == 0


@pytest.mark.parametrize("grid", [(1e-3, 1e-2), (1e-3, 1e-3, 1e-2), (-1e-3, 1e-3, 1e-2)])
def test_lr_bad_grid_raises(grid: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="grid"):
        tune_lr(_log_quadratic(1e-3), grid)
