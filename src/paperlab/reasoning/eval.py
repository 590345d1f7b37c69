"""Evaluation of ProsQA reasoners: greedy answers (optionally with noise), Symbolic Index probes per step.

Accuracy is Coconut's: greedy decoding after the question (and ``<bot>`` + k thoughts + ``<eot>`` for latent
methods), exact match of the tokens between ``###`` and ``<eos>`` with the gold answer.

Noise (App. A.7 of arXiv 2602.01148): for explicit decoding, N(0, (sigma * rms(h))^2 I) is added to the final
hidden state before the head at every generated token; for latent methods, to every thought's input. sigma is
relative to the perturbed vector's RMS, since thoughts and token states have different norms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from paperlab._validate import check_choice
from paperlab.reasoning.coconut import Curriculum, Encoded, collate, encode_example, latent_forward
from paperlab.reasoning.methods import LANGUAGE_METHODS
from paperlab.reasoning.probe import kl_to_uniform, noise_curve, symbolic_index
from paperlab.reasoning.prosqa import ProsQAExample, bfs_distances
from paperlab.reasoning.tokenizer import WordTokenizer

__all__ = ["NOISE_SITES", "THOUGHT_ABLATIONS", "AnswerStats", "StepProbe", "answer_accuracy", "cot_step_probes",
           "latent_step_probes", "predicted_noise_ratio", "switch_step_probes"]


@dataclass(frozen=True)
class AnswerStats:
    """Exact-match accuracy; choice accuracy (the generated answer names the target concept, whatever else it
    says; chance 1/2 for a model that answers with one of the two options); mean generated tokens (excluding
    thoughts); thoughts per example; per-example exact-match hits."""

    accuracy: float
    choice_accuracy: float
    generated_tokens: float
    thoughts: float
    correct: tuple[bool, ...]


def _noise(x: torch.Tensor, sigma: float, gen: torch.Generator | None) -> torch.Tensor:
    if sigma == 0:
        return x
    rms = x.pow(2).mean(-1, keepdim=True).sqrt()
    return x + sigma * rms * torch.randn(x.shape, generator=gen, dtype=x.dtype).to(x.device)


THOUGHT_ABLATIONS = ("intact", "zeroed", "shuffled", "pause")
NOISE_SITES = ("head", "input")


def _node_tokens(exs, tok: WordTokenizer, device) -> torch.Tensor:
    """``[B, V]`` bool: the tokens that can be a step's content in each example (its step options)."""
    mask = torch.zeros(len(exs), len(tok), dtype=torch.bool, device=device)
    for i, ex in enumerate(exs):
        ids = [tok.id(o) for opts in ex.step_options for o in opts]
        mask[i, ids] = True
    return mask


def _thought_hook(model, batch, tok, *, method: str, thoughts: str, sigma: float, gen, soft_tau=None):
    """The ``thought_noise`` hook of ``latent_forward`` for a noise level and an ablation of the thoughts:
    ``zeroed`` feeds zero vectors, ``pause`` the ``<pause>`` embedding, ``shuffled`` the intact thoughts of
    the next question in the batch (rolled by one, so every question gets another's)."""
    if thoughts == "intact":
        return (lambda x, _j: _noise(x, sigma, gen)) if sigma else None
    if thoughts == "zeroed":
        return lambda x, _j: torch.zeros_like(x)
    if thoughts == "pause":
        pause = model.embed(torch.full((1, 1), tok.id("<pause>"), dtype=torch.long, device=batch.prefix_ids.device))
        return lambda x, _j: pause.expand_as(x)
    fed: list[torch.Tensor] = []

    def record(x, _j):  # a pass-through hook: the intact inputs, as fed
        fed.append(x)
        return x

    latent_forward(model, batch, feedback=method != "pause", pause_id=tok.id("<pause>"), soft_tau=soft_tau,
                   thought_noise=record)
    other = torch.cat(fed, 1).roll(1, dims=0)
    return lambda x, j: other[:, j:j + 1]


