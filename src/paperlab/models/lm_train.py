"""The one LM training recipe, used by ``paperlab lm train`` and by the KLA experiments (arXiv 2605.08587).

Two levels: ``train_lm(model, LMTrainConfig, train_tokens=...)`` trains a built model through the one loop
(``paperlab.train``); ``train_run(LMRunConfig, out_dir=...)`` does the whole job of ``paperlab lm train``
(corpus, tokenizer, model from the seed, ``train_lm``, run folder). The optimizer is
``paperlab.optim.make_optimizer`` with one no-decay rule (``no_weight_decay``), under linear warm-up and
cosine decay, with gradient clipping, periodic validation perplexity, checkpoints and exact resume (batches
are a pure function of the step). Under torchrun every rank trains on its slice of the same global batch and
DDP averages gradients (see ``paperlab.distributed``).

A run folder holds ``config.json`` (model + training config as started, plus a record of each resume),
``tokenizer.json``, ``checkpoint.pt``, ``history.json`` and ``loss.png``; ``train_run`` never trains over it
silently (see its ``resume`` and ``overwrite``).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from paperlab._validate import check_choice, check_int, check_positive, check_probability
from paperlab.checkpoint import restore_checkpoint
from paperlab.data.text import CORPORA, TextBatches, encode_text, load_text
from paperlab.data.tokenizers import TOKENIZERS, Tokenizer, load_tokenizer, make_tokenizer
from paperlab.distributed import rank_world, unwrap, wrap_ddp
from paperlab.io import atomic_write_bytes, atomic_write_json
from paperlab.layers import MIXERS
from paperlab.models.lm import LM, LMConfig
from paperlab.models.lm_eval import evaluate_ppl
from paperlab.optim import OPTIMIZERS, make_optimizer
from paperlab.train import CHECKPOINT_NAME, TrainResult, train, warmup_cosine

__all__ = ["CONFIG_FILE", "RESUME_MAY_CHANGE", "LMRun", "LMRunConfig", "LMTrainConfig", "build_optimizer", "init_lm",
           "lm_loss", "load_run", "no_weight_decay", "save_loss_curve", "save_run_config", "train_lm", "train_run"]

CONFIG_FILE = "config.json"
# What a run folder holds (the tokenizer files are paperlab.data.tokenizers'): their presence marks a run.
_RUN_FILES = (CONFIG_FILE, "tokenizer.json", "bpe.json", CHECKPOINT_NAME, "history.json", "loss.png", "eval.json")
# Training fields a resume may change: when the run evaluates and checkpoints, and (only upwards) how long it runs.
RESUME_MAY_CHANGE = ("steps", "eval_every", "checkpoint_every")


@dataclass(frozen=True, kw_only=True)
class LMTrainConfig:
    """How to train (the defaults are a CPU-sized byte-level run; ``paperlab lm train --help`` lists them).

    Args:
        steps: optimizer steps.
        batch_size: global windows per step (split across ranks).
        seq_len: training context.
        lr, weight_decay, betas: AdamW settings (``lr`` is the peak of warm-up + cosine to ``min_lr_ratio``;
            ``weight_decay`` applies where ``no_weight_decay`` is False).
        warmup: linear warm-up steps (capped at steps - 1).
        grad_clip: global gradient-norm clip (None: off).
        optimizer: a ``paperlab.optim.OPTIMIZERS`` name ("adamw"; others on hidden matrices, AdamW elsewhere).
        eval_every: validation every this many steps (0: only at the end).
        eval_tokens: validation tokens scored by the periodic evaluation.
        checkpoint_every: checkpoint every this many steps (0: only at the end).
        seed: model init and batch order.
    """

    steps: int = 1500
    batch_size: int = 16
    seq_len: int = 128
    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float | None = 1.0
    optimizer: str = "adamw"
    eval_every: int = 100
    eval_tokens: int = 16384
    checkpoint_every: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("steps", self.steps, minimum=1)
        check_int("batch_size", self.batch_size, minimum=1)
        check_int("seq_len", self.seq_len, minimum=1)
        check_positive("lr", self.lr)
        check_probability("min_lr_ratio", self.min_lr_ratio)
        check_int("warmup", self.warmup, minimum=0)
        check_positive("weight_decay", self.weight_decay, allow_zero=True)
        if len(self.betas) != 2:
            raise ValueError(f"betas must be a pair, got {self.betas!r}")
        object.__setattr__(self, "betas", tuple(check_probability("betas", b) for b in self.betas))
        if self.grad_clip is not None:
            check_positive("grad_clip", self.grad_clip)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_int("eval_every", self.eval_every, minimum=0)
        check_int("eval_tokens", self.eval_tokens, minimum=1)
        check_int("checkpoint_every", self.checkpoint_every, minimum=0)
        check_int("seed", self.seed, minimum=0)


@dataclass(frozen=True, kw_only=True)
class LMRunConfig:
    """What ``train_run`` (``paperlab lm train``) trains: corpus, tokenizer and model shape; ``train`` says how.

    Args:
        data: a ``paperlab.data.text.CORPORA`` name ("pydoc" ships with Python).
        tokenizer: "byte", "char" (fitted on train + validation text, so validation has no unknown
            characters) or "bpe" (trained on the training text, ``bpe_vocab`` ids).
        mixer: a ``paperlab.layers.MIXERS`` key.
        d_model, n_layers, n_heads, mlp_ratio: the ``LMConfig`` shape.
        train: the training config (its ``seed`` also initialises the model).
    """

    data: str = "pydoc"
    tokenizer: str = "byte"
    bpe_vocab: int = 1024
    mixer: str = "kla"
    d_model: int = 128
    n_layers: int = 3
    n_heads: int = 2
    mlp_ratio: float = 4.0
    train: LMTrainConfig = field(default_factory=LMTrainConfig)

    def __post_init__(self) -> None:
        check_choice("data", self.data, CORPORA)
        check_choice("tokenizer", self.tokenizer, TOKENIZERS)
        check_int("bpe_vocab", self.bpe_vocab, minimum=2)
        check_choice("mixer", self.mixer, MIXERS)
        for name in ("d_model", "n_layers", "n_heads"):
            check_int(name, getattr(self, name), minimum=1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        check_positive("mlp_ratio", self.mlp_ratio)
        if not isinstance(self.train, LMTrainConfig):
            raise TypeError(f"train must be an LMTrainConfig, got {type(self.train).__name__}")

    def model_config(self, vocab_size: int) -> LMConfig:
        """The ``LMConfig`` for a tokenizer of ``vocab_size`` ids; built for at least ``LMConfig``'s default
        context (long-context evaluation goes past the training length)."""
        base = LMConfig(vocab_size=vocab_size, d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
                        mixer=self.mixer, mlp_ratio=self.mlp_ratio)
        return dataclasses.replace(base, max_seq_len=max(base.max_seq_len, self.train.seq_len))


def init_lm(config: LMConfig, *, seed: int) -> LM:
    """``LM(config)`` initialised from ``seed`` without touching the global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LM(config)


