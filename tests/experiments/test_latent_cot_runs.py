"""Helpers of the latent-CoT experiments: the paired test-set standard error behind the accuracy verdicts, the
crossing effect behind the trade-off and intervention verdicts."""

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
