"""ProsQA loader, generator invariants and statistics, and the word-level tokenizer."""

from __future__ import annotations

import dataclasses

import pytest

from paperlab.data import DatasetNotFoundError
from paperlab.reasoning.prosqa import ProsQAExample, bfs_distances, check_example, load_prosqa
from paperlab.reasoning.prosqa_gen import GeneratorConfig, generate_prosqa
from paperlab.reasoning.prosqa_stats import dataset_statistics
from paperlab.reasoning.tokenizer import SPECIALS, WordTokenizer, prosqa_tokenizer


def _real(split: str):
    try:
        return load_prosqa(split)
    except DatasetNotFoundError:
        pytest.skip("ProsQA files not found (set PAPERLAB_DATA)")


@pytest.mark.parametrize(("split", "n", "steps"), [("valid", 300, {3: 124, 4: 133, 5: 36, 6: 7}),
                                                   ("test", 500, {3: 202, 4: 217, 5: 69, 6: 12})])
def test_loader_parses_real_files(split, n, steps):
    data = _real(split)
    assert len(data) == n
    counts = {k: sum(len(ex.steps) == k for ex in data) for k in steps}
    assert counts == steps
    for ex in data:
        check_example(ex)
        assert ProsQAExample.from_dict(ex.to_dict()) == ex


def test_tokenizer_round_trips_every_real_string():
    tok = prosqa_tokenizer()
    assert len(tok) == 70 and tok.words[: len(SPECIALS)] == SPECIALS
    for ex in _real("valid") + _real("test"):
        for s in (ex.question, ex.answer, *ex.steps):
            assert tok.decode(tok.encode(s)) == s


def test_tokenizer_rejects_bad_input():
    tok = prosqa_tokenizer()
    with pytest.raises(ValueError, match="unknown token 'dog'"):
        tok.encode("Every dog is a lempus.")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([999])
    with pytest.raises(ValueError, match="special tokens"):
        WordTokenizer(["a", "b"])
    assert tok.split("Tom is a lempus.\n<bot>###") == ["Tom", "is", "a", "lempus", ".", "\n", "<bot>", "###"]


@pytest.mark.parametrize("config", [GeneratorConfig.easy(), GeneratorConfig.tiny(), GeneratorConfig.small(),
                                    GeneratorConfig.real_like(), GeneratorConfig.small().harder(2)],
                         ids=["easy", "tiny", "small", "real", "harder2"])
def test_generator_invariants(config):
    data = generate_prosqa(60, config=config, seed=3)
    tok = prosqa_tokenizer()
    for ex in data:
        check_example(ex)  # target reachable, neg not, steps = a shortest path, facts = edges, answer
        ch = ex.children()
        assert ch[ex.target] == [] and ch[ex.neg_target] == []  # both options are sinks, as in the real files
        assert config.depth[0] <= len(ex.steps) <= config.depth[1]
        assert config.n_persons[0] <= sum(s[0].isupper() for s in ex.idx_to_symbol) <= config.n_persons[1]
        assert ProsQAExample.from_dict(ex.to_dict()) == ex
        assert tok.decode(tok.encode(ex.question)) == ex.question
        assert bfs_distances(ch, ex.root)[ex.target] == len(ex.steps)


def test_generator_is_seeded():
    a = generate_prosqa(20, seed=7)
    assert a == generate_prosqa(20, seed=7)
    assert a != generate_prosqa(20, seed=8)


def test_real_like_statistics_match_the_real_files():
    """Generated graphs have the real files' shape: sizes, the answer's parents, leaves, persons up to 6, hops
    3-6 (real: valid + test; seed 1 was not the seed the preset was calibrated on)."""
    real = dataset_statistics(_real("valid") + _real("test"))
    gen = dataset_statistics(generate_prosqa(800, config=GeneratorConfig.real_like(), seed=1))
    for key, tol in [("nodes", 0.05), ("edges", 0.05), ("question_words", 0.05), ("reachable", 0.05),
                     ("root_out_degree", 0.05), ("mean_steps", 0.03), ("persons", 0.05), ("answer_in_degree", 0.05),
                     ("leaves", 0.05)]:
        assert abs(gen[key] - real[key]) <= tol * real[key], (key, gen[key], real[key])
    assert abs(gen["target_first"] - 0.5) < 0.05
    assert abs(gen["distractor_more_parents"] - real["distractor_more_parents"]) < 0.05
    assert set(gen["steps"]) == set(real["steps"]) == {3, 4, 5, 6}
    assert set(gen["persons_share"]) == set(real["persons_share"]) == {2, 3, 4, 5, 6}
    tv = 0.5 * sum(abs(gen["persons_share"][k] - real["persons_share"][k]) for k in real["persons_share"])
    assert tv < 0.03


def test_check_example_catches_corruption():
    ex = generate_prosqa(1, seed=0)[0]
    with pytest.raises(ValueError, match="reachable"):
        check_example(dataclasses.replace(ex, neg_target=ex.target))
    with pytest.raises(ValueError, match="steps"):
        check_example(dataclasses.replace(ex, steps=ex.steps[:-1]))
    with pytest.raises(ValueError, match="edges"):
        check_example(dataclasses.replace(ex, edges=ex.edges[:-1]))


def test_config_validation():
    with pytest.raises(ValueError, match="n_persons"):
        GeneratorConfig(n_persons=(1, 2))
    with pytest.raises(ValueError, match="depth_weights"):
        GeneratorConfig(depth=(2, 4), depth_weights=(1.0,))
    with pytest.raises(ValueError, match="persons_weights"):
        GeneratorConfig(n_persons=(2, 3), persons_weights=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="sink_prob"):
        GeneratorConfig(sink_prob=1.0)
    with pytest.raises(ValueError, match="target_in_keep"):
        GeneratorConfig(target_in_keep=1.5)
    with pytest.raises(ValueError, match="too small"):
        GeneratorConfig(n_nodes=(5, 6), depth=(4, 4))
    with pytest.raises(ValueError, match="split"):
        load_prosqa("train")
