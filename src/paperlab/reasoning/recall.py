"""Edge-recall warm-up: a dense in-context recall task on the training graphs, trained before a reasoner's method.

Coconut starts from GPT-2, whose pretraining already gives it heads that copy from context. A model trained from
scratch on symbolic ProsQA gets one or two informative labels per question (the steps), and in our runs it stayed
near chance for 4-6k steps at batch 32 before any lookup circuit formed. The warm-up shows the model the same
graphs with every edge asked once: ``a b , c d , ... query`` (the question's edge list up to its ``query``
marker) followed by the edges again as ``(source, child)`` pairs in a random order, each child a label, so a
sequence carries as many lookups as edges (MQAR's associative recall in the graph vocabulary). It teaches
lookup, not search: which child leads to the target is left to the method's own training. Every method of a seed
starts from the same warmed-up weights.

A node with several children makes its pairs ambiguous, so even a perfect recaller's argmax matches the listed
child only part of the time; :func:`recall_accuracy` counts any child of the source as correct.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from paperlab._validate import check_int, check_positive
from paperlab.reasoning.tokenizer import WordTokenizer
from paperlab.train import train, warmup_cosine

__all__ = ["recall_accuracy", "recall_batches", "recall_loss", "recall_sequence", "warm_up_recall"]

IGNORE = -100


def _check_symbolic(ex) -> None:
    if not (hasattr(ex, "names") and hasattr(ex, "edges")):
        raise ValueError(f"edge recall needs symbolic graph examples (format='symbolic'), got {type(ex).__name__}")


def recall_sequence(ex, tok: WordTokenizer, *, rng: random.Random) -> tuple[list[int], list[int]]:
    """``(ids, targets)`` of one recall sequence for the symbolic example ``ex``: the question's tokens up to
    and including ``query``, then every edge as ``source child`` in an order drawn from ``rng``; ``targets[t]``
    is the token at ``t + 1`` where that token is a child, else -100 (next-token targets, same length)."""
    _check_symbolic(ex)
    q = tok.encode(ex.question)
    ids = q[: q.index(tok.id("query")) + 1]
    pairs = list(ex.edges)
    rng.shuffle(pairs)
    targets = [IGNORE] * len(ids)
    for a, b in pairs:
        ids += [tok.id(ex.names[a]), tok.id(ex.names[b])]
        targets += [tok.id(ex.names[b]), IGNORE]
    return ids, targets


def _pad(rows: list[list[int]], fill: int) -> torch.Tensor:
    """``rows`` right-padded with ``fill`` into one ``[len(rows), longest]`` long tensor."""
    out = torch.full((len(rows), max(len(r) for r in rows)), fill, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def recall_batches(examples: Sequence, tok: WordTokenizer, *, batch_size: int, seed: int,
                   device: torch.device | str = "cpu") -> Callable[[int], tuple[torch.Tensor, torch.Tensor]]:
    """A ``step -> (ids [B, T], targets [B, T])`` source (right-padded; the same seed and step give the same
    batch, so a resumed run sees the same data)."""
    check_int("batch_size", batch_size, minimum=1)
    if not examples:
        raise ValueError("recall_batches needs at least one example")

    def batch_at(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        rng = random.Random(seed * 1_000_003 + step)
        seqs = [recall_sequence(examples[rng.randrange(len(examples))], tok, rng=rng) for _ in range(batch_size)]
        return _pad([s for s, _ in seqs], tok.pad_id).to(device), _pad([t for _, t in seqs], IGNORE).to(device)

    return batch_at


def recall_loss(model, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
    """Cross-entropy on the children of a recall batch (right padding needs no mask under causal attention);
    ``metrics["recall_acc"]``: argmax equals the listed child."""
    ids, targets = batch
    logits, _ = model(ids)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
    keep = targets != IGNORE
    return loss, {"recall_acc": float((logits.argmax(-1) == targets)[keep].float().mean())}


@torch.no_grad()
def recall_accuracy(model, examples: Sequence, tok: WordTokenizer, *, seed: int = 0,
                    batch_size: int = 64) -> float:
    """Share of recall queries of ``examples`` whose argmax is *a* child of the queried source."""
    if not examples:
        raise ValueError("recall_accuracy needs at least one example")
    dev = next(model.parameters()).device
    hits = total = 0
    rng = random.Random(seed)
    for lo in range(0, len(examples), batch_size):
        chunk = examples[lo: lo + batch_size]
        seqs = [recall_sequence(ex, tok, rng=rng) for ex in chunk]
        pred = model(_pad([s for s, _ in seqs], tok.pad_id).to(dev))[0].argmax(-1).cpu()
        for i, (ex, (s, t)) in enumerate(zip(chunk, seqs, strict=True)):
            kids: dict[int, set[int]] = {}
            for a, b in ex.edges:
                kids.setdefault(tok.id(ex.names[a]), set()).add(tok.id(ex.names[b]))
            for pos, target in enumerate(t):
                if target != IGNORE:
                    hits += int(pred[i, pos]) in kids[s[pos]]
                    total += 1
    return hits / total


def warm_up_recall(model, examples: Sequence, tok: WordTokenizer, *, steps: int, lr: float, batch_size: int,
                   seed: int, warmup: int = 100, weight_decay: float = 0.01, grad_clip: float = 1.0,
                   device: torch.device | str = "cpu") -> list[dict[str, float]]:
    """Train ``model`` in place on edge recall over ``examples`` for ``steps`` AdamW steps (linear warm-up,
    cosine decay); returns the loss history."""
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    if not examples:
        raise ValueError("warm_up_recall needs at least one example")
    _check_symbolic(examples[0])
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = warmup_cosine(opt, steps=steps, warmup=min(warmup, steps - 1))
    batches = recall_batches(examples, tok, batch_size=batch_size, seed=seed, device=device)
    res = train(model, recall_loss, batches, opt, steps=steps, scheduler=sched, grad_clip=grad_clip,
                progress=False, desc="edge recall")
    return res.history
