"""The rerun's recipe learns its task: a shortened seeded run of ``full()``'s CoT reasons over two hops, and so
does Coconut trained from it (the recipe's curriculum, stages shortened).

Whether Coconut's answer uses its thoughts is not asserted here: at these shortened stages (100 steps each) it
did not pass the thought-ablation gate (session 22), while the full recipe's Coconut did at 3 of 3 seeds (the
``--full`` results, table "thought ablation"); the gate itself is tested in ``test_latent_cot.py``.

Slow (about 7 CPU-minutes on one thread for CoT, 9 more for Coconut): run with ``--runslow`` or
``PAPERLAB_SLOW=1``. The fast suite checks the part that made the recipe learn at all, the edge-recall warm-up
(``tests/reasoning/test_recall.py``), and that the ablation gate catches thoughts cut from the computation
(``test_latent_cot.py``).
"""

from __future__ import annotations

import dataclasses

import pytest

from paperlab.experiments.latent_cot import full

TWO_HOP_BAR = 0.6  # exact match; a model that answers with one of the two options by chance scores ~0.5
# full()'s model, data, warm-up and per-arm lrs; 1500 CoT steps instead of 4000 (pilot: 0.66 at 2 hops after 1500
# of 4000) and Coconut's stages 1-4 at 100 steps each and 1000 final steps instead of 500 and 1500
SHORT = dict(seeds=(0,), methods=("cot", "coconut"), n_train=60_000, n_test=300, harder=(), steps_per_stage=100,
             final_steps=1000)


def _two_hop_accuracy(method: str) -> float:
    from paperlab._runtime import torch_threads
    from paperlab.experiments.latent_cot import suite as S

    cfg = dataclasses.replace(full(), **SHORT)
    with torch_threads(1):
        model, _ = S.trained(cfg, method, 0)
        test = S.datasets(cfg)["generated"]
        hits = S.accuracy(cfg, model, method, test).correct
    two = [h for h, ex in zip(hits, test, strict=True) if len(ex.steps) == 2]
    assert len(two) >= 50
    return sum(two) / len(two)


@pytest.mark.slow
def test_the_full_recipe_learns_two_hop_questions():
    acc = _two_hop_accuracy("cot")
    assert acc >= TWO_HOP_BAR, acc


@pytest.mark.slow
def test_coconut_from_the_recipes_cot_learns_two_hop_questions():
    acc = _two_hop_accuracy("coconut")
    assert acc >= TWO_HOP_BAR, acc
