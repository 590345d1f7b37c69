"""The rerun's recipe learns its task: a shortened seeded run of ``full()``'s CoT reasons over two hops.

Slow (about 6 CPU-minutes on one thread): run with ``--runslow`` or ``PAPERLAB_SLOW=1``. The fast suite checks the
part that made the recipe learn at all, the edge-recall warm-up (``tests/reasoning/test_recall.py``).
"""

from __future__ import annotations

import dataclasses

import pytest

from paperlab.experiments.latent_cot import full

TWO_HOP_BAR = 0.6  # exact match; a model that answers with one of the two options by chance scores ~0.5


@pytest.mark.slow
def test_the_full_recipe_learns_two_hop_questions():
    from paperlab._runtime import torch_threads
    from paperlab.experiments.latent_cot import suite as S

    # full()'s model, data and warm-up; 1500 CoT steps instead of 4000 (pilot: 0.66 at 2 hops after 1500 of 4000)
    cfg = dataclasses.replace(full(), seeds=(0,), methods=("cot",), n_train=60_000, n_test=300, harder=(),
                              steps_per_stage=100, final_steps=1000)
    with torch_threads(1):
        model, _ = S.trained(cfg, "cot", 0)
        test = S.datasets(cfg)["generated"]
        hits = S.accuracy(cfg, model, "cot", test).correct
    two = [h for h, ex in zip(hits, test, strict=True) if len(ex.steps) == 2]
    assert len(two) >= 50 and sum(two) / len(two) >= TWO_HOP_BAR, sum(two) / len(two)
