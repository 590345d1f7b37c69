"""The symbolic ProsQA format: one token per node, real and generated records, BFS frontiers, training on it."""

from __future__ import annotations

import pytest

from paperlab.data import DatasetNotFoundError
from paperlab.reasoning.coconut import Curriculum, encode_example
from paperlab.reasoning.eval import answer_accuracy
from paperlab.reasoning.prosqa import bfs_distances, load_prosqa
from paperlab.reasoning.prosqa_gen import GeneratorConfig, generate_prosqa
from paperlab.reasoning.symbolic import symbolic_tokenizer, to_symbolic
from paperlab.reasoning.train import ReasonerConfig, train_reasoner

TOK = symbolic_tokenizer()


def _check(sym) -> None:
    """The symbolic record states the source graph exactly, one token per node."""
    src, names = sym.source, sym.names
    assert len(set(names)) == len(names) == len(src.idx_to_symbol)
    words = sym.question.split()
    cut = words.index("query")
    pairs = " ".join(words[:cut - 1]).split(" , ")  # the edges, each followed by ","
    assert sorted(tuple(p.split()) for p in pairs if p) == sorted((names[a], names[b]) for a, b in src.edges)
    assert words[cut + 1] == names[src.root] and words[cut + 2] == "options"
    assert sorted(words[cut + 3:]) == sorted([names[src.target], names[src.neg_target]])
    assert sym.answer == names[src.target] and sym.steps[-1] == sym.answer
    edge_set, node = set(src.edges), src.root  # the steps walk a shortest path, one node each
    for tok in sym.steps:
        nxt = names.index(tok)
        assert (node, nxt) in edge_set
        node = nxt
    dist = bfs_distances(src.children(), src.root)
    assert len(sym.steps) == dist[src.target] == len(sym.frontier)
    for k, layer in enumerate(sym.frontier, start=1):
        assert set(layer) == {names[v] for v, d in dist.items() if d == k} and sym.steps[k - 1] in layer
    assert len(TOK.encode(sym.question)) == 3 * len(src.edges) + 5  # a b , per edge; query r options x y


def test_generated_records_convert_and_tokenise():
    for ex in generate_prosqa(50, config=GeneratorConfig.real_like(), seed=0):
        _check(to_symbolic(ex, seed=3))
    ex = generate_prosqa(1, seed=1)[0]
    assert to_symbolic(ex, seed=5) == to_symbolic(ex, seed=5) and to_symbolic(ex, seed=5) != to_symbolic(ex, seed=6)
    with pytest.raises(ValueError, match="n_symbols"):
        to_symbolic(ex, seed=0, n_symbols=3)


def test_edge_order_does_not_name_the_answer():
    """Generated graphs list the root's component first, so without shuffling the option whose node appears
    first in the edge list was the answer on 100% of questions (40% on the real records); the converted
    questions must not carry that cue."""
    exs = generate_prosqa(400, config=GeneratorConfig.real_like(), seed=4)
    assert all(min(i for i, e in enumerate(ex.edges) if ex.target in e) <
               min(i for i, e in enumerate(ex.edges) if ex.neg_target in e) for ex in exs)  # the cue in the source
    first = 0
    for i, ex in enumerate(exs):
        sym = to_symbolic(ex, seed=i)
        words = sym.question.split()
        other = next(o for o in words[words.index("options") + 1:] if o != sym.answer)
        first += words.index(sym.answer) < words.index(other)
    assert 0.4 < first / len(exs) < 0.6, first / len(exs)


def test_real_records_convert():
    try:
        real = load_prosqa("valid") + load_prosqa("test")
    except DatasetNotFoundError as err:
        pytest.skip(str(err))
    for i, ex in enumerate(real):
        _check(to_symbolic(ex, seed=i))
    english = sum(len(ex.question.split()) for ex in real) / len(real)
    symbolic = sum(len(to_symbolic(ex, seed=0).question.split()) for ex in real) / len(real)
    assert symbolic < 0.65 * english  # about 3 tokens per edge instead of 5-6 words


def test_every_method_encodes_it_and_training_runs_on_it():
    """Every method tokenises the symbolic format, and a short CoT run fits it (loss down by more than half).

    Not yet a recipe that learns the task: a d = 64 CoT model reached 0.555 held-out accuracy on 1-2 hop
    questions after 1000 steps and 0.63 after 2000 (the in-context edge lookup is the bottleneck), short of the
    0.9 pilot gate the latent-CoT rerun needs."""
    cur = Curriculum(max_stage=1, steps_per_stage=1)
    data = [to_symbolic(ex, seed=i) for i, ex in enumerate(generate_prosqa(300, config=GeneratorConfig.easy(),
                                                                           seed=0))]
    for method in ("cot", "no_cot", "coconut", "pause", "no_thought"):
        enc = encode_example(data[0], TOK, method=method, stage=1, curriculum=cur)
        assert enc.prefix and enc.suffix
    cfg = ReasonerConfig(d_model=32, n_layers=1, n_heads=2, batch_size=16, final_steps=60, lr=3e-3, curriculum=cur)
    model, hist = train_reasoner(data, TOK, method="cot", config=cfg, seed=0)
    assert hist[-1]["loss"] < 0.5 * hist[0]["loss"]
    acc = answer_accuracy(model, data[:32], TOK, method="cot", curriculum=cur, max_new_tokens=8)
    assert 0.0 <= acc.accuracy <= acc.choice_accuracy <= 1.0


def test_step_options_and_cot_probes_agree_across_formats():
    """The same questions probed in English and symbolic form: the gold node is among each step's options,
    and the CoT probe reads one value per step with as many options in both formats."""
    from paperlab.reasoning.eval import cot_step_probes, switch_step_probes
    from paperlab.reasoning.tokenizer import prosqa_tokenizer
    from paperlab.reasoning.train import build_model

    data = generate_prosqa(6, config=GeneratorConfig.tiny(), seed=5)
    sym = [to_symbolic(e, seed=i) for i, e in enumerate(data)]
    for e, s in zip(data, sym, strict=True):
        assert all(e.idx_to_symbol[v] in opts for v, opts in zip(e.path, e.step_options, strict=True))
        assert all(step in opts for step, opts in zip(s.steps, s.step_options, strict=True))
        assert [len(o) for o in e.step_options] == [len(o) for o in s.step_options]
    eng_tok, sym_tok = prosqa_tokenizer(), symbolic_tokenizer()
    cfg = ReasonerConfig(d_model=16, n_layers=1, n_heads=2)
    eng = cot_step_probes(build_model(cfg, len(eng_tok), seed=0), data, eng_tok)
    symb = cot_step_probes(build_model(cfg, len(sym_tok), seed=0), sym, sym_tok)
    assert [(p.step, p.n_valid) for p in eng] == [(p.step, p.n_valid) for p in symb]
    assert all(0 < p.mass_valid <= 1 for p in symb)
    with pytest.raises(ValueError, match="English"):
        switch_step_probes(build_model(cfg, len(sym_tok), seed=0), sym, sym_tok, method="coconut",
                           curriculum=Curriculum())
