"""Helpers of the latent-CoT experiments: the paired test-set standard error behind the accuracy verdicts."""

from __future__ import annotations

import math

from paperlab.experiments.latent_cot.runs import paired_se


def test_paired_se():
    a = (True, True, False, False)
    assert paired_se(a, a) == 0.0  # identical hits: no sampling error in the difference
    b = (False, True, True, False)  # differences +1, 0, -1, 0: mean 0, sample var 2/3
    assert math.isclose(paired_se(a, b), math.sqrt((2 / 3) / 4))
    assert math.isnan(paired_se((True,), (False,)))
