"""Pretraining the latent-CoT experiments' reasoners in worker processes."""

from __future__ import annotations

import dataclasses
import json

import pytest

from paperlab.experiments import cache
from paperlab.experiments.latent_cot import PAPER, InterventionConfig, LatentCoTConfig, TuningConfig
from paperlab.experiments.latent_cot import pretrain as P
from paperlab.experiments.latent_cot import runs as R
from paperlab.experiments.latent_cot import suite as S


def _full_plan():
    return P.plan_for({e.name: e.full() for e in PAPER.experiments})


def test_the_full_plan_lists_each_model_once_after_the_models_it_starts_from():
    jobs = _full_plan()
    names = [j.name for j in jobs]
    assert len(names) == len(set(names))
    # 3 seeds x (warm start, 4 graph methods, arith CoT and Coconut, 2 teacher-forced soft models) + 12 tuning
    assert len(jobs) == 3 * 9 + 12
    position = {n: i for i, n in enumerate(names)}
    assert all(position[d] < position[j.name] for j in jobs for d in j.deps)
    by = {j.name: j for j in jobs}
    assert by["graph/coconut/s1"].deps == ("graph/cot/s1",)  # latent methods start from the seed's CoT
    assert by["graph/cot/s1"].deps == ("graph/warm/s1",) and by["arith/cot/s1"].deps == ()
    # teacher-forced soft thoughts train the whole curriculum from the seed's CoT
    assert by["arith/coconut/s2/tau0.5/teacher"].deps == ("arith/cot/s2",)
    assert by["graph/coconut/s2/tau0.5/teacher"].deps == ("graph/cot/s2",)
    # the tuning's point at an arm's recipe lr is the recipe's model, not a second job
    tuned = [j for j in jobs if j.lr is not None]
    assert len(tuned) == 12 and all(j.seed == 0 for j in tuned)
    assert {j.name for j in tuned if j.config.task == "graph" and j.method == "coconut"} == {
        "graph/coconut/s0/lr0.000111", "graph/coconut/s0/lr0.001"}  # 1/3 and 3 times its recipe 3.3e-4


def test_the_plan_matches_what_the_experiments_train():
    """Every job's model is one the experiments ask ``suite.trained`` for (same cache key)."""
    keys = {S.reasoner_key(j.config, j.method, j.seed, soft_tau=j.soft_tau, lr=j.lr,
                           teacher_thoughts=j.teacher_thoughts).digest
            for j in _full_plan() if j.method is not None}
    full = PAPER.experiment("accuracy").full()
    arith = dataclasses.replace(full, task="arith")
    for seed in full.seeds:
        for m in full.methods:
            assert S.reasoner_key(full, m, seed).digest in keys
        for cfg in (full, arith):
            assert S.reasoner_key(cfg, "coconut", seed, soft_tau=0.5, teacher_thoughts=True).digest in keys
    assert S.reasoner_key(arith, "cot", 2).digest in keys
    tuning = PAPER.experiment("lr_tuning").full()
    for lr in tuning.grid(full, "no_curriculum"):
        assert S.reasoner_key(full, "no_curriculum", 0, lr=lr).digest in keys


