"""Curriculum transform, KV-cached latent loop vs naive recompute, training glue and evaluation (spec tests 8, 9,
12)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from paperlab.data import DatasetNotFoundError
from paperlab.reasoning.coconut import (
    IGNORE,
    Curriculum,
    collate,
    encode_example,
    frontier_inputs,
    latent_forward,
    latent_forward_naive,
    make_batches,
    reasoning_loss,
    soft_thought,
    stage_at,
    thoughts_for_stage,
)
from paperlab.reasoning.eval import answer_accuracy, cot_step_probes, latent_step_probes
from paperlab.reasoning.prosqa import load_prosqa
from paperlab.reasoning.prosqa_gen import GeneratorConfig, generate_prosqa
from paperlab.reasoning.tokenizer import prosqa_tokenizer
from paperlab.reasoning.train import ReasonerConfig, build_model, train_reasoner

TOK = prosqa_tokenizer()


@pytest.fixture(scope="module")
def real():
    try:
        return load_prosqa("valid", limit=20)
    except DatasetNotFoundError:
        pytest.skip("ProsQA files not found (set PAPERLAB_DATA)")


def _words(ids):
    return [TOK.words[i] for i in ids]


def test_stage_transform_on_real_records(real):
    cur = Curriculum(c=2, max_stage=3, pad_latent_to_max=True)
    ex = next(e for e in real if len(e.steps) == 4)
    q = TOK.encode(ex.question)
    e0 = encode_example(ex, TOK, method="coconut", stage=0, curriculum=cur)
    assert list(e0.prefix) == [*q, TOK.id("\n"), TOK.id("<bot>")] and e0.n_thoughts == 0
    step_tokens = [t for s in ex.steps for t in [*TOK.encode(s), TOK.id("\n")]]
    tail = [TOK.id("###"), *TOK.encode(ex.answer), TOK.eos_id]
    assert list(e0.suffix) == [TOK.id("<eot>"), *step_tokens, *tail]
    e1 = encode_example(ex, TOK, method="coconut", stage=1, curriculum=cur)
    assert e1.n_thoughts == 2 and _words(e1.suffix[1:]) == _words(step_tokens[len(TOK.encode(ex.steps[0])) + 1:]
                                                                  + tail)
    assert thoughts_for_stage(3, 2, cur) == (2, 6)  # s > n: all steps go, still s*c thoughts
    assert thoughts_for_stage(5, 4, cur) == (4, 6)  # s > S_max with padding: S_max*c
    nopad = Curriculum(c=2, max_stage=3, pad_latent_to_max=False)
    assert thoughts_for_stage(5, 2, nopad) == (2, 4)  # without padding: min(n, S_max)*c
    cot = encode_example(ex, TOK, method="cot", stage=3, curriculum=cur)
    assert list(cot.prefix) == q and list(cot.suffix) == [TOK.id("\n"), *step_tokens, *tail]
    no_cot = encode_example(ex, TOK, method="no_cot", stage=0, curriculum=cur)
    assert list(no_cot.suffix) == [TOK.id("\n"), *tail]
    assert encode_example(ex, TOK, method="no_thought", stage=2, curriculum=cur).n_thoughts == 0


def test_label_mask_positions(real):
    cur = Curriculum(max_stage=3)
    items = [encode_example(e, TOK, method="coconut", stage=s, curriculum=cur) for e, s in zip(real[:3], (0, 1, 4),
                                                                                               strict=True)]
    b = collate(items, pad_id=TOK.pad_id)
    for i, e in enumerate(items):
        n = len(e.suffix)
        assert b.labels[i, : n - 1].tolist() == list(e.suffix[1:])  # steps, answer and <eos> only
        assert (b.labels[i, n - 1:] == IGNORE).all()
        assert b.prefix_mask[i].sum() == len(e.prefix) and b.prefix_mask[i, -1]  # left padding
    assert b.n_thoughts.tolist() == [0, 1, 3]


def test_schedule():
    cur = Curriculum(max_stage=2, steps_per_stage=10)
    assert [stage_at(s, cur, method="coconut") for s in (0, 9, 10, 25, 30, 99)] == [0, 0, 1, 2, 3, 3]
    assert stage_at(0, cur, method="no_curriculum") == 3 and stage_at(50, cur, method="cot") == 0
    mixed = Curriculum(max_stage=2, steps_per_stage=10, uniform_prob=1.0)
    data = generate_prosqa(40, config=GeneratorConfig.tiny(), seed=0)
    seen = set()
    for step in range(6):
        b = make_batches(data, TOK, method="coconut", curriculum=mixed, batch_size=16, seed=0)(step)
        seen.update(b.n_thoughts.tolist())
    assert seen == {0, 1, 2}  # uniform_prob = 1 samples stages 0..n; stage 3 > S_max = 2 inserts S_max thoughts
    b1 = make_batches(data, TOK, method="coconut", curriculum=cur, batch_size=4, seed=3)(7)
    b2 = make_batches(data, TOK, method="coconut", curriculum=cur, batch_size=4, seed=3)(7)
    assert torch.equal(b1.prefix_ids, b2.prefix_ids) and torch.equal(b1.suffix_ids, b2.suffix_ids)


def test_short_first_difficulty_curriculum():
    data = generate_prosqa(60, config=GeneratorConfig.easy(), seed=0)  # paths of 1 and 2 steps
    assert {len(e.steps) for e in data} == {1, 2}
    cur = Curriculum(max_stage=1, steps_per_stage=5)
    src = make_batches(data, TOK, method="cot", curriculum=cur, batch_size=32, seed=0, short_first=3)
    nl = TOK.id("\n")

    def n_steps(b):  # "\n" tokens in the suffix = steps + the leading one
        return set(((b.suffix_ids == nl) & b.suffix_mask).sum(1).sub(1).tolist())

    assert n_steps(src(0)) == n_steps(src(2)) == {1}
    assert n_steps(src(3)) == {1, 2}
    late = make_batches(data, TOK, method="cot", curriculum=cur, batch_size=32, seed=0, step_offset=3, short_first=3)
    assert n_steps(late(0)) == {1, 2}  # counted with step_offset (one train call per curriculum stage)
    with pytest.raises(ValueError, match="short_first"):
        make_batches(data, TOK, method="cot", curriculum=cur, batch_size=4, seed=0, short_first=-1)


def _small_batch(method="coconut"):
    data = generate_prosqa(5, config=GeneratorConfig.tiny(), seed=1)
    cur = Curriculum(max_stage=3)
    items = [encode_example(e, TOK, method=method, stage=s, curriculum=cur) for e, s in zip(data, (0, 1, 3, 4, 2),
                                                                                           strict=True)]
    return collate(items, pad_id=TOK.pad_id)


def test_kv_cached_latent_loop_equals_naive_recompute():
    model = build_model(ReasonerConfig(d_model=32, n_layers=2, n_heads=2), len(TOK), seed=0)
    batch = _small_batch()
    hs, th, _ = latent_forward(model, batch)
    hn, tn = latent_forward_naive(model, batch)
    m = batch.suffix_mask[..., None]
    assert torch.allclose(hs * m, hn * m, atol=1e-5) and torch.allclose(th, tn, atol=1e-5)
    g = torch.Generator().manual_seed(0)
    cot = torch.randn(hs.shape, generator=g) * m
    grads = []
    for out in (hs, hn):
        model.zero_grad()
        (out * cot).sum().backward(retain_graph=True)
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    for name in grads[0]:
        assert torch.allclose(grads[0][name], grads[1][name], atol=1e-5), name
    assert grads[0]["embedding.weight"].abs().sum() > 0


def test_thought_entropy_term():
    model = build_model(ReasonerConfig(d_model=32, n_layers=2, n_heads=2), len(TOK), seed=0)
    batch = _small_batch()
    plain, m0 = reasoning_loss(model, batch, method="coconut")
    bonus, m1 = reasoning_loss(model, batch, method="coconut", thought_entropy=0.3)
    assert "thought_entropy" not in m0 and 0 < m1["thought_entropy"] <= math.log(len(TOK)) + 1e-6
    # exactly the CE minus lambda_H x the mean entropy over real thought slots
    _, thoughts, _ = latent_forward(model, batch)
    logp = torch.log_softmax(model.logits(thoughts), -1)
    ent = -(logp.exp() * logp).sum(-1)
    real = torch.arange(thoughts.shape[1])[None, :] < batch.n_thoughts[:, None]
    torch.testing.assert_close(bonus, plain - 0.3 * ent[real].mean(), atol=1e-6, rtol=0)
    model.zero_grad()
    (bonus - plain).backward()  # the entropy term reaches the weights through the thought chain
    assert model.embedding.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="thought_entropy"):
        ReasonerConfig(thought_entropy=float("nan"))


def test_pause_mode_has_no_hidden_state_feedback():
    model = build_model(ReasonerConfig(d_model=32, n_layers=2, n_heads=2), len(TOK), seed=0)
    batch = _small_batch("pause")
    pause = TOK.id("<pause>")
    fed = []
    hs, th, _ = latent_forward(model, batch, feedback=False, pause_id=pause,
                               thought_noise=lambda x, _j: fed.append(x) or x)
    assert torch.allclose(torch.cat(fed, 1), model.embed(torch.full(th.shape[:2], pause)))  # every input: <pause>
    hn, tn = latent_forward_naive(model, batch, feedback=False, pause_id=pause)
    m = batch.suffix_mask[..., None]
    assert torch.allclose(hs * m, hn * m, atol=1e-5) and torch.allclose(th, tn, atol=1e-5)
    with pytest.raises(ValueError, match="pause_id"):
        latent_forward(model, batch, feedback=False)


def test_training_is_seeded_and_learns_format():
    data = generate_prosqa(64, config=GeneratorConfig.tiny(), seed=0)
    cfg = ReasonerConfig(d_model=32, n_layers=1, n_heads=2, batch_size=8, final_steps=4, lr=3e-3,
                         curriculum=Curriculum(max_stage=1, steps_per_stage=3))
    m1, h1 = train_reasoner(data, TOK, method="coconut", config=cfg, seed=0)
    m2, h2 = train_reasoner(data, TOK, method="coconut", config=cfg, seed=0)
    assert [r["loss"] for r in h1] == [r["loss"] for r in h2] and len(h1) == cfg.total_steps == 10
    assert [r["thoughts"] for r in h1] == [0.0] * 3 + [1.0] * 7  # stage 0, 1, then final (S_max * c = 1)
    warm = dataclasses.replace(cfg, warmup=2)  # per-stage linear warm-up: step 0 of each call at lr / 2
    _, h3 = train_reasoner(data, TOK, method="coconut", config=warm, seed=0)
    assert [r["lr"] for r in h3][:2] == pytest.approx([1.5e-3, 3e-3]) and h3[3]["lr"] == pytest.approx(1.5e-3)
    with pytest.raises(ValueError, match="warmup"):
        ReasonerConfig(warmup=-1)
    assert h1[-1]["loss"] < h1[0]["loss"]
    cur = cfg.curriculum
    stats = answer_accuracy(m1, data[:8], TOK, method="coconut", curriculum=cur, max_new_tokens=12)
    assert 0 <= stats.accuracy <= stats.choice_accuracy <= 1 and stats.thoughts == 1.0
    assert stats == answer_accuracy(m2, data[:8], TOK, method="coconut", curriculum=cur, max_new_tokens=12)
    probes = latent_step_probes(m1, data[:4], TOK, method="coconut", curriculum=cur)
    assert probes and all(1 / len(TOK) <= p.i_s_full <= 1 and p.step == 1 for p in probes)
    cot = cot_step_probes(m1, data[:4], TOK)
    assert len(cot) == sum(len(e.steps) for e in data[:4])
    assert all(p.i_s_valid >= 1 / p.n_valid - 1e-12 and p.kl_valid >= -1e-12 for p in cot)


def test_switch_probe_and_noise_paths():
    from paperlab.reasoning.eval import _noise, switch_step_probes

    data = generate_prosqa(6, config=GeneratorConfig.tiny(), seed=2)
    cur = Curriculum(max_stage=2)
    model = build_model(ReasonerConfig(d_model=32, n_layers=1, n_heads=2), len(TOK), seed=0)
    probes = switch_step_probes(model, data, TOK, method="coconut", curriculum=cur)
    assert {p.step for p in probes} == {1, 2} and all(p.n_valid >= 1 for p in probes)
    x = torch.randn(4000, 1, 16, generator=torch.Generator().manual_seed(0)) * 3
    noisy = _noise(x, 0.1, torch.Generator().manual_seed(1))
    rel = ((noisy - x).pow(2).mean(-1).sqrt() / x.pow(2).mean(-1).sqrt()).mean()
    assert abs(rel.item() - 0.1) < 0.01  # sigma is relative to the perturbed vector's RMS
    assert torch.equal(noisy, _noise(x, 0.1, torch.Generator().manual_seed(1))) and _noise(x, 0.0, None) is x
    a = answer_accuracy(model, data, TOK, method="coconut", curriculum=cur, sigma=0.5, seed=3, max_new_tokens=8)
    assert a == answer_accuracy(model, data, TOK, method="coconut", curriculum=cur, sigma=0.5, seed=3,
                                max_new_tokens=8)


def test_predicted_noise_ratio():
    from unittest import mock

    from paperlab.reasoning import eval as ev

    data = generate_prosqa(5, config=GeneratorConfig.tiny(), seed=4)
    model = build_model(ReasonerConfig(d_model=32, n_layers=1, n_heads=2), len(TOK), seed=0)
    sigmas = [0.0, 0.1, 1.0, 10.0]
    assert all(math.isnan(v) for v in ev.predicted_noise_ratio(model, data, TOK, sigmas))  # nothing correct
    with pytest.raises(ValueError, match="explicit decoding"):
        ev.predicted_noise_ratio(model, data, TOK, sigmas, method="coconut")
    all_right = ev.AnswerStats(1.0, 1.0, 5.0, 0.0, (True,) * len(data))
    with mock.patch.object(ev, "answer_accuracy", return_value=all_right):
        pred = ev.predicted_noise_ratio(model, data, TOK, sigmas, method="cot")
    assert pred[0] == 1.0 and all(a >= b for a, b in zip(pred, pred[1:], strict=False)) and pred[-1] < 1.0


def _coconut_reference_sequence(ex, method: str, stage: int, cur: Curriculum) -> list[int]:
    """Coconut's dataset construction (facebookresearch/coconut ``get_cot_latent_dataset``), rewritten from its
    rule: question + "\\n", then ``<bot>`` thoughts ``<eot>`` unless the method sets ``no_special_marker`` (cot,
    no_cot, no_thoughts), then the steps left after the stage's skips, then "### answer" and <eos>; thoughts are
    placeholders here (-1)."""
    nl = TOK.id("\n")
    no_marker = method in ("cot", "no_cot", "no_thought")
    if method == "cot":
        skip, n_latent = 0, 0
    elif method == "no_cot":
        skip, n_latent = len(ex.steps), 0
    else:
        skip, n_latent = thoughts_for_stage(stage, len(ex.steps), cur)
        n_latent = 0 if method == "no_thought" else n_latent
    steps = [t for s in ex.steps[skip:] for t in (*TOK.encode(s), nl)]
    return ([*TOK.encode(ex.question), nl] + ([] if no_marker else [TOK.id("<bot>")]) + [-1] * n_latent
            + ([] if no_marker else [TOK.id("<eot>")]) + steps
            + [TOK.id("###"), *TOK.encode(ex.answer), TOK.eos_id])


@pytest.mark.parametrize("method", ["cot", "no_cot", "coconut", "no_thought"])
def test_token_sequences_match_coconuts_dataset_construction(real, method: str) -> None:
    cur = Curriculum(c=1, max_stage=6)
    for ex in real[:10]:
        for stage in (0, 1, 2, 7):
            enc = encode_example(ex, TOK, method=method, stage=stage, curriculum=cur)
            ours = [*enc.prefix, *([-1] * enc.n_thoughts), *enc.suffix]
            assert ours == _coconut_reference_sequence(ex, method, stage, cur), (method, stage)


def test_the_training_split_loads_from_a_users_file(tmp_path, real) -> None:
    import json

    path = tmp_path / "prosqa_train.json"
    path.write_text(json.dumps([r.to_dict() if hasattr(r, "to_dict") else dataclasses.asdict(r) for r in real[:3]]))
    assert len(load_prosqa("train", path=path)) == 3
    with pytest.raises(ValueError, match="split"):
        load_prosqa("train")  # not in the registry: a path is needed


def test_thought_ablations_feed_what_they_say():
    """zeroed feeds zeros, pause the <pause> embedding, shuffled the next question's intact thoughts; a model
    whose thoughts carry no question (the pause method) is unchanged by shuffling, so the gate would catch it."""
    from paperlab.reasoning.eval import _thought_hook

    model = build_model(ReasonerConfig(d_model=32, n_layers=1, n_heads=2), len(TOK), seed=0)
    batch = _small_batch()
    _, intact, _ = latent_forward(model, batch)
    pause = model.embed(torch.tensor([[TOK.id("<pause>")]]))
    for mode, expected in (("zeroed", torch.zeros_like(intact)), ("pause", pause.expand_as(intact)),
                           ("shuffled", intact.roll(1, dims=0))):
        hook = _thought_hook(model, batch, TOK, method="coconut", thoughts=mode, sigma=0.0, gen=None)
        fed: list[torch.Tensor] = []
        latent_forward(model, batch, thought_noise=lambda x, j, hook=hook, fed=fed: fed.append(hook(x, j)) or fed[-1])
        torch.testing.assert_close(torch.cat(fed, 1), expected, msg=mode)
    data = generate_prosqa(6, config=GeneratorConfig.tiny(), seed=2)
    cur = Curriculum(max_stage=2)
    kw = {"curriculum": cur, "max_new_tokens": 8}
    base = answer_accuracy(model, data, TOK, method="pause", **kw)
    assert answer_accuracy(model, data, TOK, method="pause", thoughts="shuffled", **kw) == base
    assert answer_accuracy(model, data, TOK, method="pause", thoughts="pause", **kw) == base
    with pytest.raises(ValueError, match="method 'cot' has none"):
        answer_accuracy(model, data, TOK, method="cot", thoughts="zeroed", **kw)
    with pytest.raises(ValueError, match="thoughts"):
        answer_accuracy(model, data, TOK, method="coconut", thoughts="dropped", **kw)


def test_frontier_supervision_targets_the_bfs_layers():
    """Slot j of an example at stage s holds the nodes at BFS distance j + 1 (j < s); the loss adds exactly
    -w x mean log(mass on the frontier) and its gradient reaches the weights through the thought chain."""
    data = generate_prosqa(4, config=GeneratorConfig.tiny(), seed=3)
    cur = Curriculum(max_stage=3)
    enc = encode_example(data[0], TOK, method="coconut", stage=2, curriculum=cur)
    assert enc.frontier == tuple(tuple(TOK.id(t) for t in layer) for layer in data[0].frontier[:2])
    assert all(enc.frontier) and encode_example(data[0], TOK, method="cot", stage=0, curriculum=cur).frontier == ()
    model = build_model(ReasonerConfig(d_model=32, n_layers=2, n_heads=2), len(TOK), seed=0)
    batch = _small_batch()
    plain, m0 = reasoning_loss(model, batch, method="coconut")
    sup, m1 = reasoning_loss(model, batch, method="coconut", frontier_weight=0.5)
    _, thoughts, _ = latent_forward(model, batch)
    logp = torch.log_softmax(model.logits(thoughts), -1)
    terms = [torch.logsumexp(logp[i, j, [t for t in batch.frontier[i, j].tolist() if t >= 0]], 0)
             for i in range(thoughts.shape[0]) for j in range(thoughts.shape[1]) if batch.frontier[i, j, 0] >= 0]
    torch.testing.assert_close(sup, plain - 0.5 * torch.stack(terms).mean(), atol=1e-6, rtol=0)
    assert m0["frontier_mass"] == pytest.approx(float(torch.stack(terms).detach().exp().mean()), abs=1e-6)
    model.zero_grad()
    (sup - plain).backward()
    assert model.embedding.weight.grad.abs().sum() > 0
    # pause slots: the supervised state is the hidden state at each slot (the no-feedback control)
    _, mp = reasoning_loss(model, _small_batch("pause"), method="pause", pause_id=TOK.id("<pause>"),
                           frontier_weight=1.0)
    assert 0 < mp["frontier_mass"] <= 1
    with pytest.raises(ValueError, match="frontier_weight"):
        ReasonerConfig(frontier_weight=-1.0)


def test_soft_thoughts_match_the_naive_recompute_and_the_definition():
    model = build_model(ReasonerConfig(d_model=32, n_layers=2, n_heads=2), len(TOK), seed=0)
    batch = _small_batch()
    fed = []
    hs, th, _ = latent_forward(model, batch, soft_tau=0.5, thought_noise=lambda x, _j: fed.append(x) or x)
    hn, tn = latent_forward_naive(model, batch, soft_tau=0.5)
    m = batch.suffix_mask[..., None]
    assert torch.allclose(hs * m, hn * m, atol=1e-5) and torch.allclose(th, tn, atol=1e-5)
    expected = torch.softmax(model.logits(th) / 0.5, -1) @ model.embedding.weight  # softmax(E h / tau)^T E
    torch.testing.assert_close(torch.cat(fed, 1), expected, atol=1e-6, rtol=0)
    cold = latent_forward(model, batch, soft_tau=1e-4)[0]  # tau -> 0: the embedding of the readout's argmax
    argmax = latent_forward(model, batch, thought_noise=lambda x, _j: model.embed(model.logits(x).argmax(-1)))[0]
    assert torch.allclose(cold * m, argmax * m, atol=1e-4)
    with pytest.raises(ValueError, match="soft_tau"):
        latent_forward(model, batch, soft_tau=0.0)
    with pytest.raises(ValueError, match="feedback"):
        latent_forward(model, batch, soft_tau=1.0, feedback=False, pause_id=TOK.id("<pause>"))


def test_teacher_thoughts_feed_the_frontier_mean_and_match_the_naive_recompute():
    model = build_model(ReasonerConfig(d_model=32, n_layers=2, n_heads=2), len(TOK), seed=0)
    batch = _small_batch()
    emb, has = frontier_inputs(model, batch.frontier)
    b, j = [int(i) for i in has.nonzero()[-1]]
    nodes = batch.frontier[b, j][batch.frontier[b, j] >= 0]
    torch.testing.assert_close(emb[b, j], model.embedding.weight[nodes].mean(0))
    fed: list[torch.Tensor] = []
    hs, th, _ = latent_forward(model, batch, soft_tau=0.5, teacher_thoughts=True,
                               thought_noise=lambda x, _j: fed.append(x) or x)
    hn, tn = latent_forward_naive(model, batch, soft_tau=0.5, teacher_thoughts=True)
    m = batch.suffix_mask[..., None]
    torch.testing.assert_close(hs * m, hn * m, atol=1e-5, rtol=0)
    torch.testing.assert_close(th, tn, atol=1e-5, rtol=0)
    x, taught = torch.cat(fed, 1), has[:, : len(fed)]
    assert bool(taught.any()) and bool((~taught).any())
    torch.testing.assert_close(x[taught], emb[:, : len(fed)][taught])  # slots with a frontier: the teacher input
    torch.testing.assert_close(x[~taught], soft_thought(model, th, 0.5)[~taught])  # the others: soft thoughts
    grads = []
    for fwd in (latent_forward, latent_forward_naive):
        model.zero_grad()
        h, t = fwd(model, batch, soft_tau=0.5, teacher_thoughts=True)[:2]
        ((h * m).square().sum() + t.square().sum()).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for g_fast, g_ref in zip(*grads, strict=True):
        torch.testing.assert_close(g_fast, g_ref, atol=1e-4, rtol=1e-4)
    taught_loss = reasoning_loss(model, batch, method="coconut", soft_tau=0.5, teacher_thoughts=True)[0]
    soft_loss = reasoning_loss(model, batch, method="coconut", soft_tau=0.5)[0]
    assert float(taught_loss.detach()) != float(soft_loss.detach())
    with pytest.raises(TypeError, match="teacher_thoughts"):
        ReasonerConfig(teacher_thoughts=1)


def test_cot_input_noise_hits_only_the_step_content_tokens():
    """noise_at='input' perturbs the fed-back embeddings of node tokens: at sigma 0 it equals the clean run, and
    the node mask holds exactly each example's step options."""
    model = build_model(ReasonerConfig(d_model=32, n_layers=1, n_heads=2), len(TOK), seed=0)
    data = generate_prosqa(8, config=GeneratorConfig.tiny(), seed=7)
    kw = {"method": "cot", "curriculum": Curriculum(), "max_new_tokens": 12}
    clean = answer_accuracy(model, data, TOK, **kw)
    assert answer_accuracy(model, data, TOK, noise_at="input", sigma=0.0, **kw) == clean
    from paperlab.reasoning.eval import _node_tokens

    mask = _node_tokens(data, TOK, "cpu")
    for i, ex in enumerate(data):
        names = {o for opts in ex.step_options for o in opts}
        assert {TOK.words[j] for j in mask[i].nonzero().flatten().tolist()} == names
    with pytest.raises(ValueError, match="noise_at"):
        answer_accuracy(model, data, TOK, noise_at="middle", sigma=0.1, **kw)