def no_weight_decay(param: nn.Parameter) -> bool:
    """The one no-decay rule of LM training: True for parameters with fewer than 2 dimensions (biases, norm
    gains, per-head scalars: A_log, dt_bias, learned_scalar's c) and for any flagged ``_no_weight_decay``
    (the Mamba2 / fla convention; ``DeltaNetMixer`` flags A_log and dt_bias). Matrices decay, the tied
    embedding included, as in nanoGPT. The KLA authors' training scripts decay every parameter (their flags
    are never read); keeping the decay gates out of decay follows Mamba2 and fla."""
    return param.dim() < 2 or bool(getattr(param, "_no_weight_decay", False))


def _exclude_from_decay(optimizer: torch.optim.Optimizer, model: nn.Module) -> None:
    """Move the ``no_weight_decay`` parameters of every decaying group into a copy of that group with
    ``weight_decay=0`` (before any step or scheduler, so no state or ``initial_lr`` exists yet)."""
    skip = {id(p) for p in model.parameters() if no_weight_decay(p)}
    for group in list(optimizer.param_groups):
        moved = [p for p in group["params"] if id(p) in skip]
        if not moved or not group.get("weight_decay"):
            continue
        if len(moved) == len(group["params"]):
            group["weight_decay"] = 0.0
            continue
        group["params"] = [p for p in group["params"] if id(p) not in skip]
        optimizer.add_param_group({**{k: v for k, v in group.items() if k != "params"}, "params": moved,
                                   "weight_decay": 0.0})


