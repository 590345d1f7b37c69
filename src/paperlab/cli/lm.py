"""``paperlab lm train | eval | generate``: language models on small text corpora.

    paperlab lm train --mixer kla --data tinyshakespeare --steps 300 --out runs/lm-kla
    paperlab lm eval runs/lm-kla --lengths 1 2 4 8 16
    paperlab lm generate runs/lm-kla --prompt "ROMEO:" --max-new-tokens 200 --temperature 0.8

Multi-process (DDP): ``torchrun --standalone --nproc_per_node=2 -m paperlab.cli lm train ...``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from paperlab.cli._argparse import ArgumentParser

__all__ = ["add_parser"]


def _train(args: argparse.Namespace) -> int:
    import torch

    from paperlab.data.text import encode_text, load_text
    from paperlab.data.tokenizers import load_tokenizer, make_tokenizer
    from paperlab.distributed import cleanup, init_distributed
    from paperlab.io import atomic_write_json
    from paperlab.models.lm import LMConfig
    from paperlab.models.lm_eval import evaluate_ppl
    from paperlab.models.lm_train import (
        CONFIG_FILE,
        LMTrainConfig,
        init_lm,
        save_loss_curve,
        save_run_config,
        train_lm,
    )

    if args.threads:
        torch.set_num_threads(args.threads)
    rank, world = init_distributed()
    out: Path = args.out
    train_text, val_text = load_text(args.data, "train"), load_text(args.data, "val")
    resuming = args.resume and (out / CONFIG_FILE).is_file()
    if resuming:
        tokenizer = load_tokenizer(out)
    else:
        fit_text = train_text + val_text if args.tokenizer == "char" else train_text
        tokenizer = make_tokenizer(args.tokenizer, text=fit_text, vocab_size=args.bpe_vocab)
    model_cfg = LMConfig(vocab_size=tokenizer.vocab_size, d_model=args.d_model, n_layers=args.n_layers,
                         n_heads=args.n_heads, mixer=args.mixer, mlp_ratio=args.mlp_ratio,
                         max_seq_len=max(2048, args.seq_len))
    train_cfg = LMTrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
                              warmup=args.warmup, optimizer=args.optimizer, eval_every=args.eval_every,
                              eval_tokens=args.eval_tokens, checkpoint_every=args.eval_every, seed=args.seed)
    if resuming:
        saved = json.loads((out / CONFIG_FILE).read_text(encoding="utf-8"))["model"]
        if saved != model_cfg.to_dict():
            diff = {k: (saved.get(k), v) for k, v in model_cfg.to_dict().items() if saved.get(k) != v}
            raise ValueError(f"--resume with a different model than the one in {out}: (saved, given) {diff}")
    train_ids, val_ids = encode_text(tokenizer, train_text), encode_text(tokenizer, val_text)
    model = init_lm(model_cfg, seed=args.seed)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        tokenizer.save(out)
        save_run_config(out, model_cfg, train_cfg, data=args.data, tokenizer=tokenizer.kind, world_size=world)
        if not resuming:
            r = evaluate_ppl(model, val_ids[: train_cfg.eval_tokens + 1], context=args.seq_len)
            print(f"{args.mixer}: {model.num_parameters():,} non-embedding parameters, "
                  f"{train_ids.numel():,} train tokens; val ppl at init {r['ppl']:.3f}")
    result = train_lm(model, train_cfg, train_tokens=train_ids, val_tokens=val_ids, out_dir=out,
                      resume=args.resume, progress=not args.no_progress)
    if rank == 0:
        atomic_write_json(out / "history.json", {"history": result.history, "evals": result.evals})
        save_loss_curve(result.history, result.evals, out / "loss.png", title=f"{args.mixer} on {args.data}")
        for e in result.evals:
            print(f"step {e['step']:>6}: val loss {e['val_loss']:.4f}  ppl {e['val_ppl']:.3f}  "
                  f"bits/token {e['val_bits_per_token']:.4f}")
        print(f"saved {out / 'checkpoint.pt'} and {out / 'loss.png'}")
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
    p = lsub.add_parser("train", help="train a language model", description="Train an LM; writes DIR.")
    p.add_argument("--mixer", default="kla", help="kla, gdn, attention or another paperlab.layers.MIXERS key")
    p.add_argument("--data", default="pydoc", help="pydoc (built in), tinyshakespeare or wikitext2")
    p.add_argument("--tokenizer", default="byte", choices=("byte", "char", "bpe"))
    p.add_argument("--bpe-vocab", type=int, default=1024, help="vocabulary size of the BPE tokenizer")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=16, help="global batch (split across processes)")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-layers", type=int, default=3)
    p.add_argument("--n-heads", type=int, default=2)
    p.add_argument("--mlp-ratio", type=float, default=4.0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--optimizer", default="adamw", help="adamw, or nora / rmnp / muon (paperlab.optim)")
    p.add_argument("--eval-every", type=int, default=50, help="validate and checkpoint every N steps")
    p.add_argument("--eval-tokens", type=int, default=16384, help="validation tokens per evaluation")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    p.add_argument("--resume", action="store_true", help="continue from DIR/checkpoint.pt")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--out", type=Path, required=True, help="run folder")
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
    e.add_argument("--batch-size", type=int, default=8)
    e.add_argument("--threads", type=int, default=0)
    e.add_argument("--no-progress", action="store_true")
    e.set_defaults(func=_eval, _parser=e)
    g = lsub.add_parser("generate", help="sample a continuation of a prompt")
    g.add_argument("dir", type=Path, help="run folder written by `paperlab lm train`")
    g.add_argument("--prompt", required=True)
    g.add_argument("--max-new-tokens", type=int, default=200)
    g.add_argument("--temperature", type=float, default=0.8, help="0 for greedy")
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--threads", type=int, default=0)
    g.add_argument("--no-progress", action="store_true")
    g.set_defaults(func=_generate, _parser=g)
    p.set_defaults(_parser=p)
