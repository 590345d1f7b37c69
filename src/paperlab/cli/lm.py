"""``paperlab lm train | eval | generate``: language models on small text corpora.

``train`` is argparse -> ``LMRunConfig`` -> ``paperlab.models.lm_train.train_run``; ``--help`` shows every default.

    paperlab lm train --mixer kla --data tinyshakespeare --steps 300 --out runs/lm-kla   # the rest: config defaults
    paperlab lm eval runs/lm-kla --lengths 1 2 4 8 16
    paperlab lm generate runs/lm-kla --prompt "ROMEO:" --max-new-tokens 200 --temperature 0.8

Multi-process (DDP): ``torchrun --standalone --nproc_per_node=2 -m paperlab.cli lm train ...``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from paperlab.cli._argparse import ArgumentParser

if TYPE_CHECKING:
    from paperlab.models.lm_train import LMRunConfig

__all__ = ["add_parser"]


# ``paperlab lm train`` option -> (the config holding that field: "run" LMRunConfig or "train" LMTrainConfig,
# type, help). No default is written here: an option left out keeps its ``_FromConfig`` default, so the config
# keeps the dataclass default, which ``--help`` prints.
_TRAIN_OPTIONS: dict[str, tuple[str, type, str]] = {
    "mixer": ("run", str, "kla, gdn, attention or another paperlab.layers.MIXERS key"),
    "data": ("run", str, "pydoc (built in), tinyshakespeare or wikitext2"),
    "tokenizer": ("run", str, "byte, char or bpe"),
    "bpe_vocab": ("run", int, "vocabulary size of the BPE tokenizer"),
    "d_model": ("run", int, "model width"),
    "n_layers": ("run", int, "number of blocks"),
    "n_heads": ("run", int, "heads of the mixer"),
    "mlp_ratio": ("run", float, "SwiGLU width over d_model"),
    "steps": ("train", int, "optimizer steps"),
    "batch_size": ("train", int, "global batch (split across processes)"),
    "seq_len": ("train", int, "training context"),
    "lr": ("train", float, "peak learning rate (linear warm-up, then cosine decay)"),
    "warmup": ("train", int, "warm-up steps"),
    "weight_decay": ("train", float, "weight decay of matrices (vectors, A_log, dt_bias: none)"),
    "optimizer": ("train", str, "adamw, or nora / rmnp / muon on the hidden matrices (paperlab.optim)"),
    "eval_every": ("train", int, "validate every N steps (0: only at the end)"),
    "eval_tokens": ("train", int, "validation tokens per evaluation"),
    "checkpoint_every": ("train", int, "checkpoint every N steps (0: only at the end)"),
    "seed": ("train", int, "model init and batch order"),
}


class _FromConfig:
    """The argparse default of ``lm train --NAME``: "not given". Its text is the dataclass default, read (importing
    the library) only when ``--help`` prints it, so building the parser stays torch-free."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        from paperlab.models.lm_train import LMRunConfig

        run = LMRunConfig()
        return str(getattr(run.train if _TRAIN_OPTIONS[self.name][0] == "train" else run, self.name))


def _run_config(args: argparse.Namespace) -> LMRunConfig:
    """The ``LMRunConfig`` of the parsed ``lm train`` options (those left out keep the dataclass defaults)."""
    from paperlab.models.lm_train import LMRunConfig, LMTrainConfig

    given = {name: getattr(args, name) for name in _TRAIN_OPTIONS if not isinstance(getattr(args, name), _FromConfig)}
    run = {k: v for k, v in given.items() if _TRAIN_OPTIONS[k][0] == "run"}
    train = {k: v for k, v in given.items() if _TRAIN_OPTIONS[k][0] == "train"}
    return LMRunConfig(**run, train=LMTrainConfig(**train))


