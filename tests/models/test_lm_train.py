"""LM training recipe: long-context evaluation, the no-decay rule, learning, exact resume, run folders."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from paperlab.models import LMConfig
from paperlab.models.lm_eval import evaluate_lengths, evaluate_ppl
from paperlab.models.lm_train import (
    LMRunConfig,
    LMTrainConfig,
    build_optimizer,
    init_lm,
    load_run,
    no_weight_decay,
    save_loss_curve,
    save_run_config,
    train_lm,
    train_run,
)


def _cfg(mixer: str = "kla", vocab: int = 11) -> LMConfig:
    return LMConfig(vocab_size=vocab, d_model=16, n_layers=1, n_heads=2, mixer=mixer, mlp_ratio=2.0)


def _stream(n: int, vocab: int = 11, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("mixer", ["kla", "attention"])
def test_chunked_eval_equals_full_forward(mixer: str) -> None:
    model = init_lm(_cfg(mixer), seed=0).double()
    tokens = _stream(3 * 24 + 5)
    chunked = evaluate_ppl(model, tokens, context=24, chunk=5, batch_size=2)
    windows = tokens[: 3 * 24 + 1]
    with torch.no_grad():
        logits, _ = model(torch.stack([windows[i * 24 : i * 24 + 24] for i in range(3)]))
    targets = torch.stack([windows[i * 24 + 1 : i * 24 + 25] for i in range(3)])
    ref = F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()
    assert chunked["tokens"] == 72 and math.isclose(chunked["loss"], ref, rel_tol=1e-10)
    assert math.isclose(chunked["ppl"], math.exp(ref), rel_tol=1e-9)
    assert math.isclose(chunked["bits_per_token"], ref / math.log(2), rel_tol=1e-12)


def test_lengths_score_the_same_tokens() -> None:
    model = init_lm(_cfg(), seed=0)
    tokens = _stream(200)
    rows = evaluate_lengths(model, tokens, train_len=8, factors=(1, 2, 4), max_tokens=150)
    assert [r["context"] for r in rows] == [8, 16, 32]
    assert {r["tokens"] for r in rows} == {128.0}  # 4 windows of the longest context
    assert math.isclose(rows[0]["loss"], evaluate_ppl(model, tokens[:129], context=8)["loss"], rel_tol=1e-6)
    with pytest.raises(ValueError, match="longest context"):
        evaluate_lengths(model, tokens, train_len=8, factors=(32,))


def _decay(opt: torch.optim.Optimizer) -> dict[int, float]:
    return {id(p): g["weight_decay"] for g in opt.param_groups for p in g["params"]}


@pytest.mark.parametrize("name", ["adamw", "nora"])
def test_one_no_decay_rule_for_every_optimizer(name: str) -> None:
    model = init_lm(_cfg("kla"), seed=0)
    decay = _decay(build_optimizer(model, name, lr=1e-3, weight_decay=0.1))
    named = dict(model.named_parameters())
    mixer = "blocks.0.mixer."
    assert len(decay) == len(named)  # every parameter once (the tied head is the embedding)
    for n in (mixer + "A_log", mixer + "dt_bias", "final_norm.weight", mixer + "b_proj.bias"):
        assert decay[id(named[n])] == 0.0 and no_weight_decay(named[n]), n
    for n in (mixer + "q_proj.weight", "embedding.weight"):
        assert decay[id(named[n])] == 0.1 and not no_weight_decay(named[n]), n
    assert {decay[id(p)] == 0.0 for p in named.values()} == {True, False}
    flagged = torch.nn.Parameter(torch.zeros(2, 2))
    flagged._no_weight_decay = True  # the Mamba2 / fla flag also exempts a matrix
    assert no_weight_decay(flagged)


def test_adamw_groups_keep_betas_and_split_before_any_step() -> None:
    model = init_lm(_cfg("attention"), seed=0)
    opt = build_optimizer(model, lr=2e-3, weight_decay=0.1, betas=(0.8, 0.9))
    assert isinstance(opt, torch.optim.AdamW) and not opt.state
    assert {g["betas"] for g in opt.param_groups} == {(0.8, 0.9)} and {g["lr"] for g in opt.param_groups} == {2e-3}


def test_training_learns_a_periodic_text_and_resumes_exactly(tmp_path) -> None:
    # period-5 pattern: a model that uses its context drives the loss below the unigram entropy
    tokens = torch.tensor([1, 4, 2, 8, 5] * 120)
    cfg = LMTrainConfig(steps=30, batch_size=4, seq_len=16, lr=1e-2, warmup=5, eval_every=15, eval_tokens=64,
                        checkpoint_every=15)
    model = init_lm(_cfg("attention"), seed=1)
    result = train_lm(model, cfg, train_tokens=tokens, val_tokens=tokens[:200], out_dir=tmp_path / "a",
                      progress=False)
    assert result.steps_done == 30
    assert result.evals[-1]["val_loss"] < 1.0 < math.log(5)  # well below the unigram entropy log(5)
    short = LMTrainConfig(**{**cfg.__dict__, "steps": 4, "checkpoint_every": 2, "eval_every": 2})
    straight = init_lm(_cfg("kla"), seed=2)
    train_lm(straight, short, train_tokens=tokens, val_tokens=tokens, progress=False)

    def crash(step: int, _model) -> None:
        if step == 3:  # after the step-2 checkpoint
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_lm(init_lm(_cfg("kla"), seed=2), short, train_tokens=tokens, val_tokens=tokens,
                 out_dir=tmp_path / "b", progress=False, on_step=crash)
    again = init_lm(_cfg("kla"), seed=5)  # a fresh process: the weights must come from the checkpoint
    out = train_lm(again, short, train_tokens=tokens, val_tokens=tokens, out_dir=tmp_path / "b", resume=True,
                   progress=False)
    assert out.steps_done == 4 and [h["step"] for h in out.history] == [1, 2, 3, 4]
    for (name, a), b in zip(straight.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_run_folder_round_trip(tmp_path) -> None:
    model = init_lm(_cfg(), seed=0)
    cfg = LMTrainConfig(steps=2, batch_size=2, seq_len=8, eval_every=0, warmup=0)
    tokens = _stream(100)
    result = train_lm(model, cfg, train_tokens=tokens, val_tokens=tokens, out_dir=tmp_path, progress=False)
    save_run_config(tmp_path, model.config, cfg, data="pydoc")
    loaded, meta = load_run(tmp_path)
    assert meta["step"] == 2 and meta["data"] == "pydoc" and LMTrainConfig(**meta["train"]) == cfg
    for a, b in zip(model.state_dict().values(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    png = save_loss_curve(result.history, result.evals, tmp_path / "loss.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_run(tmp_path / "nothing")


def test_train_config_validation() -> None:
    with pytest.raises(ValueError, match="optimizer"):
        LMTrainConfig(optimizer="sgd")
    with pytest.raises(ValueError, match="lr"):
        LMTrainConfig(lr=0.0)
    assert LMTrainConfig(betas=[0.8, 0.9]).betas == (0.8, 0.9)
    with pytest.raises(ValueError, match="tokenizer='word'"):
        LMRunConfig(tokenizer="word")
    with pytest.raises(ValueError, match="divisible"):
        LMRunConfig(d_model=30, n_heads=4)
    with pytest.raises(TypeError, match="LMTrainConfig"):
        LMRunConfig(train={"steps": 3})
    with pytest.raises(ValueError, match="val_tokens"):
        train_lm(init_lm(_cfg(), seed=0), LMTrainConfig(steps=1, seq_len=4), train_tokens=_stream(50))


def test_other_optimizers_plug_in_through_make_optimizer() -> None:
    model = init_lm(_cfg("attention"), seed=0)
    opt = build_optimizer(model, "nora", lr=0.02, weight_decay=0.1)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    logits, _ = model(_stream(8).view(1, 8))
    logits.sum().backward()
    opt.step()
    moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert "blocks.0.mixer.q_proj.weight" in moved and "embedding.weight" in moved


TINY_RUN = LMRunConfig(data="pydoc", d_model=16, n_layers=1, mlp_ratio=2.0,
                       train=LMTrainConfig(steps=3, batch_size=4, seq_len=16, warmup=1, eval_every=3, eval_tokens=64))


def test_train_run_writes_a_run_folder_and_resumes(tmp_path) -> None:
    lines: list[str] = []
    run = train_run(TINY_RUN, out_dir=tmp_path, progress=False, log=lines.append)
    assert run.result.steps_done == 3 and run.init_eval is not None and run.tokenizer.kind == "byte"
    assert lines[0].startswith("kla: ") and "val ppl at init" in lines[0] and "step      3" in lines[1]
    for name in ("config.json", "tokenizer.json", "checkpoint.pt", "history.json", "loss.png"):
        assert (tmp_path / name).is_file(), name
    model, meta = load_run(tmp_path)
    assert LMTrainConfig(**meta["train"]) == TINY_RUN.train and meta["model"] == run.model.config.to_dict()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), run.model.state_dict().values(),
                                                 strict=True))
    more = dataclasses.replace(TINY_RUN, train=dataclasses.replace(TINY_RUN.train, steps=4))
    again = train_run(more, out_dir=tmp_path, resume=True, progress=False)
    assert again.init_eval is None and [h["step"] for h in again.result.history] == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="different model"):
        train_run(dataclasses.replace(TINY_RUN, d_model=32), out_dir=tmp_path, resume=True, progress=False)


def test_resume_refuses_a_changed_training_config_and_keeps_provenance(tmp_path) -> None:
    train_run(TINY_RUN, out_dir=tmp_path, progress=False)
    config_json = (tmp_path / "config.json").read_bytes()
    ckpt = (tmp_path / "checkpoint.pt").read_bytes()

    def changed(**fields) -> LMRunConfig:
        return dataclasses.replace(TINY_RUN, train=dataclasses.replace(TINY_RUN.train, **fields))

    with pytest.raises(ValueError, match=r"lr.*0\.001.*0\.5"):
        train_run(changed(lr=0.5), out_dir=tmp_path, resume=True, progress=False)
    with pytest.raises(ValueError, match=r"batch_size.*seed|seed.*batch_size"):
        train_run(changed(seed=7, batch_size=2), out_dir=tmp_path, resume=True, progress=False)
    with pytest.raises(ValueError, match="steps"):  # fewer steps than the saved run: the schedule would shrink
        train_run(changed(steps=2), out_dir=tmp_path, resume=True, progress=False)
    with pytest.raises(ValueError, match="tokenizer"):
        train_run(dataclasses.replace(TINY_RUN, tokenizer="char"), out_dir=tmp_path, resume=True, progress=False)
    assert (tmp_path / "config.json").read_bytes() == config_json  # refused: nothing rewritten
    assert (tmp_path / "checkpoint.pt").read_bytes() == ckpt
    # more steps and other evaluation / checkpoint intervals are safe: the resume is recorded, not overwritten
    more = changed(steps=5, eval_every=0, checkpoint_every=1)
    train_run(more, out_dir=tmp_path, resume=True, progress=False)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert LMTrainConfig(**saved["train"]) == TINY_RUN.train
    assert saved["resumes"] == [{"changed": {"steps": [3, 5], "eval_every": [3, 0], "checkpoint_every": [100, 1]},
                                 "world_size": 1}]
    train_run(more, out_dir=tmp_path, resume=True, progress=False)  # the recorded changes are the new baseline
    assert json.loads((tmp_path / "config.json").read_text())["resumes"][-1]["changed"] == {}


def test_rerun_into_a_run_folder_needs_resume_or_overwrite(tmp_path) -> None:
    train_run(TINY_RUN, out_dir=tmp_path, progress=False)
    ckpt = (tmp_path / "checkpoint.pt").read_bytes()
    other = dataclasses.replace(TINY_RUN, train=dataclasses.replace(TINY_RUN.train, seed=3))
    with pytest.raises(FileExistsError, match=r"resume.*overwrite"):
        train_run(other, out_dir=tmp_path, progress=False)
    assert (tmp_path / "checkpoint.pt").read_bytes() == ckpt
    with pytest.raises(ValueError, match="overwrite"):
        train_run(other, out_dir=tmp_path, resume=True, overwrite=True, progress=False)
    run = train_run(other, out_dir=tmp_path, overwrite=True, progress=False)
    assert run.init_eval is not None and [h["step"] for h in run.result.history] == [1, 2, 3]
    assert json.loads((tmp_path / "config.json").read_text())["train"]["seed"] == 3


def test_loss_curve_is_written_atomically(tmp_path, monkeypatch) -> None:
    from matplotlib.figure import Figure

    png = save_loss_curve([{"step": 1, "loss": 2.0}], [], tmp_path / "loss.png")
    good = png.read_bytes()

    def broken(self, fname, *args, **kwargs):  # a crash half-way through writing the image
        if hasattr(fname, "write"):
            fname.write(b"\x89PNG partial")
        else:
            Path(fname).write_bytes(b"\x89PNG partial")
        raise OSError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(OSError, match="disk full"):
        save_loss_curve([{"step": 1, "loss": 1.0}], [], png)
    assert png.read_bytes() == good