def test_pretrain_trains_in_workers_and_the_experiments_load_the_models(tmp_path, monkeypatch):
    cfg = LatentCoTConfig(seeds=(0,), methods=("cot", "coconut"), n_train=32, n_test=4, d_model=16, n_layers=1,
                          n_heads=2, batch_size=4, max_stage=1, steps_per_stage=2, final_steps=2, format="symbolic",
                          recall_steps=2, recall_batch_size=4, latent_from_cot=True, soft_steps=2)
    jobs = P.plan(cfg, arith_methods=("cot",), intervention=InterventionConfig(base=cfg, taus=(1.0, 2.0)))
    assert [j.name for j in jobs] == ["graph/warm/s0", "graph/cot/s0", "graph/coconut/s0", "arith/cot/s0",
                                      "graph/coconut/s0/tau1/teacher", "arith/coconut/s0/tau1/teacher"]
    times = P.pretrain(jobs, cache_dir=tmp_path, workers=2, progress=False)
    assert set(times) == {j.name for j in jobs} and all(t.trained and t.cpu_seconds > 0 for t in times.values())
    assert len(list(tmp_path.glob("reasoner-*.pt"))) == 5 and len(list(tmp_path.glob("warm-*.pt"))) == 1
    with S.disk_cache(tmp_path):  # each job's model sits where saved_path says
        assert {S.saved_path(j.config, j.method, j.seed, soft_tau=j.soft_tau, lr=j.lr,
                             teacher_thoughts=j.teacher_thoughts).name for j in jobs} == {
            f.name for f in tmp_path.glob("*.pt")}
    assert S.saved_path(cfg, "cot", 0) is None  # outside disk_cache
    cache.clear()

    def no_training(*args, **kwargs):
        raise AssertionError("the experiments retrained a pretrained model")

    monkeypatch.setattr(S, "train_reasoner", no_training)
    monkeypatch.setattr(S, "warmed_up", no_training)
    with S.disk_cache(tmp_path):
        for job in jobs:
            if job.method is not None:
                S.trained(job.config, job.method, job.seed, soft_tau=job.soft_tau,
                          teacher_thoughts=job.teacher_thoughts)
    again = P.pretrain(jobs, cache_dir=tmp_path, workers=1, progress=False)  # resumes: loads every model
    assert set(again) == set(times) and not any(t.trained for t in again.values())
    trained = {n: t.cpu_seconds for n, t in times.items()}  # pretrain recorded each as it finished ...
    assert P.recorded_times(tmp_path) == trained == json.loads((tmp_path / P.TIMES_FILE).read_text())
    assert P.record_times(tmp_path, again) == trained  # ... and loading them again adds nothing
    cache.clear()


def test_soft_thought_fine_tunes_start_from_the_seeds_coconut():
    cfg = LatentCoTConfig(seeds=(0, 1), methods=("cot", "coconut"), format="symbolic", recall_steps=2,
                          latent_from_cot=True, soft_steps=2)
    jobs = P.plan(cfg, intervention=InterventionConfig(base=cfg, taus=(1.0, 2.0), teacher_thoughts=False))
    by = {j.name: j for j in jobs}
    assert by["arith/coconut/s1/tau2"].deps == ("arith/coconut/s1",)
    assert by["graph/coconut/s0/tau1"].deps == ("graph/coconut/s0",)
    assert not any(j.teacher_thoughts for j in jobs)
    # per seed: warm start, graph CoT + Coconut, arith CoT + Coconut, 2 taus x 2 tasks of fine-tunes
    assert len(jobs) == 2 * (3 + 2 + 4)


def test_the_time_record_adds_up_across_calls_and_starts_afresh_when_damaged(tmp_path):
    assert P.record_times(tmp_path, {"a": P.JobTime(10.0, True), "b": P.JobTime(0.5, False)}) == {"a": 10.0}
    assert P.record_times(tmp_path, {"c": P.JobTime(5.0, True)}) == {"a": 10.0, "c": 5.0}
    (tmp_path / P.TIMES_FILE).write_text('{"a": 10.0, "c"')  # a write cut short
    with pytest.warns(UserWarning, match="damaged"):
        assert P.record_times(tmp_path, {"d": P.JobTime(1.0, True)}) == {"d": 1.0}
    assert P.recorded_times(tmp_path / "nowhere") == {}


def test_pretrain_errors_name_the_job():
    cfg = LatentCoTConfig(seeds=(0,), methods=("cot",))
    with pytest.raises(ValueError, match="depend on"):
        P.pretrain([P.ModelJob(name="a", config=cfg, method="cot", seed=0, deps=("b",))], cache_dir=".",
                   progress=False)
    with pytest.raises(ValueError, match="workers"):
        P.pretrain([], cache_dir=".", workers=0, progress=False)
    bad = P.ModelJob(name="graph/cot/s0", config=cfg, method="cot", seed=0, lr=-1.0)
    with pytest.raises(RuntimeError, match="training graph/cot/s0 failed.*lr"):
        P.pretrain([bad], cache_dir=".", workers=1, progress=False)


def test_the_prepare_hook_fills_the_folder_the_experiments_read(tmp_path):
    assert PAPER.prepare is not None
    exp_dir = tmp_path / "latent_cot" / "accuracy" / "abc123"  # the runner's layout
    assert R.models_dir(exp_dir) == tmp_path / "latent_cot" / "reasoners"
    tuning = P.plan_for({"lr_tuning": TuningConfig(base=LatentCoTConfig(methods=("cot",)), arith_methods=())})
    assert [j.name for j in tuning] == ["graph/cot/s0/lr0.000333", "graph/cot/s0", "graph/cot/s0/lr0.003"]
