"""Multi-query associative recall (MQAR): seeded, pure generators in two flavours.

An example is a sequence of ``P`` key-value pairs ``k1 v1 k2 v2 ...`` followed by a region in which every key
is asked once: at a query position the input token is the key and the label is its value (next-token
prediction, so the model must emit the value right after seeing the key again). Every other position is
random filler with label ``IGNORE_INDEX`` (labels exist only at query positions).

Two flavours:

``style="zoology"`` (Arora et al., zoology ``multiquery_ar``): keys from ``[1, V/2)`` and values from
``[V/2, V)``, both sampled *without* replacement within an example; the query for a key sits at offset
``2 * gap`` into the query region, with gaps drawn without replacement from the power law
``p(gap) ∝ gap^(power_a - 1)`` (most queries come soon after the pairs); filler is uniform over the full
vocabulary.

``style="kla"`` (per the KLA authors' code for arXiv 2605.08587; reconstruction): keys from ``[0, V/2)`` and values from
``[V/2, V)`` sampled *with* replacement (so two pairs may share a key, making those queries ambiguous, as in
their code); pairs first; uniform full-vocabulary filler; near-uniform query placement, which we implement as
one query per equal-width bin of the query region at a uniform offset inside the bin, the pairs asked in a
random order.

Slice metadata travels with every example: ``num_pairs`` and ``seq_lens`` per example and the query
``distances`` (query position minus the position of the queried key) at query positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from paperlab._validate import check_choice, check_int, check_positive

__all__ = ["FILLERS", "IGNORE_INDEX", "MQAR_STYLES", "MQARData", "key_reoccurs", "mqar"]

IGNORE_INDEX = -100
MQAR_STYLES = ("zoology", "kla")
FILLERS = ("uniform", "values")


@dataclass(frozen=True)
class MQARData:
    """A batch of MQAR examples with slice metadata.

    Attributes:
        inputs: ``[N, T]`` long token ids.
        labels: ``[N, T]`` long; the queried value at query positions, ``IGNORE_INDEX`` elsewhere.
        distances: ``[N, T]`` long; query position minus queried-key position at query positions, -1 elsewhere.
        num_pairs: ``[N]`` long, key-value pairs per example.
        seq_lens: ``[N]`` long, sequence length per example.
        style: the generator flavour (``"zoology"`` or ``"kla"``).
    """

    inputs: torch.Tensor
    labels: torch.Tensor
    distances: torch.Tensor
    num_pairs: torch.Tensor
    seq_lens: torch.Tensor
    style: str

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def query_mask(self) -> torch.Tensor:
        """``[N, T]`` bool, True at query positions."""
        return self.labels != IGNORE_INDEX

    def subset(self, index: torch.Tensor | slice) -> MQARData:
        """The examples selected by ``index`` (a slice or index tensor over the first dimension)."""
        return MQARData(inputs=self.inputs[index], labels=self.labels[index], distances=self.distances[index],
                        num_pairs=self.num_pairs[index], seq_lens=self.seq_lens[index], style=self.style)


def mqar(
    num_examples: int,
    *,
    seq_len: int,
    num_pairs: int,
    vocab_size: int,
    seed: int,
    style: str = "zoology",
    power_a: float = 0.01,
    filler: str = "uniform",
) -> MQARData:
    """Generate ``num_examples`` MQAR sequences; the same arguments always give the same tensors.

    Args:
        num_examples: N, number of sequences.
        seq_len: T, tokens per sequence. zoology needs ``T >= 4 * num_pairs``; kla needs ``T >= 3 * num_pairs``.
        num_pairs: P, key-value pairs per sequence (each key is queried once).
        vocab_size: V; keys come from the lower half, values from the upper half. zoology needs
            ``V/2 - 1 >= P`` distinct keys.
        seed: seeds a private ``torch.Generator`` (no global state is touched).
        style: ``"zoology"`` or ``"kla"`` (see the module docstring).
        power_a: zoology's power-law exponent for query gaps (ignored by ``"kla"``).
        filler: ``"uniform"`` draws filler from the whole vocabulary (both flavours' default), so at long
            lengths a queried key often re-occurs in the filler before its query; ``"values"`` draws it from the
            value half only, so no filler token is ever a key.

    Returns:
        :class:`MQARData` with ``[N, T]`` inputs, labels and distances.
    """
    check_int("num_examples", num_examples, minimum=1)
    check_int("num_pairs", num_pairs, minimum=1)
    check_int("seq_len", seq_len, minimum=1)
    check_int("vocab_size", vocab_size, minimum=4)
    check_int("seed", seed)
    check_choice("style", style, MQAR_STYLES)
    check_positive("power_a", power_a)
    check_choice("filler", filler, FILLERS)
    need = 4 * num_pairs if style == "zoology" else 3 * num_pairs
    if seq_len < need:
        raise ValueError(f"seq_len must be >= {need} for style={style!r} with num_pairs={num_pairs}, got {seq_len}")
    if style == "zoology" and vocab_size // 2 - 1 < num_pairs:
        raise ValueError(f"vocab_size={vocab_size} gives {vocab_size // 2 - 1} distinct keys; "
                         f"style='zoology' needs >= num_pairs={num_pairs}")
    gen = torch.Generator().manual_seed(seed)
    n, p, t, v = num_examples, num_pairs, seq_len, vocab_size
    half = v // 2
    if style == "zoology":
        keys = 1 + _distinct(n, p, half - 1, gen)
        values = half + _distinct(n, p, v - half, gen)
        query_pos = _zoology_query_positions(n, p, t, power_a, gen)  # [N, P], query i asks pair i
        asked = torch.arange(p).expand(n, p)
    else:
        keys = torch.randint(0, half, (n, p), generator=gen)
        values = torch.randint(half, v, (n, p), generator=gen)
        query_pos = _binned_positions(n, p, start=2 * p, end=t, gen=gen)
        asked = torch.rand(n, p, generator=gen).argsort(dim=1)  # query j asks pair asked[:, j]
    inputs = torch.randint(0 if filler == "uniform" else half, v, (n, t), generator=gen)
    inputs[:, 0:2 * p:2] = keys
    inputs[:, 1:2 * p:2] = values
    q_keys = keys.gather(1, asked)
    q_values = values.gather(1, asked)
    inputs.scatter_(1, query_pos, q_keys)
    labels = torch.full((n, t), IGNORE_INDEX, dtype=torch.long).scatter_(1, query_pos, q_values)
    distances = torch.full((n, t), -1, dtype=torch.long).scatter_(1, query_pos, query_pos - 2 * asked)
    return MQARData(inputs=inputs, labels=labels, distances=distances,
                    num_pairs=torch.full((n,), p, dtype=torch.long), seq_lens=torch.full((n,), t, dtype=torch.long),
                    style=style)


def key_reoccurs(data: MQARData, *, chunk: int = 64) -> torch.Tensor:
    """``[N, T]`` bool: True at a query position whose key also occurs between the pairs and the query (in the
    filler or as another query), so a model could be misled by a later copy of the key. False elsewhere.

    Works on ``chunk`` examples at a time (a ``[chunk, T, T]`` comparison).
    """
    check_int("chunk", chunk, minimum=1)
    t = data.inputs.shape[1]
    before = torch.ones(t, t, dtype=torch.bool).tril(-1)  # [q, j]: j < q
    out = []
    for i in range(0, len(data), chunk):
        inputs = data.inputs[i:i + chunk]
        after_pairs = torch.arange(t)[None, :] >= 2 * data.num_pairs[i:i + chunk, None]  # j past the pairs
        same = inputs[:, :, None] == inputs[:, None, :]  # [n, q, j]
        out.append((same & before[None] & after_pairs[:, None, :]).any(-1))
    return torch.cat(out) & data.query_mask


def _distinct(n: int, k: int, high: int, gen: torch.Generator) -> torch.Tensor:
    """``[n, k]`` integers from ``[0, high)``, distinct within each row (uniform without replacement)."""
    return torch.rand(n, high, generator=gen).argsort(dim=1)[:, :k]


def _zoology_query_positions(n: int, p: int, t: int, power_a: float, gen: torch.Generator) -> torch.Tensor:
    """Query positions ``2P + 2 * gap`` with gaps drawn without replacement from ``∝ gap^(a-1)``, gap >= 1."""
    space = (t - 2 * p) // 2
    probs = power_a * torch.arange(1, space + 1, dtype=torch.float64) ** (power_a - 1)
    gaps = torch.multinomial(probs.expand(n, space), p, replacement=False, generator=gen)  # [N, P] in [0, space)
    return 2 * p + 2 * gaps


def _binned_positions(n: int, p: int, *, start: int, end: int, gen: torch.Generator) -> torch.Tensor:
    """One position per equal-width bin of ``[start, end)`` (p bins), uniform inside each bin; ``[n, p]``."""
    edges = start + (torch.arange(p + 1, dtype=torch.float64) * (end - start) / p).floor().long()
    width = (edges[1:] - edges[:-1]).clamp(min=1)  # bins are non-empty since end - start >= p
    offset = (torch.rand(n, p, generator=gen, dtype=torch.float64) * width).floor().long()
    return edges[:-1] + offset
