"""Bad inputs against public entry points: each must raise a clear error that names the argument.

One row per case: ``(id, callable, args, kwargs, exception type, regex the message must match)``. A new entry
point is covered by adding rows. Arguments that need files are ``Res("name")`` placeholders, built once per
module by the ``resources`` fixture (a tiny LM run folder, a damaged checkpoint, ...).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from paperlab.audit import SMI
from paperlab.audit.mia import ThresholdMIA, membership_score
from paperlab.checkpoint import CheckpointError, load_checkpoint, restore_checkpoint, save_checkpoint
from paperlab.data.registry import ChecksumError, get_dataset
from paperlab.data.registry import path as data_path
from paperlab.data.text import TextBatches, load_text
from paperlab.data.tokenizers import load_tokenizer, make_tokenizer
from paperlab.exceptions import NotFittedError
from paperlab.io import atomic_open, atomic_write_bytes, atomic_write_json, atomic_write_text
from paperlab.layers import make_mixer
from paperlab.layers.deltanet import DeltaNetMixer
from paperlab.losses import frele_loss, mse_loss
from paperlab.models import LM, LMConfig
from paperlab.models.generate import generate, sample_next
from paperlab.models.lm_train import LMRunConfig, LMTrainConfig, load_run, train_run
from paperlab.ops import delta_rule_chunk, delta_rule_recurrent, delta_rule_step, kla_beta
from paperlab.optim import Nora, make_optimizer
from paperlab.report import update_readme
from paperlab.scaling import fit_law
from paperlab.train import EarlyStopping, train, warmup_cosine
from tests.bad_input_rows import Res, check_row, resources_fixture


def _tiny_lm(**changes: Any) -> LM:
    torch.manual_seed(0)
    return LM(LMConfig(vocab_size=11, d_model=8, n_layers=1, n_heads=2, mixer="attention", mlp_ratio=2.0, **changes))


def _nan_lm() -> LM:
    model = _tiny_lm()
    with torch.no_grad():
        model.embedding.weight.fill_(float("nan"))  # a diverged checkpoint
    return model


def _delta_inputs(B: int = 1, T: int = 4, H: int = 2, K: int = 3, V: int = 5) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(B, T, H, K, generator=gen), torch.randn(B, T, H, K, generator=gen)
    return [q, k, torch.randn(B, T, H, V, generator=gen), -torch.rand(B, T, H, generator=gen),
            torch.rand(B, T, H, generator=gen)]


def _with_g(value: float) -> list[torch.Tensor]:
    q, k, v, g, beta = _delta_inputs()
    g = g.clone()
    g[0, 1, 0] = value
    return [q, k, v, g, beta]


DELTA = _delta_inputs()
STEP = [t[:, 0] for t in DELTA]
TINY_RUN = LMRunConfig(data="pydoc", d_model=16, n_layers=1, mlp_ratio=2.0,
                       train=LMTrainConfig(steps=2, batch_size=2, seq_len=16, warmup=1, eval_every=0,
                                           eval_tokens=64))
CHANGED_LR = dataclasses.replace(TINY_RUN, train=dataclasses.replace(TINY_RUN.train, lr=0.5))
CHANGED_SEED = dataclasses.replace(TINY_RUN, train=dataclasses.replace(TINY_RUN.train, seed=9))
RNG = np.random.default_rng(0)
LOGITS, LABELS = RNG.standard_normal((40, 4)), RNG.integers(0, 4, 40)
FEATURES = RNG.standard_normal((40, 3))
SCALING = {"N": np.array([1e6, 2e6, 4e6, 8e6, 1.6e7]), "D": np.array([2e7, 4e7, 8e7, 1.6e8, 3.2e8]),
           "loss": np.array([4.0, 3.6, 3.3, 3.1, 2.9])}


def _resource(name: str, tmp: Path) -> Any:
    """Build the argument ``Res(name)`` stands for, under ``tmp``."""
    if name == "run_dir":
        train_run(TINY_RUN, out_dir=tmp / "run", progress=False)
        return tmp / "run"
    if name == "flipped_checkpoint":
        model = nn.Linear(8, 8)
        with torch.no_grad():
            model.weight.copy_(torch.arange(64.0).view(8, 8) / 7)
        raw = bytearray(save_checkpoint(tmp / "c.pt", model=model).read_bytes())
        at = raw.find(model.weight.detach().numpy().tobytes()) + 100
        raw[at : at + 4] = bytes(b ^ 0xFF for b in raw[at : at + 4])
        (tmp / "flipped.pt").write_bytes(bytes(raw))
        return tmp / "flipped.pt"
    if name.startswith("run_config_"):  # a run folder: config.json {} or garbage, or another model's checkpoint
        folder = tmp / name
        folder.mkdir()
        config = {"model": {"vocab_size": 11, "d_model": 8, "n_layers": 1, "n_heads": 2, "mixer": "attention"}}
        text = {"run_config_empty": "{}", "run_config_garbage": "garbage"}.get(name, json.dumps(config))
        (folder / "config.json").write_text(text)
        save_checkpoint(folder / "checkpoint.pt", model=nn.Linear(3, 3))
        return folder
    if name == "v1_checkpoint":  # a version-1 file (no checksum) without the model
        torch.save({"format_version": 1, "step": 0, "extra": {}}, tmp / "v1.pt")
        return tmp / "v1.pt"
    if name == "truncated_data_root":
        (tmp / "data" / "text").mkdir(parents=True)
        (tmp / "data" / "text" / "tinyshakespeare.txt").write_text("First Citizen:\nBefore we proceed")
        return tmp / "data"
    if name == "escaping_tokenizer":
        (tmp / "tok").mkdir()
        (tmp / "tok" / "tokenizer.json").write_text(json.dumps({"kind": "bpe", "vocab_size": 300,
                                                                "file": "../../etc/passwd"}))
        return tmp / "tok"
    if name == "readme":
        (tmp / "README.md").write_text("<!-- results:kla -->\n<!-- /results:kla -->\n")
        return tmp / "README.md"
    raise KeyError(name)


resources = resources_fixture(_resource, folder="bad_input")


def _sequential() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))


def _train(*, loss_fn: Any = None, batches: Any = None, optimizer: Any = None, **kw: Any) -> Any:
    model = _sequential()
    opt = torch.optim.SGD(model.parameters(), lr=0.1) if optimizer is None else optimizer
    loss_fn = (lambda m, b: m(b).sum()) if loss_fn is None else loss_fn
    batches = (lambda step: torch.ones(2, 4)) if batches is None else batches
    return train(model, loss_fn, batches, opt, progress=False, **kw)


def _warmup(**kw: Any) -> Any:
    return warmup_cosine(torch.optim.SGD(_sequential().parameters(), lr=0.1), **kw)


G = [torch.Generator().manual_seed(0)]
CIRCULAR: dict[str, Any] = {}
CIRCULAR["self"] = CIRCULAR

ROWS: list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any], type[BaseException], str]] = [
    # LM recipe: resume, run folders
    ("train_run-resume-new-lr", train_run, (CHANGED_LR,), {"out_dir": Res("run_dir"), "resume": True,
                                                          "progress": False}, ValueError, r"'lr'"),
    ("train_run-resume-new-seed", train_run, (CHANGED_SEED,), {"out_dir": Res("run_dir"), "resume": True,
                                                              "progress": False}, ValueError, r"'seed'"),
    ("train_run-rerun-over-a-run", train_run, (TINY_RUN,), {"out_dir": Res("run_dir"), "progress": False},
     FileExistsError, r"resume.*overwrite"),
    ("train_run-resume-and-overwrite", train_run, (TINY_RUN,), {"out_dir": "unused", "resume": True,
                                                               "overwrite": True}, ValueError, r"overwrite"),
    ("load_run-config-empty", load_run, (Res("run_config_empty"),), {}, ValueError, r"config\.json.*'model'"),
    ("load_run-config-garbage", load_run, (Res("run_config_garbage"),), {}, ValueError,
     r"run_config_garbage/config\.json is not valid JSON"),
    ("load_run-other-model", load_run, (Res("run_config_other_model"),), {}, CheckpointError,
     r"checkpoint\.pt does not match the model"),
    ("LMTrainConfig-steps-0", LMTrainConfig, (), {"steps": 0}, ValueError, r"steps"),
    ("LMRunConfig-unknown-mixer", LMRunConfig, (), {"mixer": "lstm"}, ValueError, r"mixer"),
    # the LM and sampling
    ("LMConfig-vocab-0", LMConfig, (), {"vocab_size": 0, "d_model": 8, "n_layers": 1, "n_heads": 2}, ValueError,
     r"vocab_size"),
    ("LM-float-ids", lambda: _tiny_lm()(torch.tensor([[1.0, 2.0]])), (), {}, ValueError, r"input_ids"),
    ("LM-1d-ids", lambda: _tiny_lm()(torch.tensor([1, 2])), (), {}, ValueError, r"input_ids|shape"),
    ("generate-subnormal-temperature", lambda: generate(_tiny_lm(), torch.tensor([[1]]), 2, temperature=1e-320),
     (), {}, ValueError, r"temperature"),
    ("generate-negative-temperature", lambda: generate(_tiny_lm(), torch.tensor([[1]]), 2, temperature=-1.0),
     (), {}, ValueError, r"temperature"),
    ("generate-nan-logits", lambda: generate(_nan_lm(), torch.tensor([[1]]), 2, temperature=0), (), {},
     ValueError, r"logits"),
    ("generate-negative-length", lambda: generate(_tiny_lm(), torch.tensor([[1]]), -1), (), {}, ValueError,
     r"max_new_tokens"),
    ("generate-top_k-0", lambda: generate(_tiny_lm(), torch.tensor([[1]]), 2, top_k=0), (), {}, ValueError,
     r"top_k"),
    ("generate-1d-prompt", lambda: generate(_tiny_lm(), torch.tensor([1]), 2), (), {}, ValueError, r"input_ids"),
    ("sample_next-inf-logits", sample_next, (torch.tensor([[0.0, float("inf")]]),),
     {"temperature": 1.0, "top_k": None, "generators": G}, ValueError, r"logits"),
    ("LMConfig-mixer_options-contradict-mixer", LMConfig, (), {"vocab_size": 11, "d_model": 8, "n_layers": 1,
                                                               "n_heads": 2, "mixer": "kla",
                                                               "mixer_options": {"mode": "gdn"}},
     ValueError, r"mixer_options mode='gdn' contradicts mixer='kla'"),
    ("make_mixer-contradicting-mode", make_mixer, ("kla", 8, 2), {"mode": "gdn"}, ValueError, r"\bmode\b.*mixer"),
    ("generate-model-Linear", lambda: generate(nn.Linear(2, 2), torch.tensor([[1]]), 2), (), {}, TypeError,
     r"\bmodel\b"),
    ("generate-model-None", lambda: generate(None, torch.tensor([[1]]), 2), (), {}, TypeError, r"\bmodel\b"),
    ("generate-seed-2**64", lambda: generate(_tiny_lm(), torch.tensor([[1]]), 2, seed=2**64), (), {}, ValueError,
     r"\bseed\b.*2\*\*64"),
    ("sample_next-logits-None", sample_next, (None,), {"temperature": 1.0, "top_k": None, "generators": G},
     TypeError, r"\blogits\b"),
    ("sample_next-logits-1d", sample_next, (torch.zeros(3),), {"temperature": 1.0, "top_k": None, "generators": G},
     ValueError, r"\blogits\b.*\[B, V\]"),
    ("sample_next-logits-1d-greedy", sample_next, (torch.zeros(3),), {"temperature": 0, "top_k": None,
                                                                      "generators": None},
     ValueError, r"\blogits\b.*\[B, V\]"),
    ("sample_next-vocab-0", sample_next, (torch.zeros(1, 0),), {"temperature": 1.0, "top_k": None, "generators": G},
     ValueError, r"\blogits\b.*V >= 1"),
    ("sample_next-generators-None", sample_next, (torch.zeros(1, 3),), {"temperature": 1.0, "top_k": None,
                                                                        "generators": None},
     TypeError, r"\bgenerators\b"),
    ("sample_next-2-generators-batch-1", sample_next, (torch.zeros(1, 3),), {"temperature": 1.0, "top_k": None,
                                                                             "generators": G * 2},
     ValueError, r"\bgenerators\b"),
    ("sample_next-top_k-0", sample_next, (torch.zeros(1, 3),), {"temperature": 1.0, "top_k": 0, "generators": G},
     ValueError, r"\btop_k\b"),
    ("sample_next-top_k--1", sample_next, (torch.zeros(1, 3),), {"temperature": 1.0, "top_k": -1, "generators": G},
     ValueError, r"\btop_k\b"),
    ("sample_next-top_k-True", sample_next, (torch.zeros(1, 3),), {"temperature": 1.0, "top_k": True,
                                                                   "generators": G},
     TypeError, r"\btop_k\b"),
    # delta-rule ops
    ("delta_rule_chunk-nan-g", delta_rule_chunk, tuple(_with_g(float("nan"))), {}, ValueError, r"\bg\b"),
    ("delta_rule_recurrent-nan-g", delta_rule_recurrent, tuple(_with_g(float("nan"))), {}, ValueError, r"\bg\b"),
    ("delta_rule_chunk-positive-g", delta_rule_chunk, tuple(_with_g(0.5)), {}, ValueError, r"\bg\b"),
    ("delta_rule_chunk-fla-reset", delta_rule_chunk, tuple(_with_g(-float("inf"))), {"backend": "fla"},
     ValueError, r"FLA_MIN_G|\bg\b"),
    ("delta_rule_chunk-chunk_size-0", delta_rule_chunk, tuple(DELTA), {"chunk_size": 0}, ValueError,
     r"chunk_size"),
    ("delta_rule_chunk-backend", delta_rule_chunk, tuple(DELTA), {"backend": "triton"}, ValueError, r"backend"),
    ("delta_rule_chunk-v-rank", delta_rule_chunk, (DELTA[0], DELTA[1], DELTA[2][0], DELTA[3], DELTA[4]), {},
     ValueError, r"\bv\b"),
    ("delta_rule_chunk-scale", delta_rule_chunk, tuple(DELTA), {"scale": -1.0}, ValueError, r"scale"),
    ("delta_rule_step-state-shape", delta_rule_step, (*STEP, torch.zeros(1, 2, 3, 4)), {}, ValueError, r"state"),
    ("delta_rule_step-nan-g", delta_rule_step, (*STEP[:3], torch.full((1, 2), float("nan")), STEP[4],
                                                torch.zeros(1, 2, 3, 5)), {}, ValueError, r"\bg\b"),
    ("kla_beta-eta-shape", kla_beta, (torch.rand(2, 3), torch.randn(2, 4, 5)), {}, ValueError, r"eta"),
    ("kla_beta-eps-nan", kla_beta, (DELTA[4], DELTA[1]), {"eps": float("nan")}, ValueError, r"\beps\b"),
    ("kla_beta-eps-inf", kla_beta, (DELTA[4], DELTA[1]), {"eps": float("inf")}, ValueError, r"\beps\b"),
    ("kla_beta-eps-0-zero-key", kla_beta, (DELTA[4], torch.zeros(1, 4, 2, 3)), {"eps": 0.0}, ValueError,
     r"\beps\b.*1\.175e-38"),
    ("kla_beta-eps-subnormal", kla_beta, (DELTA[4], torch.zeros(1, 4, 2, 3)), {"eps": 1e-40}, ValueError,
     r"\beps\b"),
    ("kla_beta-eps-str", kla_beta, (DELTA[4], DELTA[1]), {"eps": "1e-6"}, TypeError, r"\beps\b"),
    ("delta_rule_chunk-mask-half", delta_rule_chunk, tuple(DELTA), {"mask": torch.full((1, 4), 0.5)}, ValueError,
     r"\bmask\b.*only 0.*and 1"),
    ("delta_rule_recurrent-mask-2", delta_rule_recurrent, tuple(DELTA), {"mask": torch.full((1, 4), 2)},
     ValueError, r"\bmask\b.*only 0.*and 1"),
    ("delta_rule_step-mask-half", delta_rule_step, (*STEP, torch.zeros(1, 2, 3, 5)),
     {"mask": torch.full((1,), 0.5)}, ValueError, r"\bmask\b.*only 0.*and 1"),
    ("delta_rule_chunk-K-0", delta_rule_chunk, tuple(_delta_inputs(K=0)), {}, ValueError, r"q and k.*K >= 1"),
    ("delta_rule_recurrent-K-0", delta_rule_recurrent, tuple(_delta_inputs(K=0)), {}, ValueError,
     r"q and k.*K >= 1"),
    ("delta_rule_step-K-0", delta_rule_step, (*(t[:, 0] for t in _delta_inputs(K=0)), torch.zeros(1, 2, 0, 5)), {},
     ValueError, r"q and k.*K >= 1"),
    ("DeltaNetMixer-d_model", DeltaNetMixer, (7, 2), {}, ValueError, r"d_model"),
    ("DeltaNetMixer-mode", DeltaNetMixer, (8, 2), {"mode": "nope"}, ValueError, r"mode"),
    ("DeltaNetMixer-eps-nan", DeltaNetMixer, (8, 2), {"eps": float("nan")}, ValueError, r"\beps\b"),
    ("DeltaNetMixer-eps-inf", DeltaNetMixer, (8, 2), {"eps": float("inf")}, ValueError, r"\beps\b"),
    ("DeltaNetMixer-eps-0", DeltaNetMixer, (8, 2), {"eps": 0.0}, ValueError, r"\beps\b"),
    ("DeltaNetMixer-expand_k-inf", DeltaNetMixer, (8, 2), {"expand_k": float("inf")}, ValueError, r"\bexpand_k\b"),
    ("DeltaNetMixer-expand_k-nan", DeltaNetMixer, (8, 2), {"expand_k": float("nan")}, ValueError, r"\bexpand_k\b"),
    ("DeltaNetMixer-expand_k-0", DeltaNetMixer, (8, 2), {"expand_k": 0.0}, ValueError, r"\bexpand_k\b"),
    ("DeltaNetMixer-expand_k-small", DeltaNetMixer, (8, 2), {"expand_k": 0.1}, ValueError, r"\bexpand_k\b.*>= 1"),
    ("DeltaNetMixer-expand_k-str", DeltaNetMixer, (8, 2), {"expand_k": "a"}, TypeError, r"\bexpand_k\b"),
    ("DeltaNetMixer-expand_v-negative", DeltaNetMixer, (8, 2), {"expand_v": -1.0}, ValueError, r"\bexpand_v\b"),
    ("DeltaNetMixer-norm_eps-0", DeltaNetMixer, (8, 2), {"norm_eps": 0.0}, ValueError, r"\bnorm_eps\b"),
    ("DeltaNetMixer-norm_eps-nan", DeltaNetMixer, (8, 2), {"norm_eps": float("nan")}, ValueError, r"\bnorm_eps\b"),
    ("DeltaNetMixer-x-None", lambda: DeltaNetMixer(8, 2)(None), (), {}, TypeError, r"\bx\b"),
    ("DeltaNetMixer-x-list", lambda: DeltaNetMixer(8, 2)(torch.zeros(1, 4, 8).tolist()), (), {}, TypeError, r"\bx\b"),
    ("DeltaNetMixer-x-int64", lambda: DeltaNetMixer(8, 2)(torch.zeros(1, 4, 8, dtype=torch.long)), (), {}, ValueError,
     r"\bx\b.*floating"),
    ("DeltaNetMixer-x-complex", lambda: DeltaNetMixer(8, 2)(torch.zeros(1, 4, 8, dtype=torch.complex64)), (), {},
     ValueError, r"\bx\b.*floating"),
    ("DeltaNetMixer-x-float64", lambda: DeltaNetMixer(8, 2)(torch.zeros(1, 4, 8, dtype=torch.float64)), (), {},
     ValueError, r"\bx\b has dtype torch.float64.*float32"),
    ("DeltaNetMixer-x-nan", lambda: DeltaNetMixer(8, 2)(torch.full((1, 4, 8), float("nan"))), (), {}, ValueError,
     r"\bx\b"),
    ("DeltaNetMixer-attention_mask-list", lambda: DeltaNetMixer(8, 2)(torch.zeros(1, 4, 8), attention_mask=[[1] * 4]),
     (), {}, TypeError, r"attention_mask"),
    ("DeltaNetMixer-attention_mask-half", lambda: DeltaNetMixer(8, 2)(torch.zeros(1, 4, 8),
                                                                      attention_mask=torch.full((1, 4), 0.5)),
     (), {}, ValueError, r"attention_mask must hold only 0.*and 1"),
    ("DeltaNetMixer-attention_mask-2", lambda: DeltaNetMixer(8, 2)(torch.zeros(1, 4, 8),
                                                                   attention_mask=torch.full((1, 4), 2)),
     (), {}, ValueError, r"attention_mask must hold only 0.*and 1"),
    # losses
    ("frele_loss-empty-batch", frele_loss, (torch.zeros(0, 16, 3), torch.zeros(0, 16, 3)), {}, ValueError,
     r"pred and target"),
    ("frele_loss-delta", frele_loss, (torch.zeros(2, 16, 3), torch.zeros(2, 16, 3)), {"delta": 2.0}, ValueError,
     r"delta"),
    ("frele_loss-2d", frele_loss, (torch.zeros(16, 3), torch.zeros(16, 3)), {}, ValueError, r"pred"),
    ("mse_loss-empty-channels", mse_loss, (torch.zeros(2, 16, 0), torch.zeros(2, 16, 0)), {}, ValueError,
     r"pred and target"),
    # optimizers
    ("make_optimizer-name", make_optimizer, (_sequential(), "sgdx"), {"lr": 0.1}, ValueError, r"name"),
    ("make_optimizer-option", make_optimizer, (_sequential(), "nora"), {"lr": 0.1, "options": {"bogus": 1}},
     ValueError, r"bogus"),
    ("make_optimizer-lr", make_optimizer, (_sequential(), "adamw"), {"lr": -1.0}, ValueError, r"\blr\b"),
    ("make_optimizer-adamw-weight_decay-negative", make_optimizer, (_sequential(), "adamw"),
     {"lr": 0.1, "weight_decay": -1.0}, ValueError, r"\bweight_decay\b"),
    ("make_optimizer-adamw-weight_decay-nan", make_optimizer, (_sequential(), "adamw"),
     {"lr": 0.1, "weight_decay": float("nan")}, ValueError, r"\bweight_decay\b"),
    ("make_optimizer-adamw-weight_decay-str", make_optimizer, (_sequential(), "adamw"),
     {"lr": 0.1, "weight_decay": "a"}, TypeError, r"\bweight_decay\b"),
    ("make_optimizer-adamw_betas-single", make_optimizer, (_sequential(), "adamw"),
     {"lr": 0.1, "adamw_betas": (0.9,)}, ValueError, r"\badamw_betas\b"),
    ("make_optimizer-adamw_betas-None", make_optimizer, (_sequential(), "adamw"),
     {"lr": 0.1, "adamw_betas": None}, TypeError, r"\badamw_betas\b"),
    ("make_optimizer-adamw_betas-str", make_optimizer, (_sequential(), "nora"),
     {"lr": 0.1, "adamw_betas": "ab"}, TypeError, r"\badamw_betas\b"),
    ("make_optimizer-adamw_lr", make_optimizer, (_sequential(), "nora"), {"lr": 0.1, "adamw_lr": float("nan")},
     ValueError, r"\badamw_lr\b"),
    ("make_optimizer-adamw_weight_decay", make_optimizer, (_sequential(), "nora"),
     {"lr": 0.1, "adamw_weight_decay": -1.0}, ValueError, r"\badamw_weight_decay\b"),
    ("make_optimizer-options-list", make_optimizer, (_sequential(), "nora"), {"lr": 0.1, "options": [1, 2]},
     TypeError, r"\boptions\b"),
    ("make_optimizer-head-int", make_optimizer, (_sequential(), "nora"), {"lr": 0.1, "head": [1]}, TypeError,
     r"\bhead\b"),
    ("Nora-row_dim-bool", lambda: Nora([nn.Parameter(torch.ones(3, 3))], row_dim=True), (), {}, TypeError,
     r"\brow_dim\b"),
    # training loop
    ("train-grad_clip", _train, (), {"steps": 1, "grad_clip": -1.0}, ValueError, r"grad_clip"),
    ("train-steps", _train, (), {"steps": -1}, ValueError, r"steps"),
    ("train-early_stopping-without-eval", _train, (), {"steps": 1, "early_stopping": EarlyStopping(metric="v")},
     ValueError, r"early_stopping"),
    ("train-scheduler-str", _train, (), {"steps": 1, "scheduler": "abc"}, TypeError, r"\bscheduler\b"),
    ("train-optimizer-str", _train, (), {"steps": 1, "optimizer": "sgd"}, TypeError, r"\boptimizer\b"),
    ("train-model-None", lambda: train(None, lambda m, b: 0, lambda s: 0, torch.optim.SGD(_sequential().parameters(),
                                                                                          lr=0.1), steps=1),
     (), {}, TypeError, r"\bmodel\b"),
    ("train-eval_fn-float", _train, (), {"steps": 1, "eval_fn": lambda m: 1.0}, TypeError, r"\beval_fn\b"),
    ("train-metric-str", _train, (), {"steps": 1, "loss_fn": lambda m, b: (m(b).sum(), {"acc": "high"})}, TypeError,
     r"metric 'acc'"),
    ("train-loss-vector", _train, (), {"steps": 1, "loss_fn": lambda m, b: m(b).sum(1)}, ValueError,
     r"\bloss\b.*scalar"),
    ("train-loss-float", _train, (), {"steps": 1, "loss_fn": lambda m, b: 1.0}, TypeError, r"\bloss\b.*scalar"),
    ("train-loss-None", _train, (), {"steps": 1, "loss_fn": lambda m, b: None}, TypeError, r"\bloss\b"),
    ("train-batches-run-out", _train, (), {"steps": 3, "batches": [torch.ones(2, 4)]}, ValueError,
     r"batches ran out.*steps=3"),
    ("train-batches-int", _train, (), {"steps": 1, "batches": 5}, TypeError, r"\bbatches\b"),
    ("EarlyStopping-patience", EarlyStopping, (), {"metric": "v", "patience": 0}, ValueError, r"patience"),
    ("EarlyStopping-restore_best-str", EarlyStopping, (), {"metric": "v", "restore_best": "no"}, TypeError,
     r"restore_best"),
    ("EarlyStopping-metric-None", EarlyStopping, (), {"metric": None}, TypeError, r"\bmetric\b"),
    ("EarlyStopping-metric-int", EarlyStopping, (), {"metric": 5}, TypeError, r"\bmetric\b"),
    ("EarlyStopping-metric-empty", EarlyStopping, (), {"metric": ""}, ValueError, r"\bmetric\b"),
    ("EarlyStopping-stopping_threshold-str", EarlyStopping, (), {"metric": "v", "stopping_threshold": "a"},
     TypeError, r"stopping_threshold"),
    ("warmup_cosine-steps", lambda: warmup_cosine(torch.optim.SGD(_sequential().parameters(), lr=0.1), steps=0),
     (), {}, ValueError, r"steps"),
    ("warmup_cosine-min_ratio-negative", _warmup, (), {"steps": 5, "min_ratio": -1.0}, ValueError, r"min_ratio"),
    ("warmup_cosine-min_ratio-nan", _warmup, (), {"steps": 5, "min_ratio": float("nan")}, ValueError, r"min_ratio"),
    ("warmup_cosine-min_ratio-2", _warmup, (), {"steps": 5, "min_ratio": 2.0}, ValueError, r"min_ratio"),
    ("warmup_cosine-min_ratio-True", _warmup, (), {"steps": 5, "min_ratio": True}, TypeError, r"min_ratio"),
    ("warmup_cosine-min_ratio-str", _warmup, (), {"steps": 5, "min_ratio": "a"}, TypeError, r"min_ratio"),
    ("warmup_cosine-optimizer-None", lambda: warmup_cosine(None, steps=5), (), {}, TypeError, r"\boptimizer\b"),
    # checkpoints, files, data
    ("load_checkpoint-flipped-bytes", load_checkpoint, (Res("flipped_checkpoint"),), {}, CheckpointError,
     r"flipped\.pt.*checksum"),
    ("load_checkpoint-missing", load_checkpoint, ("no/such/checkpoint.pt",), {}, FileNotFoundError,
     r"checkpoint\.pt"),
    ("save_checkpoint-model-None", save_checkpoint, ("c.pt",), {"model": None}, TypeError, r"\bmodel\b"),
    ("save_checkpoint-optimizer-str", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2), "optimizer": "sgd"},
     TypeError, r"\boptimizer\b"),
    ("save_checkpoint-scheduler-str", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2), "scheduler": "cos"},
     TypeError, r"\bscheduler\b"),
    ("save_checkpoint-step-float", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2), "step": 2.7}, TypeError,
     r"\bstep\b"),
    ("save_checkpoint-step-nan", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2), "step": float("nan")},
     TypeError, r"\bstep\b"),
    ("save_checkpoint-step-str", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2), "step": "a"}, TypeError,
     r"\bstep\b"),
    ("save_checkpoint-step-negative", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2), "step": -1},
     ValueError, r"\bstep\b"),
    ("save_checkpoint-extra-object", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2),
                                                                  "extra": {"a": [1, object()]}},
     TypeError, r"extra\['a'\]\[1\] holds a object.*weights_only"),
    ("save_checkpoint-extra-lambda", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2),
                                                                  "extra": {"f": lambda: 0}},
     TypeError, r"extra\['f'\] holds a function"),
    ("save_checkpoint-extra-list", save_checkpoint, ("c.pt",), {"model": nn.Linear(2, 2), "extra": [1, 2]},
     TypeError, r"\bextra\b"),
    ("save_checkpoint-path-None", save_checkpoint, (None,), {"model": nn.Linear(2, 2)}, TypeError, r"\bpath\b"),
    ("load_checkpoint-path-None", load_checkpoint, (None,), {}, TypeError, r"\bpath\b"),
    ("restore_checkpoint-v1-without-model", restore_checkpoint, (Res("v1_checkpoint"),), {"model": nn.Linear(2, 2)},
     CheckpointError, r"v1\.pt.*lacks.*'model'"),
    ("atomic_open-path-None", lambda: atomic_open(None).__enter__(), (), {}, TypeError, r"\bpath\b"),
    ("atomic_write_text-None", atomic_write_text, ("t.txt", None), {}, TypeError, r"\btext\b"),
    ("atomic_write_text-int", atomic_write_text, ("t.txt", 5), {}, TypeError, r"\btext\b"),
    ("atomic_write_text-bytes", atomic_write_text, ("t.txt", b"x"), {}, TypeError, r"\btext\b"),
    ("atomic_write_bytes-str", atomic_write_bytes, ("b.bin", "x"), {}, TypeError, r"\bdata\b"),
    ("atomic_write_bytes-None", atomic_write_bytes, ("b.bin", None), {}, TypeError, r"\bdata\b"),
    ("atomic_write_json-circular", atomic_write_json, ("j.json", CIRCULAR), {}, ValueError, r"circular"),
    ("atomic_open-mode", lambda: atomic_open("x", "a").__enter__(), (), {}, ValueError, r"mode"),
    ("atomic_write_json-object", atomic_write_json, ("unused.json", {"a": object()}), {}, TypeError, r"object"),
    ("data_path-truncated-file", data_path, ("tinyshakespeare",), {"root": Res("truncated_data_root")},
     ChecksumError, r"tinyshakespeare\.txt.*sha256"),
    ("load_text-truncated-file", load_text, ("tinyshakespeare",), {"root": Res("truncated_data_root")},
     ChecksumError, r"tinyshakespeare"),
    ("get_dataset-unknown", get_dataset, ("tiny",), {}, ValueError, r"tiny"),
    ("TextBatches-batch_size", TextBatches, (torch.arange(100),), {"batch_size": 0, "seq_len": 4}, ValueError,
     r"batch_size"),
    ("load_tokenizer-escaping-file", load_tokenizer, (Res("escaping_tokenizer"),), {}, ValueError, r"'file'"),
    ("load_tokenizer-missing", load_tokenizer, ("no/such/folder",), {}, FileNotFoundError, r"tokenizer\.json"),
    ("make_tokenizer-kind", make_tokenizer, ("word",), {}, ValueError, r"kind"),
    ("update_readme-missing-results", update_readme, (Res("readme"), "no/such/results.json"), {},
     FileNotFoundError, r"results\.json"),
    # audits and scaling laws
    ("ThresholdMIA-float-labels", lambda: ThresholdMIA().fit((LOGITS, LABELS + 0.5), (LOGITS, LABELS)), (), {},
     ValueError, r"labels"),
    ("membership_score-float-labels", membership_score, (LOGITS, LABELS + 0.5), {"kind": "loss"}, ValueError,
     r"labels"),
    ("membership_score-kind", membership_score, (LOGITS, LABELS), {"kind": "nope"}, ValueError, r"kind"),
    ("SMI-estimator", lambda: SMI(estimator="nope").fit(FEATURES, FEATURES + 1), (), {}, ValueError,
     r"estimator|nope"),
    ("SMI-alpha", lambda: SMI(alpha=1.5).fit(FEATURES, FEATURES + 1), (), {}, ValueError, r"alpha"),
    ("SMI-feature-dims", lambda: SMI().fit(FEATURES, FEATURES[:, :2]), (), {}, ValueError, r"nonmember_features"),
    ("SMI-not-fitted", lambda: SMI().estimate(FEATURES), (), {}, NotFittedError, r"SMI|fit"),
    ("fit_law-name", fit_law, ("nope",), SCALING, ValueError, r"nope"),
    ("fit_law-negative-N", fit_law, ("chinchilla",), {**SCALING, "N": -SCALING["N"]}, ValueError, r"\bN\b"),
    ("fit_law-length-mismatch", fit_law, ("chinchilla",), {**SCALING, "D": SCALING["D"][:3]}, ValueError,
     r"\bD\b|length"),
]


@pytest.mark.parametrize(("fn", "args", "kwargs", "exc", "pattern"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_raises_a_clear_error(fn, args, kwargs, exc, pattern, resources, tmp_path, monkeypatch) -> None:
    check_row(fn, args, kwargs, exc, pattern, resources, tmp_path, monkeypatch)


def test_every_row_has_a_unique_id() -> None:
    ids = [r[0] for r in ROWS]
    assert len(ids) == len(set(ids))