def _train(args: argparse.Namespace) -> int:
    import torch

    from paperlab.distributed import cleanup, init_distributed
    from paperlab.models.lm_train import train_run

    config = _run_config(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    init_distributed()
    try:
        train_run(config, out_dir=args.out, resume=args.resume, overwrite=args.overwrite,
                  progress=not args.no_progress, log=print)
    finally:
        cleanup()
    return 0


def _eval(args: argparse.Namespace) -> int:
    import torch

    from paperlab.bench import format_table
    from paperlab.data.text import encode_text, load_text
    from paperlab.data.tokenizers import load_tokenizer
    from paperlab.io import atomic_write_json
    from paperlab.models.lm_eval import evaluate_lengths
    from paperlab.models.lm_train import load_run

    if args.threads:
        torch.set_num_threads(args.threads)
    model, meta = load_run(args.dir)
    tokenizer = load_tokenizer(args.dir)
    data = args.data or meta.get("data", "pydoc")
    tokens = encode_text(tokenizer, load_text(data, "val"))
    train_len = meta["train"]["seq_len"]
    rows = []
    for f in _progress(args.lengths, desc="eval lengths", disable=args.no_progress):
        rows += evaluate_lengths(model, tokens, train_len=train_len, factors=(f,), batch_size=args.batch_size,
                                 max_tokens=args.max_tokens, chunk=args.chunk)
    print(f"{meta['model']['mixer']} on {data} (val), trained at context {train_len}, step {meta['step']}")
    print(format_table([{k: r[k] for k in ("factor", "context", "tokens", "loss", "ppl", "bits_per_token")}
                        for r in rows]))
    atomic_write_json(Path(args.dir) / "eval.json", {"data": data, "train_len": train_len, "rows": rows})
    return 0


def _progress(items, *, desc: str, disable: bool):
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, disable=disable, leave=False)


def _generate(args: argparse.Namespace) -> int:
    import torch

    from paperlab.data.tokenizers import load_tokenizer
    from paperlab.models.generate import generate
    from paperlab.models.lm_train import load_run

    if args.threads:
        torch.set_num_threads(args.threads)
    model, _meta = load_run(args.dir)
    tokenizer = load_tokenizer(args.dir)
    ids = torch.tensor([tokenizer.encode(args.prompt)], dtype=torch.long)
    if ids.numel() == 0:
        raise ValueError("--prompt must encode to at least one token")
    out = generate(model, ids, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                   seed=args.seed, progress=not args.no_progress)
    print(tokenizer.decode(out[0].tolist()))
    return 0


def _add_train(lsub: argparse._SubParsersAction) -> None:
    p = lsub.add_parser("train", help="train a language model",
                        description="Train an LM (paperlab.models.lm_train.train_run); writes DIR.")
    for name, (_level, kind, text) in _TRAIN_OPTIONS.items():
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=_FromConfig(name), help=text)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    p.add_argument("--resume", action="store_true",
                   help="continue from DIR/checkpoint.pt (only --steps upwards, --eval-every and "
                        "--checkpoint-every may differ from the saved run)")
    p.add_argument("--overwrite", action="store_true", help="delete the run already in DIR and start over")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="run folder")
    p.set_defaults(func=_train, _parser=p)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``paperlab lm`` and its ``train``, ``eval`` and ``generate`` subcommands."""
    p = sub.add_parser("lm", help="train, evaluate and sample language models",
                       description="Language models with KLA / GDN / attention mixers.")
    lsub = p.add_subparsers(dest="lm_command", required=True, parser_class=ArgumentParser)
    _add_train(lsub)
    e = lsub.add_parser("eval", help="perplexity at multiples of the training length")
    e.add_argument("dir", type=Path, help="run folder written by `paperlab lm train`")
    e.add_argument("--lengths", type=int, nargs="+", default=[1, 2, 4, 8, 16],
                   help="context lengths as multiples of the training length")
    e.add_argument("--data", default=None, help="corpus (default: the training corpus)")
    e.add_argument("--max-tokens", type=int, default=32768, help="scored tokens (same for every length)")
    e.add_argument("--chunk", type=int, default=None, help="steps per forward call (default: training length)")
    e.add_argument("--batch-size", type=int, default=8, help="windows per forward call")
    e.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    e.set_defaults(func=_eval, _parser=e)
    g = lsub.add_parser("generate", help="sample a continuation of a prompt")
    g.add_argument("dir", type=Path, help="run folder written by `paperlab lm train`")
    g.add_argument("--prompt", required=True, help="text to continue")
    g.add_argument("--max-new-tokens", type=int, default=200, help="tokens to sample")
    g.add_argument("--temperature", type=float, default=0.8, help="0 for greedy, else >= 1e-4")
    g.add_argument("--top-k", type=int, default=None, help="sample among the k most likely tokens (default: all)")
    g.add_argument("--seed", type=int, default=0, help="sampling seed")
    g.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.set_defaults(func=_generate, _parser=g)
    p.set_defaults(_parser=p)
