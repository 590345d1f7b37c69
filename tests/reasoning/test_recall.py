"""Edge-recall warm-up: the sequences ask every edge once, batches are seeded, and a short warm-up learns lookup."""

from __future__ import annotations

import random

import pytest
import torch

from paperlab.reasoning.prosqa_gen import GeneratorConfig, generate_prosqa
from paperlab.reasoning.recall import recall_accuracy, recall_batches, recall_loss, recall_sequence, warm_up_recall
from paperlab.reasoning.symbolic import symbolic_tokenizer, to_symbolic
from paperlab.reasoning.train import ReasonerConfig, build_model, train_reasoner, warmed_up

TOK = symbolic_tokenizer()


def _graphs(n: int, seed: int, preset: str = "easy"):
    return [to_symbolic(e, seed=seed + i) for i, e in enumerate(
        generate_prosqa(n, config=GeneratorConfig.preset(preset), seed=seed))]


def test_a_recall_sequence_asks_every_edge_once_after_the_questions_edge_list():
    ex = _graphs(1, 0, "small")[0]
    ids, targets = recall_sequence(ex, TOK, rng=random.Random(0))
    q = TOK.encode(ex.question)
    cut = q.index(TOK.id("query")) + 1
    assert ids[:cut] == q[:cut] and len(ids) == len(targets) == cut + 2 * len(ex.edges)
    pairs = [(TOK.decode([a]), TOK.decode([b])) for a, b in zip(ids[cut::2], ids[cut + 1::2], strict=True)]
    assert sorted(pairs) == sorted((ex.names[a], ex.names[b]) for a, b in ex.edges)
    # each child is the next-token target of its source's position and nothing else is labelled
    labelled = [(t, ids[t + 1]) for t, y in enumerate(targets) if y != -100]
    assert [t for t, _ in labelled] == list(range(cut, len(ids), 2))
    assert all(targets[t] == child for t, child in labelled)


def test_recall_batches_are_seeded_and_refuse_english_records():
    exs = _graphs(20, 1)
    a, b = recall_batches(exs, TOK, batch_size=4, seed=3), recall_batches(exs, TOK, batch_size=4, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a(5), b(5), strict=True))
    assert not torch.equal(a(5)[0], a(6)[0])
    english = generate_prosqa(2, config=GeneratorConfig.easy(), seed=0)
    with pytest.raises(ValueError, match="symbolic"):
        recall_sequence(english[0], TOK, rng=random.Random(0))
    with pytest.raises(ValueError, match="at least one"):
        recall_batches([], TOK, batch_size=2, seed=0)
    with pytest.raises(ValueError, match="recall_steps"):
        ReasonerConfig(recall_steps=-1)


def test_a_short_warm_up_learns_in_context_lookup():
    """The point of the warm-up: lookup forms within a few hundred dense steps (chance is ~1/#nodes)."""
    torch.manual_seed(0)
    train, held_out = _graphs(4000, 10), _graphs(100, 20_000)
    cfg = ReasonerConfig(d_model=64, n_layers=2, lr=3e-3, recall_steps=300, recall_batch_size=32, warmup=50)
    fresh = build_model(cfg, len(TOK), seed=0)
    before = recall_accuracy(fresh, held_out, TOK)
    model, history = warmed_up(train, TOK, config=cfg, seed=0)
    after = recall_accuracy(model, held_out, TOK)
    assert before < 0.3 and after >= 0.8, (before, after)  # measured 0.0 -> 0.88
    assert len(history) == 300 and history[-1]["loss"] < history[0]["loss"]


def test_train_reasoner_starts_from_the_given_state_or_warms_up_itself():
    exs = _graphs(50, 2)
    cfg = ReasonerConfig(d_model=32, n_layers=1, n_heads=2, final_steps=1, batch_size=4, recall_steps=2,
                         recall_batch_size=4)
    warm, _ = warmed_up(exs, TOK, config=cfg, seed=0)
    a, _ = train_reasoner(exs, TOK, method="cot", config=cfg, seed=0, init_state=warm.state_dict())
    b, _ = train_reasoner(exs, TOK, method="cot", config=cfg, seed=0)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    loss, metrics = recall_loss(warm, recall_batches(exs, TOK, batch_size=4, seed=0)(0))
    assert torch.isfinite(loss) and 0 <= metrics["recall_acc"] <= 1
    with pytest.raises(ValueError, match="at least one"):
        warm_up_recall(warm, [], TOK, steps=1, lr=1e-3, batch_size=2, seed=0)


def test_latent_methods_started_from_a_cot_model_skip_stage_zero():
    from paperlab.reasoning.coconut import Curriculum
    from paperlab.reasoning.train import _segments

    cur = Curriculum(max_stage=2, steps_per_stage=10)
    cfg = ReasonerConfig(final_steps=5, curriculum=cur, from_stage=1)
    assert _segments(cfg, "coconut") == [(10, 10), (20, 10), (30, 5)]  # stages 1, 2, then the final stage
    assert _segments(cfg, "no_curriculum") == [(10, 25)] and _segments(cfg, "cot") == [(0, 35)]
    assert _segments(ReasonerConfig(final_steps=5, curriculum=cur), "coconut")[0] == (0, 10)
    with pytest.raises(ValueError, match="from_stage"):
        ReasonerConfig(curriculum=cur, from_stage=4)
