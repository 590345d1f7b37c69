"""Latent CoT's learning-rate review: each arm's tuning status, and verdicts decided only at tuned lrs."""

from __future__ import annotations

import dataclasses

import pytest

from paperlab.experiments.base import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Result, Verdict
from paperlab.experiments.latent_cot import PAPER, LatentCoTConfig
from paperlab.experiments.latent_cot.review import CLAIM_ARMS, review_verdicts
from paperlab.experiments.lr_search import LRChoice


def test_every_claim_names_the_arms_it_compares():
    assert set(CLAIM_ARMS) == {c.id for c in PAPER.claims} and PAPER.review is review_verdicts


def _hits(lo: int, hi: int, n: int = 500) -> tuple[bool, ...]:
    return tuple(lo <= i < hi for i in range(n))


def _fake_runs(monkeypatch, hits: dict[tuple[int, float], tuple[bool, ...]]) -> None:
    from paperlab.experiments.latent_cot import suite as S

    monkeypatch.setattr(S, "trained", lambda cfg, method, seed, *, lr: ((seed, lr), None))
    monkeypatch.setattr(S, "dev_set", lambda cfg: "dev")
    monkeypatch.setattr(S, "accuracy", lambda cfg, model, method, dev: type("A", (), {"correct": hits[model]}))


def _choice(recipe_score: float) -> LRChoice:
    return LRChoice(lr=1e-3, score=0.852, tried=((1.1e-4, 0.8), (3.3e-4, recipe_score), (1e-3, 0.852), (3e-3, 0.29)),
                    interior=True, extensions=1)


@pytest.mark.parametrize(("recipe_right", "expected"), [((20, 441), "tied"), ((60, 440), "off")])
def test_a_recipe_lr_within_two_paired_standard_errors_of_the_best_is_tied(monkeypatch, recipe_right, expected):
    """Best 1e-3 (426 of 500 right) against the recipe 3.3e-4: 421 right, the two disagreeing on 35 questions,
    is a tie (0.010 apart, paired s.e. 0.012); 380 right, disagreeing on 74, is not (0.092 apart, s.e. 0.017)."""
    from paperlab.experiments.latent_cot import lr_tuning as LT

    hits = {(0, 1e-3): _hits(0, 426), (0, 3.3e-4): _hits(*recipe_right)}
    _fake_runs(monkeypatch, hits)
    choice = _choice(sum(hits[0, 3.3e-4]) / 500)
    status, se, extra = LT.arm_status(LatentCoTConfig(), "cot", choice, 3.3e-4)
    assert (status, extra) == (expected, []) and se == pytest.approx(LT.R.paired_se(hits[0, 1e-3], hits[0, 3.3e-4]))
    best = dataclasses.replace(choice, lr=3.3e-4, score=choice.tried[1][1])
    assert LT.arm_status(LatentCoTConfig(), "cot", best, 3.3e-4) == ("tuned", None, [])
    edge = dataclasses.replace(choice, interior=False)
    assert LT.arm_status(LatentCoTConfig(), "cot", edge, 3.3e-4) == ("off", None, [])


@pytest.mark.parametrize(("other_seeds_recipe", "expected"), [((0, 426), "tied"), ((80, 426), "off")])
def test_a_tie_on_the_first_seed_is_decided_on_every_seed(monkeypatch, other_seeds_recipe, expected):
    """Seed 0 ties (0.010 apart); on seeds 1 and 2 the recipe lr scores as the best does (the tie holds) or 80
    questions lower (pooled over the three seeds 0.110 apart, beyond 2 s.e.: off)."""
    from paperlab.experiments.latent_cot import lr_tuning as LT

    hits = {(0, 1e-3): _hits(0, 426), (0, 3.3e-4): _hits(20, 441)}
    for seed in (1, 2):
        hits[seed, 1e-3], hits[seed, 3.3e-4] = _hits(0, 426), _hits(*other_seeds_recipe)
    _fake_runs(monkeypatch, hits)
    cfg = LatentCoTConfig(seeds=(0, 1, 2))
    status, se, extra = LT.arm_status(cfg, "cot", _choice(0.842), 3.3e-4, confirm_seeds=(1, 2))
    assert status == expected and [(s, lr) for s, lr, _ in extra] == [(1, 1e-3), (1, 3.3e-4), (2, 1e-3), (2, 3.3e-4)]
    pooled = [hits[s, lr] for lr in (1e-3, 3.3e-4) for s in (0, 1, 2)]
    assert se == pytest.approx(LT.R.paired_se(sum(pooled[:3], ()), sum(pooled[3:], ())))


def _verdict(claim: str, verdict: str = NOT_REPRODUCED) -> Verdict:
    return Verdict(claim=claim, verdict=verdict, ours="-0.06", rule="claimed positive effect")


def _tuning(**status: str) -> Result:
    rows = [{"task": arm.split("__")[0], "method": arm.split("__")[1], "recipe": recipe, "status": st}
            for arm, st in status.items() for recipe in (False, True)]
    return Result(experiment="lr_tuning", config={}, rows=rows)


def test_a_verdict_stays_decided_only_where_every_arm_it_compares_is_tuned():
    acc = Result(experiment="accuracy", config={}, verdicts=[_verdict("lcot-exploration", REPRODUCED)])
    cur = Result(experiment="curriculum", config={}, verdicts=[_verdict("lcot-curriculum")])
    trade = Result(experiment="tradeoff", config={}, verdicts=[_verdict("lcot-tradeoff", INCONCLUSIVE)])
    tuning = _tuning(graph__cot="tied", graph__coconut="tuned", graph__no_curriculum="off", arith__cot="ceiling")
    review_verdicts([tuning, acc, cur, trade])
    assert acc.verdicts[0].verdict == REPRODUCED  # tied and tuned arms: decided
    assert cur.verdicts[0].verdict == INCONCLUSIVE and "['graph/no_curriculum'] not at a tuned" in cur.verdicts[0].rule
    assert trade.verdicts[0].verdict == INCONCLUSIVE and "undecided" not in trade.verdicts[0].rule  # left alone


def test_without_a_tuning_result_no_latent_verdict_is_decided():
    acc = Result(experiment="accuracy", config={}, verdicts=[_verdict("lcot-exploration")])
    review_verdicts([acc])
    assert acc.verdicts[0].verdict == INCONCLUSIVE and "lr_tuning did not run" in acc.verdicts[0].rule
