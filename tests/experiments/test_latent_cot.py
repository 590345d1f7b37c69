"""The latent-CoT paper module: registration, and all five experiments on a shrunk config."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from paperlab.experiments import cache, get_paper
from paperlab.experiments.latent_cot import (
    PAPER,
    DynamicsConfig,
    InterventionConfig,
    LatentCoTConfig,
    TuningConfig,
    full,
    medium,
    quick,
    tuning_full,
)
from paperlab.experiments.protocol import NOT_TESTABLE


def test_registration():
    assert get_paper("latent_cot") is PAPER and get_paper("2602.01148") is PAPER
    names = {e.name for e in PAPER.experiments}
    assert names == {"accuracy", "symbolic_index", "noise", "exploration", "tradeoff", "curriculum",
                     "error_accumulation", "intervention", "thought_pca", "lr_tuning"}
    from paperlab.experiments.latent_cot.runs import EXPERIMENTS

    assert set(EXPERIMENTS) == names  # all of them share the reasoner cache
    assert all(c.experiment in names for c in PAPER.claims)
    assert len(full().seeds) >= 3 and set(quick().methods) >= {"no_cot", "cot", "coconut", "no_curriculum"}
    for cfg in (medium(), full()):  # fresh questions (no memorising)
        steps = cfg.steps_per_stage * (cfg.max_stage + 1) + cfg.final_steps
        assert cfg.n_train >= steps * cfg.batch_size and cfg.d_model >= 128
    rerun = full()  # the rerun's recipe: symbolic, thoughts on the frontier, >= 4 thoughts, the recall warm-up
    assert rerun.format == "symbolic" and rerun.frontier_weight > 0 and rerun.max_stage >= 4
    assert rerun.recall_steps > 0 and rerun.n_layers >= 3
    assert {"no_cot", "cot", "coconut", "no_curriculum"} <= set(rerun.methods)
    assert rerun.latent_from_cot
    with pytest.raises(ValueError, match="recall_steps"):
        LatentCoTConfig(recall_steps=10)  # English facts have no symbolic edges to recall
    assert LatentCoTConfig(recall_steps=10, task="arith").recall_steps == 10  # ignored there: no edges
    with pytest.raises(ValueError, match="methods"):
        LatentCoTConfig(methods=("cot", "magic"))
    with pytest.raises(ValueError, match="sigmas"):
        LatentCoTConfig(sigmas=(0.1, 0.2, 0.3))
    with pytest.raises(ValueError, match="n_thoughts"):
        DynamicsConfig(base=quick(), n_thoughts=1)
    with pytest.raises(ValueError, match="taus"):
        InterventionConfig(base=quick(), taus=(1.0, 0.5))
    with pytest.raises(ValueError, match="relative_sigma"):
        DynamicsConfig(base=quick(), relative_sigma=0.0)
    with pytest.raises(ValueError, match="lr_factors"):
        TuningConfig(base=quick(), lr_factors=(1.0, 1.0, 3.0))
    with pytest.raises(ValueError, match="lr_factors"):
        TuningConfig(base=quick(), lr_factors=(0.3, 0.5, 3.0))  # the recipe's own lr must be tried
    with pytest.raises(ValueError, match="lr_factors value"):
        TuningConfig(base=quick(), lr_factors=(1.0, 0.0, 3.0))
    tuning = tuning_full()
    assert tuning.base == full()
    for task in ("graph", "arith"):  # each arm's recipe lr is a point of its own grid
        cfg = dataclasses.replace(full(), task=task)
        assert all(cfg.lr_for(m) in tuning.grid(cfg, m) for m in full().methods)
    with pytest.raises(ValueError, match="arith_methods"):
        TuningConfig(base=quick(), arith_methods=("magic",))


@pytest.mark.parametrize("fmt", ["english", "symbolic"])
def test_shrunk_experiments_run(tmp_path, fmt):
    from paperlab.experiments.latent_cot import suite as S

    cfg = dataclasses.replace(LatentCoTConfig(), n_train=64, n_test=12, real_limit=6, harder=(1,), d_model=32,
                              n_layers=1, n_heads=2, batch_size=8, max_stage=1, steps_per_stage=3, final_steps=3,
                              sigmas=(0.0, 0.5, 2.0), n_probe=6, format=fmt,
                              frontier_weight=1.0 if fmt == "symbolic" else 0.0,
                              recall_steps=2 if fmt == "symbolic" else 0, recall_batch_size=4,
                              latent_from_cot=fmt == "symbolic")
    vocab = len(S.tokenizer(cfg))
    claims = set()
    for exp in PAPER.experiments:
        dynamics = exp.name in ("error_accumulation", "thought_pca")
        run_cfg = DynamicsConfig(base=cfg, n_thoughts=3, n_examples=6) if dynamics else cfg
        if exp.name == "intervention":
            run_cfg = InterventionConfig(base=cfg, taus=(0.5, 2.0), n_examples=6)
        if exp.name == "lr_tuning":
            run_cfg = TuningConfig(base=dataclasses.replace(cfg, methods=("coconut", "cot")), arith_methods=("cot",),
                                   max_extensions=0)
        res = exp.run(run_cfg, out_dir=tmp_path)
        if exp.name == "lr_tuning":  # a table, no claim; CoT tuned first (the latent runs start from it)
            assert [(r["task"], r["method"], r["lr"]) for r in res.rows] == [
                (t, m, lr) for t, m in (("graph", "cot"), ("graph", "coconut"), ("arith", "cot"))
                for lr in (1e-3 / 3, 1e-3, 3e-3)]
            assert all(0 <= r["dev_accuracy"] <= 1 for r in res.rows) and not res.verdicts
            assert sum(r["chosen"] for r in res.rows) == 3 and (tmp_path / res.figures[0].file).is_file()
            continue
        assert res.rows and res.verdicts and res.notes
        # near-chance (untrained) models must not decide any claim; one trained thought cannot show a contraction
        if exp.name == "thought_pca":
            assert [v.verdict for v in res.verdicts] == [NOT_TESTABLE] and "1 trained thoughts" in res.verdicts[0].ours
        else:
            assert all(v.verdict == "models did not learn the task" and "untrained" in v.ours
                       for v in res.verdicts), [(v.claim, v.verdict, v.ours) for v in res.verdicts]
        claims.update(v.claim for v in res.verdicts)
        for fig in res.figures:
            assert (tmp_path / fig.file).is_file()
        if exp.name == "accuracy":
            sets = {r["set"] for r in res.rows}
            assert {"generated", "harder+1"} <= sets
            assert all(0 <= r["accuracy"] <= r["choice_accuracy"] <= 1 for r in res.rows)
            assert {r["thoughts"] for r in res.rows if r["method"] in ("coconut", "no_curriculum")} == {1.0}
            assert {r["thoughts"] for r in res.rows if r["method"] in ("cot", "no_cot")} == {0.0}
            hops = res.tables["held-out accuracy by hop count (mean over seeds)"]
            assert [r["method"] for r in hops] == list(cfg.methods) and all(len(r) >= 2 for r in hops)
        if exp.name == "exploration":
            assert all(r["bound_holds"] == 1.0 for r in res.rows if not math.isnan(r["bound_holds"]))  # Thm 4.12
            assert all(r["n_valid"] >= 2 and r["kl"] >= -1e-9 for r in res.rows)
        if exp.name == "symbolic_index":
            assert all(0 <= r["mass_valid"] <= 1 + 1e-9 for r in res.rows)
            assert all(1 / vocab - 1e-9 <= r["i_s_full"] <= 1 for r in res.rows)
        if exp.name == "error_accumulation":  # the first noisy thought's error is exactly the injected noise
            first = [r["sq_error / d sigma^2"] for r in res.rows if r["M"] == 1]
            assert all(0.5 < e < 1.5 for e in first) and {r["M"] for r in res.rows} == {1, 2, 3}
        if exp.name == "intervention":
            assert {(r["task"], r["seed"], r["tau"]) for r in res.rows} == {(t, 0, u) for t in ("graph", "arith")
                                                                     for u in (0.5, 2.0)}
        if exp.name == "thought_pca":
            assert all(0 <= r["relative spread"] <= 1 for r in res.rows)
        if exp.name == "noise":
            zero = [r for r in res.rows if r["sigma"] == 0.0]
            assert all(math.isnan(r["ratio"]) or r["ratio"] == 1.0 for r in zero)
    assert claims == {c.id for c in PAPER.claims}
    warm = sorted(p.name for p in tmp_path.rglob("warm-*.pt"))  # one shared warm start per seed, or none
    assert len(warm) == (fmt == "symbolic"), warm


def test_trained_reasoners_persist_on_disk(tmp_path, monkeypatch):
    from paperlab.experiments.latent_cot import suite as S

    cfg = dataclasses.replace(LatentCoTConfig(), n_train=32, n_test=4, d_model=16, n_layers=1, n_heads=2,
                              batch_size=4, max_stage=1, steps_per_stage=2, final_steps=2, lr=3e-3)
    with S.disk_cache(tmp_path):
        model, history = S.trained(cfg, "coconut", 0)
    files = list(tmp_path.glob("reasoner-*-coconut-s0.pt"))
    assert len(files) == 1 and len(history) == 6
    cache.clear()

    def no_training(*args, **kwargs):
        raise AssertionError("a cached reasoner must be loaded, not retrained")

    monkeypatch.setattr(S, "train_reasoner", no_training)
    with S.disk_cache(tmp_path):
        loaded, loaded_history = S.trained(cfg, "coconut", 0)
    assert loaded is not model and loaded_history == history
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    cache.clear()
    with pytest.raises(AssertionError, match="cached"):  # outside the block nothing is read from disk
        S.trained(cfg, "coconut", 0)
    cache.clear()


def _tiny_soft_config():
    return dataclasses.replace(LatentCoTConfig(), n_train=32, n_test=4, d_model=16, n_layers=1, n_heads=2,
                               batch_size=4, max_stage=1, steps_per_stage=2, final_steps=2, format="symbolic",
                               recall_steps=2, recall_batch_size=4, latent_from_cot=True, soft_steps=3)


def _spy_on_training(monkeypatch, S) -> list:
    """(method, ReasonerConfig, a copy of the start state or None) of every ``train_reasoner`` call, in order."""
    starts = []
    real = S.train_reasoner

    def spy(*args, config, init_state=None, **kwargs):
        starts.append((kwargs["method"], config,
                       None if init_state is None else {k: v.clone() for k, v in init_state.items()}))
        return real(*args, config=config, init_state=init_state, **kwargs)

    monkeypatch.setattr(S, "train_reasoner", spy)
    return starts


def test_soft_thoughts_fine_tune_the_seeds_coconut_when_soft_steps_is_set(tmp_path, monkeypatch):
    from paperlab.experiments.latent_cot import suite as S

    cfg, starts = _tiny_soft_config(), _spy_on_training(monkeypatch, S)
    with S.disk_cache(tmp_path):
        soft, history = S.trained(cfg, "coconut", 0, soft_tau=1.0)
        hard, _ = S.trained(cfg, "coconut", 0)
    assert [(m, c.soft_tau, c.final_steps) for m, c, _ in starts] == [
        ("cot", None, 2), ("coconut", None, 2), ("coconut", 1.0, 3)]
    for name, value in hard.state_dict().items():  # the soft run started from the trained hard-thought Coconut
        assert torch.equal(starts[-1][2][name], value), name
    assert [r["step"] for r in history] == [5, 6, 7]  # the final stage alone, after 2 stages x 2 steps
    assert len(list(tmp_path.glob("reasoner-*-coconut-s0.pt"))) == 2
    cache.clear()


def test_teacher_forced_soft_thoughts_train_the_whole_curriculum_from_the_seeds_cot(tmp_path, monkeypatch):
    from paperlab.experiments.latent_cot import suite as S

    cfg, starts = _tiny_soft_config(), _spy_on_training(monkeypatch, S)
    with S.disk_cache(tmp_path):
        taught, history = S.trained(cfg, "coconut", 0, soft_tau=0.5, teacher_thoughts=True)
        cot, _ = S.trained(cfg, "cot", 0)
    assert [(m, c.soft_tau, c.teacher_thoughts, c.from_stage) for m, c, _ in starts] == [
        ("cot", None, False, 0), ("coconut", 0.5, True, 1)]  # no hard Coconut
    for name, value in cot.state_dict().items():
        assert torch.equal(starts[-1][2][name], value), name
    assert [r["step"] for r in history] == [3, 4, 5, 6]  # stage 1 and the final stage, after CoT's stage 0
    soft = S.reasoner_key(cfg, "coconut", 0, soft_tau=0.5)
    assert S.reasoner_key(cfg, "coconut", 0, soft_tau=0.5, teacher_thoughts=True) != soft
    assert S.reasoner_key(cfg, "coconut", 0, soft_tau=0.5, teacher_thoughts=False) == soft  # saved keys hold
    cache.clear()


def test_a_tuning_lr_changes_only_the_methods_own_training(tmp_path, monkeypatch):
    from paperlab.experiments.latent_cot import suite as S

    cfg = dataclasses.replace(LatentCoTConfig(), n_train=32, n_test=4, d_model=16, n_layers=1, n_heads=2,
                              batch_size=4, max_stage=1, steps_per_stage=2, final_steps=2, format="symbolic",
                              recall_steps=2, recall_batch_size=4, latent_from_cot=True, lr=3e-3)
    assert S.reasoner_key(cfg, "coconut", 0, lr=3e-3) == S.reasoner_key(cfg, "coconut", 0)  # saved keys hold
    tuned = S.reasoner_key(cfg, "coconut", 0, lr=1e-2)
    # not the key of a recipe at 1e-2, whose Coconut would start from a CoT trained at 1e-2
    assert tuned not in (S.reasoner_key(cfg, "coconut", 0), S.reasoner_key(dataclasses.replace(cfg, lr=1e-2),
                                                                            "coconut", 0))
    starts = []
    real = S.train_reasoner

    def spy(*args, config, init_state=None, **kwargs):
        starts.append((kwargs["method"], config.lr, init_state))
        return real(*args, config=config, init_state=init_state, **kwargs)

    monkeypatch.setattr(S, "train_reasoner", spy)
    with S.disk_cache(tmp_path):
        S.trained(cfg, "coconut", 0, lr=1e-2)
        cot, _ = S.trained(cfg, "cot", 0)
    assert [(m, lr) for m, lr, _ in starts] == [("cot", 3e-3), ("coconut", 1e-2)]
    for name, value in cot.state_dict().items():  # Coconut at 1e-2 started from the recipe's CoT
        assert torch.equal(starts[1][2][name], value), name
    assert len(list(tmp_path.glob("warm-*.pt"))) == 1
    with pytest.raises(ValueError, match="lr must be a finite number > 0"):
        S.trained(cfg, "cot", 0, lr=-1.0)
    cache.clear()


def test_per_arm_learning_rates():
    from paperlab.experiments.latent_cot import suite as S

    cfg = LatentCoTConfig(format="symbolic", latent_from_cot=True,
                          method_lrs=(("graph/coconut", 3e-4), ("arith/cot", 3e-3)))
    assert (cfg.lr_for("coconut"), cfg.lr_for("cot"), cfg.lr_for("no_cot")) == (3e-4, 1e-3, 1e-3)
    arith = dataclasses.replace(cfg, task="arith")
    assert (arith.lr_for("coconut"), arith.lr_for("cot")) == (1e-3, 3e-3)
    plain = dataclasses.replace(cfg, method_lrs=())
    # a recipe arm at 3e-4 is the tuning run of the plain recipe at 3e-4 (one reasoner), the other arms unchanged
    assert S.reasoner_key(cfg, "coconut", 0) == S.reasoner_key(plain, "coconut", 0, lr=3e-4)
    assert S.reasoner_key(cfg, "cot", 0) == S.reasoner_key(plain, "cot", 0)
    assert S.reasoner_key(cfg, "coconut", 0) != S.reasoner_key(plain, "coconut", 0)
    # a latent arm starting from a CoT at another lr is another reasoner
    cot_moved = dataclasses.replace(plain, method_lrs=(("graph/cot", 3e-3),))
    assert S.reasoner_key(cot_moved, "coconut", 0) != S.reasoner_key(plain, "coconut", 0)
    for bad, match in (((("graph/magic", 1e-3),), "method_lrs entries"), ((("graph/cot", -1.0),), "method_lrs"),
                       ((("graph/cot", 1e-3), ("graph/cot", 3e-3)), "more than once"),
                       (("graph/cot",), "method_lrs entries")):
        with pytest.raises(ValueError, match=match):
            LatentCoTConfig(method_lrs=bad)


def _other(name: str, value):
    """Another valid value of a ``LatentCoTConfig`` field."""
    special = {"data": "tiny", "methods": ("cot",), "sigmas": (0.0, 0.1, 0.2, 0.5), "extra": {"device": "cuda"},
               "real_limit": None, "format": "english", "task": "arith", "latent_from_cot": True,
               "arith_steps": (4, 4), "method_lrs": (("graph/coconut", 5e-3),)}
    if name in special:
        return special[name]
    if isinstance(value, tuple):
        return (*value, max(value) + 1)
    return value * 2 + 1


def test_the_reasoner_key_covers_every_field_but_the_listed_eval_only_ones():
    from paperlab.experiments.latent_cot import suite as S

    names = [f.name for f in dataclasses.fields(LatentCoTConfig)]
    assert set(S.EVAL_ONLY_FIELDS) <= set(names)  # the one exclusion list names real fields
    base = LatentCoTConfig(format="symbolic")  # the recall warm-up needs symbolic edges
    key = S.reasoner_key(base, "coconut", 0)
    for name in names:
        other = S.reasoner_key(dataclasses.replace(base, **{name: _other(name, getattr(base, name))}), "coconut", 0)
        assert (other == key) == (name in S.EVAL_ONLY_FIELDS + S.GRAPH_IGNORES), name
    arith = dataclasses.replace(base, task="arith")  # the arith_chain fields join an arith reasoner's key
    for name in S.GRAPH_IGNORES:
        changed = dataclasses.replace(arith, **{name: _other(name, getattr(arith, name))})
        assert S.reasoner_key(changed, "cot", 0) != S.reasoner_key(arith, "cot", 0), name
    assert len({S.reasoner_key(base, m, s, thought_entropy=h).digest
                for m in ("cot", "coconut") for s in (0, 1) for h in (0.0, 0.1)}) == 8

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Grown(LatentCoTConfig):  # a field added later joins the key unless it is listed
        new_dial: int = 0

    assert S.reasoner_key(Grown(new_dial=1), "cot", 0) != S.reasoner_key(Grown(), "cot", 0)


def test_latent_claims_need_thoughts_the_answer_uses(monkeypatch):
    """The thought-ablation gate: a trained Coconut whose accuracy survives zeroing, shuffling or pause-replacing
    its thoughts does not count; with no such seed left the verdict is 'mechanism absent', not a decision."""
    from paperlab.experiments.base import REPRODUCED
    from paperlab.experiments.latent_cot import runs as R
    from paperlab.experiments.protocol import MECHANISM_ABSENT

    cfg = dataclasses.replace(quick(), seeds=(0, 1, 2))
    monkeypatch.setattr(R, "trained_enough", lambda *a: True)
    unused = {"intact": 0.9, "zeroed": 0.9, "shuffled": 0.85, "pause": 0.3}  # shuffling costs only 5 points
    used = {"intact": 0.9, "zeroed": 0.5, "shuffled": 0.6, "pause": 0.45}
    monkeypatch.setattr(R, "ablation_accuracies", lambda config, seed, method: unused)
    v = R.gated("lcot-symbolic-index", cfg, [0.3, 0.31, 0.29], "", "CoT minus latent I_S")
    assert v.verdict == MECHANISM_ABSENT and "thoughts unused" in v.ours and v.n_kept == 0
    monkeypatch.setattr(R, "ablation_accuracies", lambda config, seed, method: used if seed else unused)
    v = R.gated("lcot-symbolic-index", cfg, [0.3, 0.31, 0.29], "", "CoT minus latent I_S")
    assert v.n_kept == 2  # seed 0's thoughts are unused: dropped
    monkeypatch.setattr(R, "ablation_accuracies", lambda config, seed, method: used)
    assert R.gated("lcot-symbolic-index", cfg, [0.3, 0.31, 0.29], "", "CoT minus latent I_S").verdict == REPRODUCED
    table = R.ablation_table(dataclasses.replace(cfg, methods=("cot", "coconut", "pause")))
    assert [r["method"] for r in table] == ["coconut", "pause"]
    assert list(table[0])[:5] == ["method", "intact", "zeroed", "shuffled", "pause"]
    assert table[0]["seeds using thoughts"] == "3 of 3"


class _CutThoughts(torch.nn.Module):
    """A reasoner whose continuous thoughts are cut from the computation: every thought position is masked out
    of the attention of all later tokens (a thought call is an ``inputs_embeds`` call between the prefix and the
    suffix, both of which come as ids)."""

    def __init__(self, model):
        super().__init__()
        self.model, self.thinking = model, False

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.model, name)

    def hidden_states(self, input_ids=None, *, inputs_embeds=None, state=None, attention_mask=None):
        if input_ids is not None:
            self.thinking = state is None  # the prefix starts the thoughts, the suffix ends them
        elif self.thinking:
            attention_mask = torch.zeros(inputs_embeds.shape[:2], dtype=torch.bool, device=inputs_embeds.device)
        return self.model.hidden_states(input_ids, inputs_embeds=inputs_embeds, state=state,
                                        attention_mask=attention_mask)


def test_the_ablation_gate_catches_a_model_whose_thoughts_are_cut(monkeypatch):
    """Measured, not mocked: the real ablation pipeline on a Coconut model whose thoughts do reach the answer
    (zeroing them changes the answer's hidden states) and on the same model with its thoughts cut."""
    from paperlab.experiments.latent_cot import runs as R
    from paperlab.experiments.latent_cot import suite as S
    from paperlab.reasoning.coconut import collate, encode_example, latent_forward
    from paperlab.reasoning.train import build_model

    cfg = dataclasses.replace(quick(), format="symbolic", data="tiny", n_test=40, seeds=(0,), max_stage=2)
    tok, cur = S.tokenizer(cfg), S.reasoner_config(cfg).curriculum
    model = build_model(S.reasoner_config(cfg), len(tok), seed=0).eval()
    cut = _CutThoughts(model)
    examples = S.datasets(cfg)["generated"]
    batch = collate([encode_example(e, tok, method="coconut", stage=cur.final_stage, curriculum=cur)
                     for e in examples[:8]], pad_id=tok.pad_id)
    with torch.no_grad():
        def zero(x, _j):
            return torch.zeros_like(x)
        for m, reaches in ((model, True), (cut, False)):
            intact, zeroed = (latent_forward(m, batch, thought_noise=hook)[0] for hook in (None, zero))
            assert torch.allclose(intact, zeroed) != reaches
    monkeypatch.setattr(S, "trained", lambda config, method, seed, **kw: (cut, []))
    accs = R.ablation_accuracies(cfg, 0, "coconut")
    assert accs["zeroed"] == accs["shuffled"] == accs["pause"] == accs["intact"]
    assert not R.thoughts_used(cfg, 0, "coconut")


def test_tuning_notes_say_which_recipe_lrs_are_tuned(tmp_path, monkeypatch):
    """Interior optimum, a recipe lr at the 1.0 ceiling (no lr can beat it, so a tie at the grid's edge does not
    matter), and a recipe lr off the optimum, each named."""
    from paperlab.experiments.latent_cot import lr_tuning as LT
    from paperlab.experiments.lr_search import LRChoice

    base = LatentCoTConfig(methods=("cot", "coconut"), method_lrs=(("graph/coconut", 3e-4),))
    fake = {("graph", "cot"): LRChoice(lr=1e-3, score=0.9, tried=((3e-4, 0.8), (1e-3, 0.9), (3e-3, 0.5)),
                                       interior=True, extensions=0),
            ("graph", "coconut"): LRChoice(lr=1e-4, score=0.9, tried=((1e-4, 0.9), (3e-4, 0.85), (9e-4, 0.7)),
                                           interior=False, extensions=1),
            ("arith", "cot"): LRChoice(lr=3e-4, score=1.0, tried=((3e-4, 1.0), (1e-3, 1.0), (3e-3, 0.9)),
                                       interior=False, extensions=0)}
    monkeypatch.setattr(LT, "tuned_lrs", lambda config: fake)
    notes = " ".join(LT.run_lr_tuning(TuningConfig(base=base, arith_methods=("cot",)), out_dir=tmp_path).notes)
    assert "interior optimum of ['graph/cot'] and scores the ceiling" in notes and "for ['arith/cot']" in notes
    assert "NOT the tuned optimum of ['graph/coconut (recipe 0.0003)']" in notes
