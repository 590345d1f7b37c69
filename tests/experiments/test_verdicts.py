"""The verdict helpers on the evidence protocol: t intervals over seeds, never a decision from fewer than 3."""

from __future__ import annotations

import math

import pytest

from paperlab.experiments.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict
from paperlab.experiments.protocol import NO_VERDICT_QUICK, TOO_FEW_SEEDS
from paperlab.experiments.verdicts import (
    ConsistencyCheck,
    consistency_rows,
    quick_verdict,
    verdict_from_effect,
    verdict_from_threshold,
)


def test_effect_rule_decides_by_a_t_interval() -> None:
    v = verdict_from_effect("c", [1.0, 1.2, 0.9], unit="pts")
    assert v.verdict == REPRODUCED and (v.n_run, v.n_kept) == (3, 3)
    assert "(n=3)" in v.ours and "pts" in v.ours and "[" in v.ours
    assert verdict_from_effect("c", [-1.0, -1.2, -0.9]).verdict == NOT_REPRODUCED
    assert verdict_from_effect("c", [1.0, -1.1, 0.2]).verdict == INCONCLUSIVE
    assert verdict_from_effect("c", [-0.5, -0.4, -0.45], claimed_sign=-1).verdict == REPRODUCED
    with pytest.raises(ValueError, match="claimed_sign"):
        verdict_from_effect("c", [1.0], claimed_sign=0)
    # an equivalence (size) rule: above 0 but wholly below the paper's effect is not the paper's advantage
    small = [0.010, 0.011, 0.012]
    assert verdict_from_effect("c", small, paper_effect=0.016).verdict == REPRODUCED
    assert verdict_from_effect("c", small, paper_effect=0.016, size_claim=True).verdict == NOT_REPRODUCED


def test_two_standard_errors_no_longer_decide_at_three_seeds() -> None:
    # mean 1, sd 0.6, n 3: 1 > 2 s.e. (0.69) decided "reproduced" under the old rule; t(2) = 4.30 says not yet
    effects = [1.0 + 0.6 * z for z in (-1.0, 0.0, 1.0)]
    assert verdict_from_effect("c", effects).verdict == INCONCLUSIVE


def test_one_or_two_seeds_never_decide() -> None:
    for effects in ([5.0], [5.0, 5.1]):
        v = verdict_from_effect("c", effects)
        assert v.verdict == TOO_FEW_SEEDS and f"(n={len(effects)})" in v.ours
    assert verdict_from_threshold("c", [0.04], target=0.05, higher_is_better=False).verdict == TOO_FEW_SEEDS


def test_paper_effect_excluded_means_not_reproduced() -> None:
    # the KLA perplexity case: a paired gap far below the paper's 0.016 bits/byte
    v = verdict_from_effect("gap", [-0.0007, -0.0018, -0.0029], paper_effect=0.016, unit="bits/byte")
    assert v.verdict == NOT_REPRODUCED and "0.016" in v.rule


def test_threshold_rule() -> None:
    assert verdict_from_threshold("c", [1.0, 1.0, 1.0], target=1.0).verdict == REPRODUCED  # exactly on target
    assert verdict_from_threshold("c", [0.5, 0.6, 0.55], target=1.0).verdict == NOT_REPRODUCED
    assert verdict_from_threshold("c", [0.9, 1.0, 1.1], target=1.0).verdict == INCONCLUSIVE
    assert verdict_from_threshold("c", [0.03, 0.031, 0.029], target=0.05, higher_is_better=False).verdict == REPRODUCED
    assert verdict_from_threshold("c", [0.97, 0.98, 0.975], target=1.0, tolerance=0.05).verdict == REPRODUCED


def test_diverged_seeds_are_dropped_and_counted() -> None:
    v = verdict_from_effect("c", [1.0, 1.1, math.nan, 0.9])
    assert (v.n_run, v.n_kept) == (4, 3) and v.verdict == REPRODUCED and "diverged" in v.rule
    v = verdict_from_effect("c", [math.nan, math.nan])
    assert v.verdict == TOO_FEW_SEEDS and v.n_kept == 0


def test_quick_verdict_keeps_numbers_and_decides_nothing_under_three_seeds() -> None:
    one = verdict_from_effect("c", [1.0])
    q = quick_verdict(one)
    assert q.verdict == NO_VERDICT_QUICK and q.ours == one.ours
    hand_made = Verdict(claim="c", verdict=REPRODUCED, ours="0.5", rule="r")  # no seed count: never decides
    assert quick_verdict(hand_made).verdict == NO_VERDICT_QUICK
    three = verdict_from_effect("c", [1.0, 1.2, 0.9])
    assert quick_verdict(three) == three


def test_consistency_rows_have_no_verdict_column() -> None:
    rows = consistency_rows([ConsistencyCheck.within("closed form", measured=0.5001, expected=0.5, tolerance=1e-3)])
    assert rows[0]["holds"] == "yes" and "verdict" not in rows[0]


def test_verdict_within_is_an_equivalence_test_that_can_fail() -> None:
    import numpy as np

    from paperlab.experiments.verdicts import verdict_within

    assert verdict_within("x", [0.50, 0.51, 0.49, 0.50], target=0.5, tolerance=0.05).verdict == REPRODUCED
    assert verdict_within("x", [0.70, 0.71, 0.69], target=0.5, tolerance=0.05).verdict == NOT_REPRODUCED
    assert verdict_within("x", [0.40, 0.60, 0.55], target=0.5, tolerance=0.05).verdict == INCONCLUSIVE
    assert verdict_within("x", [0.5, 0.5], target=0.5, tolerance=0.05).verdict == TOO_FEW_SEEDS
    assert "(n=3)" in verdict_within("x", [0.5, 0.51, float("nan"), 0.49], target=0.5, tolerance=0.1).ours
    # a true mean on the tolerance edge: "reproduced" at most 2.5% (+ simulation noise) of 2000 draws
    rng = np.random.default_rng(0)
    hits = sum(verdict_within("x", list(0.55 + 0.02 * rng.standard_normal(5)), target=0.5,
                              tolerance=0.05).verdict == REPRODUCED for _ in range(2000))
    assert hits / 2000 <= 0.035


def test_all_of_needs_every_part():
    from paperlab.experiments.base import Verdict
    from paperlab.experiments.verdicts import all_of

    def v(verdict):
        return Verdict(claim="p", verdict=verdict, ours="", rule="", n_run=3, n_kept=3)

    assert all_of([]) == "too few seeds"
    assert all_of([v("reproduced"), v("reproduced")]) == "reproduced"
    assert all_of([v("reproduced"), v("inconclusive at this scale")]).startswith("inconclusive")
    assert all_of([v("inconclusive at this scale"), v("not reproduced")]) == "not reproduced"
    assert all_of([v("not reproduced"), v("too few seeds")]) == "too few seeds"