@torch.no_grad()
def _decode_batch(model, exs, tok, *, method, curriculum, max_new_tokens, sigma, gen, thoughts="intact",
                  soft_tau=None, noise_at="head"):
    items = [encode_example(e, tok, method=method, stage=curriculum.final_stage, curriculum=curriculum,
                            with_answer=False) for e in exs]
    dev = next(model.parameters()).device
    batch = collate(items, pad_id=tok.pad_id).to(dev)
    latent = method not in LANGUAGE_METHODS
    hook = _thought_hook(model, batch, tok, method=method, thoughts=thoughts, sigma=sigma, gen=gen,
                         soft_tau=soft_tau) if latent else None
    h, _, state = latent_forward(model, batch, feedback=method != "pause", pause_id=tok.id("<pause>"),
                                 thought_noise=hook, soft_tau=soft_tau)
    b = len(exs)
    done = torch.zeros(b, dtype=torch.bool, device=dev)
    out = torch.full((b, max_new_tokens), tok.pad_id, dtype=torch.long, device=dev)
    last = h[:, -1]
    at_input = bool(sigma) and not latent and noise_at == "input"
    nodes = _node_tokens(exs, tok, dev) if at_input else None
    for t in range(max_new_tokens):
        hh = last if latent or not sigma or at_input else _noise(last, sigma, gen)
        nxt = model.logits(hh).argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, tok.pad_id), nxt)
        out[:, t] = nxt
        done |= nxt == tok.eos_id
        if bool(done.all()):
            break
        x = model.embed(nxt[:, None])
        if nodes is not None:  # noise where CoT feeds a step's content back, the site comparable to a thought
            x = torch.where(nodes.gather(1, nxt[:, None])[..., None], _noise(x, sigma, gen), x)
        h, state = model.hidden_states(inputs_embeds=x, state=state, attention_mask=(~done)[:, None])
        last = h[:, -1]
    return out.cpu(), batch.n_thoughts.cpu()


def answer_accuracy(model, examples: Sequence[ProsQAExample], tok: WordTokenizer, *, method: str,
                    curriculum: Curriculum, batch_size: int = 64, max_new_tokens: int = 64, sigma: float = 0.0,
                    seed: int = 0, thoughts: str = "intact", soft_tau: float | None = None,
                    noise_at: str = "head") -> AnswerStats:
    """Greedy exact-match accuracy on ``examples`` (noise level ``sigma`` relative to the state RMS).

    Where explicit decoding gets its noise (``noise_at``): ``"head"``, the final hidden state before the head at
    every generated token (App. A.7's decision state), or ``"input"``, the input embedding of every generated
    token that names a step's content (a node, a value), the site comparable to a continuous thought's input.
    Latent methods always get it on every thought's input.

    ``thoughts`` ablates a latent method's continuous thoughts (one of ``THOUGHT_ABLATIONS``: ``zeroed``,
    ``shuffled`` across the questions of a batch, ``pause``-embedding replaced); a model that uses its thoughts
    loses accuracy under each. Language methods have no thoughts: only ``intact`` applies to them.
    ``soft_tau``: the thoughts are fed as soft thoughts (``latent_forward``), as the model was trained.
    """
    if not examples:
        raise ValueError("answer_accuracy needs at least one example")
    check_choice("thoughts", thoughts, THOUGHT_ABLATIONS)
    check_choice("noise_at", noise_at, NOISE_SITES)
    if thoughts != "intact" and method in LANGUAGE_METHODS:
        raise ValueError(f"thoughts={thoughts!r} ablates continuous thoughts; method {method!r} has none")
    if thoughts != "intact" and sigma:
        raise ValueError(f"thoughts={thoughts!r} replaces the thoughts, so noise sigma={sigma} has nothing to act on")
    gen = torch.Generator().manual_seed(seed)
    sep, eos = tok.id("###"), tok.eos_id
    was_training = model.training
    model.eval()
    correct, chose, n_gen, n_th = [], 0, 0, 0
    for i in range(0, len(examples), batch_size):
        chunk = examples[i:i + batch_size]
        out, n_thoughts = _decode_batch(model, chunk, tok, method=method, curriculum=curriculum,
                                        max_new_tokens=max_new_tokens, sigma=sigma, gen=gen, thoughts=thoughts,
                                        soft_tau=soft_tau, noise_at=noise_at)
        n_th += int(n_thoughts.sum())
        for ex, row in zip(chunk, out.tolist(), strict=True):
            row = row[: row.index(eos) + 1] if eos in row else row
            n_gen += len(row)
            answer = row[len(row) - 1 - row[::-1].index(sep) + 1:] if sep in row else []
            gold = tok.encode(ex.answer)
            correct.append(answer == [*gold, eos])
            at = gold.index(tok.id(ex.answer_token))  # where the answer names its node (3 in English)
            chose += len(answer) > at and answer[at] == gold[at]
    model.train(was_training)
    n = len(examples)
    return AnswerStats(sum(correct) / n, chose / n, n_gen / n, n_th / n, tuple(correct))