def build_optimizer(model: nn.Module, name: str = "adamw", *, lr: float, weight_decay: float,
                    betas: tuple[float, float] = (0.9, 0.95)) -> torch.optim.Optimizer:
    """``paperlab.optim.make_optimizer(model, name)`` (AdamW at ``lr``/``betas`` wherever ``name`` does not
    step) with ``weight_decay`` on every parameter except those ``no_weight_decay`` names."""
    optimizer = make_optimizer(model, name, lr=lr, weight_decay=weight_decay, adamw_lr=lr,
                               adamw_weight_decay=weight_decay, adamw_betas=betas)
    _exclude_from_decay(optimizer, model)
    return optimizer


def lm_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean next-token cross-entropy of ``batch = (inputs [B, T], targets [B, T])``."""
    inputs, targets = batch
    device = next(model.parameters()).device
    logits, _ = model(inputs.to(device))
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.to(device).flatten())


def _unused_parameters(model: nn.Module, seq_len: int) -> bool:
    """Whether a forward/backward leaves some parameter without gradient (DDP must then search for them)."""
    device = next(model.parameters()).device
    ids = torch.zeros(1, min(seq_len, 4), dtype=torch.long, device=device)
    logits, _ = model(ids)
    logits.float().sum().backward()
    unused = any(p.grad is None for p in model.parameters() if p.requires_grad)
    model.zero_grad(set_to_none=True)
    return unused


def train_lm(model: LM, config: LMTrainConfig, *, train_tokens: torch.Tensor,
             val_tokens: torch.Tensor | None = None, out_dir: str | os.PathLike | None = None,
             resume: bool = False, progress: bool = True,
             on_step: Callable[[int, nn.Module], None] | None = None) -> TrainResult:
    """Train ``model`` in place on ``train_tokens`` ``[N]``; validate on ``val_tokens`` ``[M]``.

    Evaluation (every ``config.eval_every`` steps and at the end) reports ``val_loss``/``val_ppl``/
    ``val_bits_per_token`` on the first ``config.eval_tokens`` validation tokens at the training context;
    without ``val_tokens`` there is none (then ``config.eval_every`` must be 0). With ``out_dir`` checkpoints go
    to ``out_dir/checkpoint.pt`` and ``resume=True`` continues from there. Under torchrun (initialised process
    group) every rank must call this with the same arguments. ``on_step(step, model)`` runs after each step.
    """
    if val_tokens is None and config.eval_every:
        raise ValueError(f"config.eval_every={config.eval_every} needs val_tokens; pass them or set eval_every=0")
    rank, world = rank_world()
    batches = TextBatches(train_tokens, batch_size=config.batch_size, seq_len=config.seq_len, seed=config.seed,
                          rank=rank, world_size=world)
    optimizer = build_optimizer(model, config.optimizer, lr=config.lr, weight_decay=config.weight_decay,
                                betas=config.betas)
    scheduler = warmup_cosine(optimizer, steps=config.steps, warmup=min(config.warmup, config.steps - 1),
                              min_ratio=config.min_lr_ratio)
    eval_fn = None
    if val_tokens is not None:
        eval_stream = val_tokens[: config.eval_tokens + 1]

        def eval_fn(m: nn.Module) -> dict[str, float]:
            r = evaluate_ppl(unwrap(m), eval_stream, context=min(config.seq_len, eval_stream.numel() - 1))
            return {"val_loss": r["loss"], "val_ppl": r["ppl"], "val_bits_per_token": r["bits_per_token"]}

    wrapped = wrap_ddp(model, find_unused_parameters=world > 1 and _unused_parameters(model, config.seq_len))
    return train(wrapped, lm_loss, batches, optimizer, steps=config.steps, scheduler=scheduler,
                 grad_clip=config.grad_clip, eval_fn=eval_fn, eval_every=config.eval_every,
                 checkpoint_dir=out_dir, checkpoint_every=config.checkpoint_every if out_dir else 0,
                 resume=resume, progress=progress and rank == 0, desc=f"lm {model.config.mixer}",
                 on_step=on_step)


@dataclass(frozen=True)
class LMRun:
    """What ``train_run`` returns: the trained model, its tokenizer, the loop's result and the validation
    metrics of the untrained model (``evaluate_ppl`` output; None when resumed or on ranks > 0)."""

    model: LM
    tokenizer: Tokenizer
    result: TrainResult
    init_eval: dict[str, float] | None
    out_dir: Path


def _tokenizer(config: LMRunConfig, out_dir: Path, resuming: bool, train_text: str, val_text: str) -> Tokenizer:
    if resuming:
        return load_tokenizer(out_dir)
    fit_text = train_text + val_text if config.tokenizer == "char" else train_text
    return make_tokenizer(config.tokenizer, text=fit_text, vocab_size=config.bpe_vocab)


def _check_folder(out_dir: Path, *, resume: bool, overwrite: bool) -> bool:
    """Whether ``train_run`` resumes ``out_dir``; refuse to train over a run folder unless told how."""
    if resume and overwrite:
        raise ValueError("resume=True and overwrite=True exclude each other: resume continues the run in "
                         f"{out_dir}, overwrite starts it over")
    found = [name for name in _RUN_FILES if (out_dir / name).exists()]
    if resume and found and not (out_dir / CONFIG_FILE).is_file():
        raise FileNotFoundError(f"{out_dir} holds {', '.join(found)} but no {CONFIG_FILE}, so resume cannot "
                                "check the run's settings; pass overwrite=True (--overwrite) to start over")
    if found and not resume and not overwrite:
        raise FileExistsError(f"{out_dir} already holds a run ({', '.join(found)}); pass resume=True (--resume) "
                              "to continue it or overwrite=True (--overwrite) to start it over")
    return resume and (out_dir / CONFIG_FILE).is_file()


def _resume_changes(out_dir: Path, config: LMRunConfig, model_config: LMConfig) -> dict[str, list[Any]]:
    """The ``RESUME_MAY_CHANGE`` fields that resuming ``out_dir`` with ``config`` changes, as
    ``{field: [before, now]}``; ValueError naming every other field that differs from the saved run."""
    saved = json.loads((out_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    if saved["model"] != model_config.to_dict():
        diff = {k: (saved["model"].get(k), v) for k, v in model_config.to_dict().items() if saved["model"].get(k) != v}
        raise ValueError(f"resume with a different model than the one in {out_dir}: (saved, given) {diff}")
    effective = dict(saved["train"])  # the saved config with the changes of earlier resumes applied
    for record in saved.get("resumes", []):
        effective.update({k: now for k, (_before, now) in record["changed"].items()})
    given = json.loads(json.dumps(dataclasses.asdict(config.train)))  # as JSON holds it (betas: a list)
    bad = {k: (saved.get(k), v) for k, v in (("data", config.data), ("tokenizer", config.tokenizer))
           if saved.get(k) != v}
    bad |= {k: (effective.get(k), v) for k, v in given.items()
            if effective.get(k) != v and (k not in RESUME_MAY_CHANGE or (k == "steps" and v < effective[k]))}
    if bad:
        raise ValueError(f"resume with a training config that differs from {out_dir / CONFIG_FILE}: (saved, given) "
                         f"{bad}; only {list(RESUME_MAY_CHANGE)} may change (steps only upwards): train with "
                         "other settings in a new folder, or pass overwrite=True (--overwrite) to start over")
    return {k: [effective[k], given[k]] for k in RESUME_MAY_CHANGE if effective[k] != given[k]}


def _record_resume(out_dir: Path, changed: dict[str, list[Any]], world_size: int) -> None:
    """Append one resume to ``config.json["resumes"]``; the run's original settings are never rewritten."""
    saved = json.loads((out_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    saved.setdefault("resumes", []).append({"changed": changed, "world_size": world_size})
    atomic_write_json(out_dir / CONFIG_FILE, saved)


def _start_over(out_dir: Path) -> None:
    """Remove the files of an earlier run (``overwrite=True``), so a later resume never meets its checkpoint."""
    for name in _RUN_FILES:
        (out_dir / name).unlink(missing_ok=True)


def train_run(config: LMRunConfig, *, out_dir: str | os.PathLike, resume: bool = False, overwrite: bool = False,
              progress: bool = True, log: Callable[[str], None] | None = None) -> LMRun:
    """Train the LM that ``config`` describes and write its run folder ``out_dir`` (what ``paperlab lm train``
    does): load ``config.data``, fit the tokenizer (or, resuming, load the folder's), initialise the model from
    ``config.train.seed``, ``train_lm`` with validation and checkpoints, then save ``history.json`` and
    ``loss.png``.

    A folder that already holds a run is never trained over silently: ``resume=True`` continues its checkpoint,
    ``overwrite=True`` deletes the old run's files and starts over; without either it raises FileExistsError. Resuming
    with a different model, corpus, tokenizer or training field raises ValueError naming the fields, except
    ``RESUME_MAY_CHANGE``: ``eval_every`` and ``checkpoint_every`` (they change when the run is evaluated and
    saved, not what it computes) and a larger ``steps`` (training on; the cosine schedule is then recomputed
    for the new total from the checkpoint step on, so the run no longer equals an uninterrupted one of that
    length). ``config.json`` keeps the settings the run started with; each resume appends
    ``{"changed": {field: [before, now]}, "world_size": n}`` to its ``"resumes"`` list.

    Under torchrun every rank calls this after ``paperlab.distributed.init_distributed``; rank 0 writes the
    folder and calls ``log`` (one line per message: sizes and perplexity at init, each evaluation, the paths).
    """
    out_dir = Path(out_dir)
    rank, world = rank_world()
    say = log if log is not None and rank == 0 else (lambda _line: None)
    resuming = _check_folder(out_dir, resume=resume, overwrite=overwrite)
    train_text, val_text = load_text(config.data, "train"), load_text(config.data, "val")
    tokenizer = _tokenizer(config, out_dir, resuming, train_text, val_text)
    model_config = config.model_config(tokenizer.vocab_size)
    changed = _resume_changes(out_dir, config, model_config) if resuming else None
    train_ids, val_ids = encode_text(tokenizer, train_text), encode_text(tokenizer, val_text)
    model = init_lm(model_config, seed=config.train.seed)
    init_eval = None
    if rank == 0:
        if changed is not None:
            _record_resume(out_dir, changed, world)
        else:
            _start_over(out_dir)
            out_dir.mkdir(parents=True, exist_ok=True)
            tokenizer.save(out_dir)
            save_run_config(out_dir, model_config, config.train, data=config.data, tokenizer=tokenizer.kind,
                            world_size=world)
            init_eval = evaluate_ppl(model, val_ids[: config.train.eval_tokens + 1], context=config.train.seq_len)
            say(f"{config.mixer}: {model.num_parameters():,} non-embedding parameters, {train_ids.numel():,} "
                f"train tokens; val ppl at init {init_eval['ppl']:.3f}")
    result = train_lm(model, config.train, train_tokens=train_ids, val_tokens=val_ids, out_dir=out_dir,
                      resume=resume, progress=progress)
    if rank == 0:
        atomic_write_json(out_dir / "history.json", {"history": result.history, "evals": result.evals})
        save_loss_curve(result.history, result.evals, out_dir / "loss.png", title=f"{config.mixer} on {config.data}")
        for e in result.evals:
            say(f"step {e['step']:>6}: val loss {e['val_loss']:.4f}  ppl {e['val_ppl']:.3f}  "
                f"bits/token {e['val_bits_per_token']:.4f}")
        say(f"saved {out_dir / 'checkpoint.pt'} and {out_dir / 'loss.png'}")
    return LMRun(model=model, tokenizer=tokenizer, result=result, init_eval=init_eval, out_dir=out_dir)


def save_run_config(out_dir: str | os.PathLike, model_config: LMConfig, train_config: LMTrainConfig,
                    **extra: Any) -> Path:
    """Write ``config.json`` = ``{"model": ..., "train": ..., **extra}`` (e.g. data name, tokenizer kind)."""
    return atomic_write_json(Path(out_dir) / CONFIG_FILE, {
        "model": model_config.to_dict(), "train": dataclasses.asdict(train_config), **extra})


def load_run(out_dir: str | os.PathLike) -> tuple[LM, dict[str, Any]]:
    """The trained model of a run folder (weights from ``checkpoint.pt``) and its parsed ``config.json``.

    Raises FileNotFoundError for a missing file, ValueError naming ``config.json`` when it is not JSON or holds no
    model config, and ``CheckpointError`` when the checkpoint is damaged or holds another model's weights."""
    out_dir = Path(out_dir)
    cfg_path = out_dir / CONFIG_FILE
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{out_dir} holds no {CONFIG_FILE}; is it a `paperlab lm train` folder?")
    try:
        meta = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{cfg_path} is not valid JSON ({exc}); is it a `paperlab lm train` run config?") from exc
    if not isinstance(meta, dict) or not isinstance(meta.get("model"), dict):
        raise ValueError(f"{cfg_path} holds no 'model' config (a dict of LMConfig fields), so the model cannot be "
                         "rebuilt; is it a `paperlab lm train` run config?")
    model = LM(LMConfig.from_dict(meta["model"]))
    # restore_checkpoint checks the saved weights against the model (keys and shapes) before loading them
    payload = restore_checkpoint(out_dir / "checkpoint.pt", model=model, restore_rng=False)
    meta["step"] = payload["step"]
    meta["history"] = payload["extra"].get("history", [])
    meta["evals"] = payload["extra"].get("evals", [])
    return model.eval(), meta


def save_loss_curve(history: list[dict[str, float]], evals: list[dict[str, float]],
                    path: str | os.PathLike, *, title: str = "") -> Path:
    """Plot training loss (and its 20-step running mean) and validation loss against the step into a PNG."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=110)
    ax = fig.add_subplot()
    steps = [h["step"] for h in history]
    losses = [h["loss"] for h in history]
    if losses:
        ax.plot(steps, losses, color="tab:blue", alpha=0.3, lw=0.8, label="train (per step)")
        window = [sum(losses[max(0, i - 19) : i + 1]) / len(losses[max(0, i - 19) : i + 1])
                  for i in range(len(losses))]
        ax.plot(steps, window, color="tab:blue", lw=1.5, label="train (20-step mean)")
    if evals:
        ax.plot([e["step"] for e in evals], [e["val_loss"] for e in evals], "o-", color="tab:red", label="val")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()  # rendered in memory, then renamed into place: a crash never leaves half a PNG
    fig.savefig(buf, format="png")
    return atomic_write_bytes(path, buf.getvalue())
