"""The rerun's recipe learns its task: ``full()``'s CoT at seed 0 reasons over two hops, and so does its Coconut,
trained from that CoT, with thoughts its answer uses.

Slow (about 30 CPU-minutes on one thread: edge-recall warm-up, CoT and Coconut on 128k generated questions): run
with ``--runslow`` or ``PAPERLAB_SLOW=1``. It runs the recipe itself, not a shortened copy: shortened to 1500
steps at graph CoT's tuned lr 1e-3, CoT stayed at 0.32 on two-hop questions (session 22; it had passed at 3.3e-4),
and Coconut with 100-step stages answered two-hop questions without using its thoughts. The fast suite checks the
part that made the recipe learn at all, the edge-recall warm-up (``tests/reasoning/test_recall.py``), and that
the ablation gate catches thoughts cut from the computation (``test_latent_cot.py``).
"""

from __future__ import annotations

import dataclasses

import pytest

from paperlab.experiments.latent_cot import full

TWO_HOP_BAR = 0.6  # exact match; a model that answers with one of the two options by chance scores ~0.5


def _recipe():
    return dataclasses.replace(full(), seeds=(0,), methods=("cot", "coconut"))


def _two_hop_accuracy(method: str) -> float:
    from paperlab._runtime import torch_threads
    from paperlab.experiments.latent_cot import suite as S

    cfg = _recipe()
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
def test_the_recipes_coconut_learns_two_hop_questions_with_its_thoughts():
    from paperlab._runtime import torch_threads
    from paperlab.experiments.latent_cot import runs as R

    acc = _two_hop_accuracy("coconut")
    assert acc >= TWO_HOP_BAR, acc
    with torch_threads(1):
        assert R.thoughts_used(_recipe(), 0, "coconut"), "thought ablation gate failed"
