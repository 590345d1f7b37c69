"""Helpers of the latent-CoT experiments: the paired test-set standard error behind the accuracy verdicts, the
crossing effect behind the trade-off and intervention verdicts, the memoised accuracy."""

from __future__ import annotations

import math

from paperlab.experiments.latent_cot.runs import crossing_effect, paired_se


def test_paired_se():
    a = (True, True, False, False)
    assert paired_se(a, a) == 0.0  # identical hits: no sampling error in the difference
    b = (False, True, True, False)  # differences +1, 0, -1, 0: mean 0, sample var 2/3
    assert math.isclose(paired_se(a, b), math.sqrt((2 / 3) / 4))
    assert math.isnan(paired_se((True,), (False,)))


def test_the_crossing_effect_is_positive_only_for_a_crossing():
    assert crossing_effect(0.05, -0.3) == 0.05  # latent wins graphs by 5 points, loses arithmetic by 30
    assert crossing_effect(-0.07, -0.72) == -0.07  # loses both (measured at seed 0): no crossing
    assert crossing_effect(0.2, 0.1) == -0.1  # wins both: no crossing either


def test_memoised_accuracy_keeps_soft_thought_temperatures_apart(monkeypatch):
    """One model read at two soft-thought temperatures is two measurements (a memo keyed without tau returned the
    first temperature's accuracy for every other)."""
    import torch

    from paperlab.experiments.latent_cot import LatentCoTConfig
    from paperlab.experiments.latent_cot import suite as S

    monkeypatch.setattr(S, "answer_accuracy", lambda *a, soft_tau, **k: soft_tau)
    model, examples = torch.nn.Linear(1, 1), ["q"]
    got = [S.accuracy(LatentCoTConfig(), model, "coconut", examples, soft_tau=t) for t in (0.5, 2.0, None)]
    assert got == [0.5, 2.0, None]