@dataclass(frozen=True)
class StepProbe:
    """One probe reading: reasoning step k (1-based), I_S over the full vocabulary, over the valid options
    (renormalised), with top-p 0.95, KL(uniform || p) over the valid options, their number B, and the
    probability mass on them (the restricted I_S describes the readout only where this mass is large)."""

    step: int
    i_s_full: float
    i_s_valid: float
    i_s_top_p: float
    kl_valid: float
    n_valid: int
    mass_valid: float


def _probe(probs: torch.Tensor, step: int, valid: list[int]) -> StepProbe:
    valid = list(dict.fromkeys(valid))  # one option per node: a repeated edge must not count its child twice
    return StepProbe(step, float(symbolic_index(probs)), float(symbolic_index(probs, candidates=valid)),
                     float(symbolic_index(probs, top_p=0.95)), float(kl_to_uniform(probs, candidates=valid)),
                     len(valid), float(probs[valid].sum()))


@torch.no_grad()
def cot_step_probes(model, examples: Sequence[ProsQAExample], tok: WordTokenizer) -> list[StepProbe]:
    """Teacher-forced gold CoT; at step k, the distribution predicting the token that names its node (the
    step's last token among ``step_options[k - 1]``: "Y" of "Every X is a Y ." or the one token of a symbolic
    step), valid options ``step_options[k - 1]`` (the children of the node before, or the single value)."""
    cur = Curriculum()
    out = []
    for ex in examples:
        enc = encode_example(ex, tok, method="cot", stage=0, curriculum=cur)
        ids = torch.tensor([*enc.prefix, *enc.suffix], device=next(model.parameters()).device)[None]
        probs = torch.softmax(model(ids)[0][0].double(), -1).cpu()
        pos = len(enc.prefix) + 1  # ids index of step 1's first token (after the newline)
        for k, (step, options) in enumerate(zip(ex.steps, ex.step_options, strict=True), start=1):
            words, valid = tok.encode(step), [tok.id(o) for o in options]
            at = pos + max(i for i, w in enumerate(words) if w in valid)
            out.append(_probe(probs[at - 1], k, valid))
            pos += len(words) + 1
    return out


@torch.no_grad()
def latent_step_probes(model, examples: Sequence[ProsQAExample], tok: WordTokenizer, *, method: str,
                       curriculum: Curriculum, soft_tau: float | None = None) -> list[StepProbe]:
    """Logit lens on the state read out before each continuous thought (tied head on the post-norm state, the
    readout the frontier supervision trains); thought k's valid options are the nodes at BFS distance k from
    the root (the frontier a breadth-first reasoner holds), for k up to the path's length. With ``soft_tau``
    the probe reads the distribution the soft thought mixes, softmax(E h / soft_tau)."""
    items = [encode_example(e, tok, method=method, stage=curriculum.final_stage, curriculum=curriculum,
                            with_answer=False) for e in examples]
    batch = collate(items, pad_id=tok.pad_id).to(next(model.parameters()).device)
    _, thoughts, _ = latent_forward(model, batch, feedback=method != "pause", pause_id=tok.id("<pause>"),
                                    soft_tau=soft_tau)
    probs = torch.softmax(model.logits(thoughts).double() / (soft_tau or 1.0), -1).cpu()  # [B, K, V]
    out = []
    for i, ex in enumerate(examples):
        for k, layer in enumerate(ex.frontier[: int(batch.n_thoughts[i])], start=1):
            if layer:
                out.append(_probe(probs[i, k - 1], k, [tok.id(t) for t in layer]))
    return out


