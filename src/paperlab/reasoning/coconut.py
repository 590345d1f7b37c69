"""Coconut-style latent reasoning (Hao et al. arXiv 2412.06769) on ``paperlab.models.LM``: curriculum, latent
forward with a KV cache, loss and batches.

Sequence: ``question \\n step_1 \\n ... step_n \\n ### answer <eos>``. Latent methods put ``\\n <bot>``,
k continuous thoughts and ``<eot>`` after the question; the input embedding of thought j is the last-layer
(post-final-norm) hidden state at the position before it, fed through the returned KV cache one position at a
time, gradients flowing through the chain. Stage s drops the first s steps and inserts s*c thoughts (all
steps dropped and S_max*c thoughts beyond S_max, with ``pad_latent_to_max``). Labels cover only the remaining
steps, the answer and ``<eos>``.

Methods: ``no_cot`` (answer directly), ``cot`` (all steps, no markers), ``coconut`` (staged curriculum),
``no_curriculum`` (final stage from step 0), ``no_thought`` (curriculum drops steps, inserts no thoughts
and, as Coconut's ``no_special_marker``, no ``<bot>``/``<eot>`` markers),
``pause`` (same curriculum, thoughts are the learned ``<pause>`` embedding, no hidden-state feedback).

Batching: prefixes are left-padded (the attention mixer counts RoPE positions over real tokens only); an
example with fewer thoughts than the batch maximum gets masked slots after its thoughts, which are identity
steps for the cache; suffixes are right-padded.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from paperlab._validate import check_choice, check_int, check_positive, check_probability
from paperlab.reasoning.methods import LANGUAGE_METHODS, LATENT_METHODS, METHODS
from paperlab.reasoning.prosqa import ProsQAExample
from paperlab.reasoning.tokenizer import WordTokenizer

__all__ = [
    "LATENT_METHODS",
    "METHODS",
    "Batch",
    "Curriculum",
    "Encoded",
    "collate",
    "encode_example",
    "frontier_inputs",
    "frontier_log_mass",
    "latent_forward",
    "latent_forward_naive",
    "make_batches",
    "reasoning_loss",
    "soft_thought",
    "stage_at",
    "thoughts_for_stage",
]

IGNORE = -100


@dataclass(frozen=True, kw_only=True)
class Curriculum:
    """Coconut's staged schedule.

    Args:
        c: thoughts per replaced step.
        max_stage: S_max, the last stage that still replaces steps one by one.
        steps_per_stage: optimizer steps per stage (Coconut: epochs_per_stage epochs).
        pad_latent_to_max: beyond S_max insert S_max*c thoughts for every example (else min(n, S_max)*c).
        uniform_prob: probability that an example gets a stage drawn uniformly from {0..n} instead.
    """

    c: int = 1
    max_stage: int = 4
    steps_per_stage: int = 300
    pad_latent_to_max: bool = True
    uniform_prob: float = 0.0

    def __post_init__(self) -> None:
        check_int("c", self.c, minimum=1)
        check_int("max_stage", self.max_stage, minimum=0)
        check_int("steps_per_stage", self.steps_per_stage, minimum=1)
        check_probability("uniform_prob", self.uniform_prob)

    @property
    def final_stage(self) -> int:
        """The stage used at evaluation (all steps replaced)."""
        return self.max_stage + 1


def stage_at(step: int, curriculum: Curriculum, *, method: str) -> int:
    """Stage of optimizer step ``step``: ``step // steps_per_stage`` capped at the final stage for curriculum
    methods; the final stage always for ``no_curriculum``; 0 for ``cot``/``no_cot``."""
    check_choice("method", method, METHODS)
    if method in LANGUAGE_METHODS:
        return 0
    if method == "no_curriculum":
        return curriculum.final_stage
    return min(step // curriculum.steps_per_stage, curriculum.final_stage)


def thoughts_for_stage(stage: int, n_steps: int, curriculum: Curriculum) -> tuple[int, int]:
    """(steps dropped, thoughts inserted) for an example with ``n_steps`` steps at ``stage``."""
    check_int("stage", stage, minimum=0)
    if stage <= curriculum.max_stage:
        return min(stage, n_steps), stage * curriculum.c
    dropped = n_steps
    if curriculum.pad_latent_to_max:
        return dropped, curriculum.max_stage * curriculum.c
    return dropped, min(n_steps, curriculum.max_stage) * curriculum.c


@dataclass(frozen=True)
class Encoded:
    """One training/eval sequence: ``prefix`` tokens, ``n_thoughts`` latent slots, ``suffix`` tokens.

    ``suffix[0]`` (``\\n`` or ``<eot>``) is input only; ``suffix[1:]`` are the labels. ``frontier[j]`` holds the
    token ids of the nodes at BFS distance j + 1 from the root, the valid content of the state read out before
    thought j + 1 (one entry per thought that stands for a reasoning step; none past the path's length).
    """

    prefix: tuple[int, ...]
    n_thoughts: int
    suffix: tuple[int, ...]
    frontier: tuple[tuple[int, ...], ...] = ()


def encode_example(ex: ProsQAExample, tok: WordTokenizer, *, method: str, stage: int,
                   curriculum: Curriculum, with_answer: bool = True) -> Encoded:
    """Tokenise ``ex`` for ``method`` at ``stage``; ``with_answer=False`` keeps only the suffix's first token."""
    check_choice("method", method, METHODS)
    q = tok.encode(ex.question)
    nl = tok.id("\n")
    if method in LANGUAGE_METHODS:
        prefix, n_thoughts, kept, start = q, 0, (ex.steps if method == "cot" else ()), nl
    elif method == "no_thought":  # Coconut's run.py: the curriculum drops steps, no thoughts and no markers
        dropped, _ = thoughts_for_stage(stage, len(ex.steps), curriculum)
        prefix, n_thoughts, kept, start = q, 0, ex.steps[dropped:], nl
    else:
        dropped, n_thoughts = thoughts_for_stage(stage, len(ex.steps), curriculum)
        prefix, kept, start = [*q, nl, tok.id("<bot>")], ex.steps[dropped:], tok.id("<eot>")
    suffix = [start]
    if with_answer:
        for s in kept:
            suffix += [*tok.encode(s), nl]
        suffix += [tok.id("###"), *tok.encode(ex.answer), tok.eos_id]
    frontier = tuple(tuple(tok.id(t) for t in layer) for layer in ex.frontier[:n_thoughts])
    return Encoded(tuple(prefix), n_thoughts, tuple(suffix), frontier)


@dataclass(frozen=True)
class Batch:
    """Collated ``Encoded`` sequences.

    Attributes:
        prefix_ids, prefix_mask: ``[B, P]`` left-padded.
        n_thoughts: ``[B]`` latent slots per example.
        suffix_ids, suffix_mask: ``[B, S]`` right-padded.
        labels: ``[B, S]`` next-token targets of the suffix positions (``-100`` where ignored).
        frontier: ``[B, K, F]`` token ids of each thought slot's valid frontier, ``-1``-padded (K = max thoughts).
    """

    prefix_ids: torch.Tensor
    prefix_mask: torch.Tensor
    n_thoughts: torch.Tensor
    suffix_ids: torch.Tensor
    suffix_mask: torch.Tensor
    labels: torch.Tensor
    frontier: torch.Tensor

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on ``device``."""
        return Batch(*(t.to(device) for t in (self.prefix_ids, self.prefix_mask, self.n_thoughts,
                                               self.suffix_ids, self.suffix_mask, self.labels, self.frontier)))


def collate(items: Sequence[Encoded], *, pad_id: int) -> Batch:
    """Pad a list of ``Encoded`` into a ``Batch`` (prefix left, suffix right)."""
    if not items:
        raise ValueError("collate needs at least one item")
    b, p, s = len(items), max(len(e.prefix) for e in items), max(len(e.suffix) for e in items)
    prefix = torch.full((b, p), pad_id, dtype=torch.long)
    pmask = torch.zeros(b, p, dtype=torch.bool)
    suffix = torch.full((b, s), pad_id, dtype=torch.long)
    smask = torch.zeros(b, s, dtype=torch.bool)
    labels = torch.full((b, s), IGNORE, dtype=torch.long)
    for i, e in enumerate(items):
        prefix[i, p - len(e.prefix):] = torch.tensor(e.prefix)
        pmask[i, p - len(e.prefix):] = True
        suffix[i, : len(e.suffix)] = torch.tensor(e.suffix)
        smask[i, : len(e.suffix)] = True
        labels[i, : len(e.suffix) - 1] = torch.tensor(e.suffix[1:], dtype=torch.long)
    n_thoughts = torch.tensor([e.n_thoughts for e in items], dtype=torch.long)
    k = int(n_thoughts.max())
    f = max([1, *(len(layer) for e in items for layer in e.frontier)])
    frontier = torch.full((b, k, f), -1, dtype=torch.long)
    for i, e in enumerate(items):
        for j, layer in enumerate(e.frontier):
            frontier[i, j, : len(layer)] = torch.tensor(layer, dtype=torch.long)
    return Batch(prefix, pmask, n_thoughts, suffix, smask, labels, frontier)


NoiseFn = Callable[[torch.Tensor, int], torch.Tensor]


def soft_thought(model, h: torch.Tensor, tau: float) -> torch.Tensor:
    """The "soft thought" of hidden states ``h [..., D]``: softmax(E h / tau)^T E, the embedding mixture the
    logit lens reads from ``h`` at temperature ``tau`` (E the tied embedding). ``[..., D]``."""
    return torch.softmax(model.logits(h) / tau, -1) @ model.embedding.weight


def frontier_inputs(model, frontier: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forced thought inputs from ``frontier [B, K, F]`` (token ids, ``-1``-padded): the mean embedding of
    each slot's valid frontier ``[B, K, D]`` (on graphs the uniform superposition of the nodes at that distance,
    on arith_chain the right value's embedding) and which slots have a frontier ``[B, K]`` (bool)."""
    valid = frontier >= 0
    emb = model.embedding.weight[frontier.clamp_min(0)] * valid[..., None]
    return emb.sum(-2) / valid.sum(-1, keepdim=True).clamp_min(1), valid.any(-1)


def _teach(x: torch.Tensor, taught: tuple[torch.Tensor, torch.Tensor] | None, j: int) -> torch.Tensor:
    """Thought j's input ``x [B, 1, D]``, replaced by the teacher-forced one where slot j has a frontier."""
    if taught is None or j >= taught[0].shape[1]:
        return x
    return torch.where(taught[1][:, j, None, None], taught[0][:, j:j + 1], x)


def latent_forward(model, batch: Batch, *, feedback: bool = True, pause_id: int | None = None,
                   thought_noise: NoiseFn | None = None, soft_tau: float | None = None,
                   teacher_thoughts: bool = False):
    """KV-cached latent pass: prefix, one single-position pass per thought, then the suffix.

    Args:
        model: a ``paperlab.models.LM`` (any mixer with a state).
        batch: from ``collate``.
        feedback: thought j's input is the hidden state before it (Coconut); False feeds the ``<pause>``
            embedding (``pause_id`` required) instead.
        thought_noise: optional ``(x [B, 1, D], j) -> x'`` applied to each thought's input (noise injection).
        soft_tau: feed ``soft_thought(h, soft_tau)`` instead of the hidden state h itself (needs ``feedback``).
        teacher_thoughts: feed ``frontier_inputs`` of ``batch.frontier`` in every slot that has a frontier
            (teacher forcing, for training soft thoughts; the readouts are unchanged); before ``thought_noise``.
    Returns:
        ``(h_suffix [B, S, D], thoughts [B, K, D], state)``; ``thoughts[:, j]`` is the state read out before
        thought j+1 (the first is the hidden state at ``<bot>``), from which its input is made; for Coconut
        without noise it is that input. K = max thoughts in the batch.
    """
    h, state = model.hidden_states(batch.prefix_ids, attention_mask=batch.prefix_mask)
    last, b = h[:, -1:], h.shape[0]
    k_max = int(batch.n_thoughts.max()) if batch.n_thoughts.numel() else 0
    pause = _pause_input(model, b, feedback=feedback, pause_id=pause_id, soft_tau=soft_tau, device=h.device)
    taught = frontier_inputs(model, batch.frontier) if teacher_thoughts else None
    read = []
    for j in range(k_max):
        read.append(last)
        x = pause if pause is not None else (last if soft_tau is None else soft_thought(model, last, soft_tau))
        x = _teach(x, taught, j)
        if thought_noise is not None:
            x = thought_noise(x, j)
        active = (batch.n_thoughts > j)[:, None]
        last, state = model.hidden_states(inputs_embeds=x, state=state, attention_mask=active)
    hs, state = model.hidden_states(batch.suffix_ids, state=state, attention_mask=batch.suffix_mask)
    thoughts = torch.cat(read, 1) if read else h.new_zeros(b, 0, h.shape[-1])
    return hs, thoughts, state


def _pause_input(model, b: int, *, feedback: bool, pause_id: int | None, soft_tau: float | None, device):
    """The ``<pause>`` embedding ``[B, 1, D]`` fed as every thought when ``feedback`` is off, else None."""
    if soft_tau is not None:
        check_positive("soft_tau", soft_tau)
        if not feedback:
            raise ValueError("soft_tau mixes the embeddings the hidden state points to: it needs feedback=True")
    if feedback:
        return None
    if pause_id is None:
        raise ValueError("feedback=False (pause thoughts) needs pause_id")
    return model.embed(torch.full((b, 1), pause_id, dtype=torch.long, device=device))


def latent_forward_naive(model, batch: Batch, *, feedback: bool = True, pause_id: int | None = None,
                         soft_tau: float | None = None, teacher_thoughts: bool = False):
    """Reference for ``latent_forward``: recompute the whole sequence from scratch for every thought.

    Returns ``(h_suffix [B, S, D], thoughts [B, K, D])``; about K times slower (tests only).
    """
    emb_prefix, b = model.embed(batch.prefix_ids), batch.prefix_ids.shape[0]
    k_max = int(batch.n_thoughts.max())
    slots = torch.arange(k_max)[None, :] < batch.n_thoughts[:, None]  # [B, K]
    pause = _pause_input(model, b, feedback=feedback, pause_id=pause_id, soft_tau=soft_tau, device=emb_prefix.device)
    taught = frontier_inputs(model, batch.frontier) if teacher_thoughts else None
    seq, mask, read = emb_prefix, batch.prefix_mask, []
    for j in range(k_max):
        h, _ = model.hidden_states(inputs_embeds=seq, attention_mask=mask)
        read.append(h[:, -1:])
        x = pause if pause is not None else (h[:, -1:] if soft_tau is None else soft_thought(model, h[:, -1:],
                                                                                             soft_tau))
        x = _teach(x, taught, j)
        seq, mask = torch.cat((seq, x), 1), torch.cat((mask, slots[:, j:j + 1]), 1)
    full = torch.cat((seq, model.embed(batch.suffix_ids)), 1)
    h, _ = model.hidden_states(inputs_embeds=full, attention_mask=torch.cat((mask, batch.suffix_mask), 1))
    thoughts = torch.cat(read, 1) if read else emb_prefix.new_zeros(b, 0, emb_prefix.shape[-1])
    return h[:, -batch.suffix_ids.shape[1]:], thoughts


def frontier_log_mass(logits: torch.Tensor, frontier: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """log of the probability the readout ``logits [B, K, V]`` puts on each slot's valid frontier
    (``frontier [B, K, F]``, ``-1``-padded); returns ``(log_mass [B, K], supervised [B, K] bool)``, the mass
    being 0 (log -inf is replaced by 0) where a slot has no frontier."""
    logp = torch.log_softmax(logits, -1)
    valid = frontier >= 0
    picked = logp.gather(-1, frontier.clamp_min(0)).masked_fill(~valid, float("-inf"))
    supervised = valid.any(-1)
    return torch.logsumexp(picked, -1).masked_fill(~supervised, 0.0), supervised


def reasoning_loss(model, batch: Batch, *, method: str, pause_id: int | None = None,
                   thought_entropy: float = 0.0, frontier_weight: float = 0.0, soft_tau: float | None = None,
                   teacher_thoughts: bool = False):
    """Cross-entropy on the suffix labels (remaining steps, answer, ``<eos>``); returns ``(loss, metrics)``.

    ``frontier_weight`` adds that weight x the mean over supervised slots of -log(mass of the thought's readout
    on its valid frontier): at stage k the state before thought j (j <= k) must point to the nodes at distance
    j, so the thoughts carry the breadth-first search (0: Coconut's original loss; under ``pause`` the supervised
    state is the hidden state at each slot, the control for whether feeding it back matters).
    ``metrics["frontier_mass"]`` reports that mass either way. ``thought_entropy`` (lambda_H, for our extension
    experiment X6): subtracts lambda_H x the mean entropy of the thoughts' logit-lens distributions (tied head on
    each readout), so lambda_H > 0 is an entropy bonus (lower Symbolic Index) and lambda_H < 0 a penalty.
    ``soft_tau``: thoughts are fed as soft thoughts; ``teacher_thoughts``: each slot with a frontier is fed its
    ``frontier_inputs`` instead (see ``latent_forward``)."""
    feedback = method != "pause"
    hs, thoughts, _ = latent_forward(model, batch, feedback=feedback, pause_id=pause_id, soft_tau=soft_tau,
                                     teacher_thoughts=teacher_thoughts)
    logits = model.logits(hs)
    loss = F.cross_entropy(logits.flatten(0, 1), batch.labels.flatten(), ignore_index=IGNORE)
    metrics = {"thoughts": float(batch.n_thoughts.float().mean())}
    if thoughts.shape[1] and batch.frontier.shape[1]:
        log_mass, sup = frontier_log_mass(model.logits(thoughts), batch.frontier[:, : thoughts.shape[1]])
        if bool(sup.any()):
            metrics["frontier_mass"] = float(log_mass[sup].detach().exp().mean())
            if frontier_weight:
                loss = loss - frontier_weight * log_mass[sup].mean()
    if thought_entropy and thoughts.shape[1]:
        logp = torch.log_softmax(model.logits(thoughts), -1)  # [B, K, V]
        ent = -(logp.exp() * logp).sum(-1)
        real = (torch.arange(thoughts.shape[1], device=ent.device)[None, :] < batch.n_thoughts[:, None]).float()
        mean_ent = (ent * real).sum() / real.sum().clamp_min(1.0)
        loss = loss - thought_entropy * mean_ent
        metrics["thought_entropy"] = float(mean_ent.detach())
    with torch.no_grad():
        keep = batch.labels != IGNORE
        metrics["token_acc"] = float((logits.argmax(-1) == batch.labels)[keep].float().mean())
    return loss, metrics


def make_batches(examples: Sequence[ProsQAExample], tok: WordTokenizer, *, method: str, curriculum: Curriculum,
                 batch_size: int, seed: int, step_offset: int = 0, short_first: int = 0,
                 device: torch.device | str = "cpu") -> Callable[[int], Batch]:
    """A ``step -> Batch`` source for ``paperlab.train.train``: examples drawn with a per-step seeded RNG
    (exact resume), stage from ``stage_at(step + step_offset)``, ``uniform_prob`` mixing per example.

    ``short_first``: a difficulty curriculum over path length; the first ``short_first`` steps (counted with
    ``step_offset``) draw only examples with the fewest reasoning steps in ``examples``."""
    check_choice("method", method, METHODS)
    check_int("batch_size", batch_size, minimum=1)
    check_int("short_first", short_first, minimum=0)
    if not examples:
        raise ValueError("make_batches needs at least one training example")
    fewest = min(len(ex.steps) for ex in examples)
    short = [ex for ex in examples if len(ex.steps) == fewest]

    def batch_at(step: int) -> Batch:
        rng = random.Random(seed * 1_000_003 + step + step_offset)
        stage = stage_at(step + step_offset, curriculum, method=method)
        pool = short if step + step_offset < short_first else examples
        items = []
        for ex in (pool[rng.randrange(len(pool))] for _ in range(batch_size)):
            s = stage
            if method in ("coconut", "no_thought", "pause") and rng.random() < curriculum.uniform_prob:
                s = rng.randint(0, len(ex.steps))
            items.append(encode_example(ex, tok, method=method, stage=s, curriculum=curriculum))
        return collate(items, pad_id=tok.pad_id).to(device)

    return batch_at