@torch.no_grad()
def switch_step_probes(model, examples: Sequence[ProsQAExample], tok: WordTokenizer, *, method: str,
                       curriculum: Curriculum) -> list[StepProbe]:
    """Language-switch probe: after k thoughts, force ``<eot> Every`` and read the next-token distribution (the
    concept that step k+1 starts from, a node at BFS distance k); valid options are the nodes at distance k.
    English-format questions only (the probe forces the word "Every")."""
    if "Every" not in tok:
        raise ValueError("switch_step_probes forces the English word 'Every': it needs English-format questions "
                         "and the ProsQA tokenizer; probe symbolic thoughts with latent_step_probes")
    k_max = thoughts_at_final(curriculum)
    dev = next(model.parameters()).device
    every, eot = tok.id("Every"), tok.id("<eot>")
    out = []
    for k in range(1, k_max + 1):
        items = [Encoded(encode_example(e, tok, method=method, stage=0, curriculum=curriculum).prefix, k,
                         (eot, every)) for e in examples]
        batch = collate(items, pad_id=tok.pad_id).to(dev)
        hs, _, _ = latent_forward(model, batch, feedback=method != "pause", pause_id=tok.id("<pause>"))
        probs = torch.softmax(model.logits(hs[:, -1]).double(), -1).cpu()
        for i, ex in enumerate(examples):
            dist = bfs_distances(ex.children(), ex.root)
            valid = [tok.id(ex.idx_to_symbol[v]) for v, d in dist.items() if d == k]
            if valid:
                out.append(_probe(probs[i], k, valid))
    return out


def thoughts_at_final(curriculum: Curriculum) -> int:
    """Thoughts inserted at the final stage when all steps are replaced (S_max * c with padding)."""
    return curriculum.max_stage * curriculum.c


@torch.no_grad()
def predicted_noise_ratio(model, examples: Sequence[ProsQAExample], tok: WordTokenizer, sigmas: Sequence[float],
                          *, method: str = "cot") -> list[float]:
    """Per-example-margin prediction of A(sigma) for explicit decoding with noise before the head.

    For each example answered correctly without noise, every greedy token t has a margin l_(1) - l_(2) and
    sqrt(C_t) = rms(h_t) ||w_(1) - w_(2)|| (noise is sigma * rms(h) * N(0, I)); the two-option approximation of
    App. A.7 (reconstructed statement) gives P(no flip) = Phi(margin_t / (sqrt(C_t) sigma)), and the example
    survives if no token flips: A(sigma) = mean_i prod_t Phi(...). Returns one value per sigma (NaN if no
    example is correct without noise).
    """

    if method not in LANGUAGE_METHODS:
        raise ValueError(f"predicted_noise_ratio covers explicit decoding (cot, no_cot), got method={method!r}")
    cur = Curriculum()
    stats = answer_accuracy(model, examples, tok, method=method, curriculum=cur)
    dev = next(model.parameters()).device
    w = model.lm_head.weight
    per_example = []
    for i in range(0, len(examples), 64):
        chunk = [e for e, ok in zip(examples[i:i + 64], stats.correct[i:i + 64], strict=True) if ok]
        if not chunk:
            continue
        out, _ = _decode_batch(model, chunk, tok, method=method, curriculum=cur, max_new_tokens=64, sigma=0.0,
                               gen=None)
        for ex, row in zip(chunk, out.tolist(), strict=True):
            per_example.append(_survival(model, w, ex, row, tok, method, cur, sigmas, dev))
    if not per_example:
        return [float("nan")] * len(sigmas)
    return torch.stack(per_example).mean(0).tolist()


def _survival(model, w, ex, row, tok, method, cur, sigmas, dev) -> torch.Tensor:
    """prod_t Phi(margin_t / (sqrt(C_t) sigma)) over the greedy tokens ``row`` of one example. ``[S]``."""
    row = row[: row.index(tok.eos_id) + 1] if tok.eos_id in row else row
    enc = encode_example(ex, tok, method=method, stage=0, curriculum=cur, with_answer=False)
    ids = torch.tensor([*enc.prefix, *enc.suffix, *row], device=dev)[None]
    h, _ = model.hidden_states(ids)
    h = h[0, len(enc.prefix):-1]  # the states that predicted the generated tokens
    top = model.logits(h).topk(2, -1)
    margin = top.values[:, 0] - top.values[:, 1]
    scale = h.pow(2).mean(-1).sqrt() * (w[top.indices[:, 0]] - w[top.indices[:, 1]]).norm(dim=-1)
    per_token = [noise_curve(sigmas, margin=m, scale=c) for m, c in zip(margin.tolist(), scale.tolist(), strict=True)]
    return torch.stack(per_token).prod(0)
