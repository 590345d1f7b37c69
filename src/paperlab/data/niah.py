"""Single needle in a haystack (S-NIAH proxy): one key-value pair hidden at a controlled depth in noise.

The KLA paper's "S-NIAH" (arXiv 2605.08587) is MQAR with one pair (per the authors' code); this generator makes
the needle's depth an explicit, controlled variable. Layout of one example of length T::

    noise ... noise  KEY VALUE  noise ... noise  KEY
                     ^ needle_pos = round(depth * (T - 3))        ^ query at T - 1, label VALUE

Keys come from ``[0, V/2)`` and values from ``[V/2, V)``; noise is uniform over the whole vocabulary except the
needle's key, so the last token's key occurs exactly twice and the answer is unambiguous. Labels are
``IGNORE_INDEX`` everywhere except the final (query) position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from paperlab._validate import check_choice, check_int, check_probability
from paperlab.data.mqar import IGNORE_INDEX

__all__ = ["NIAHData", "niah"]


@dataclass(frozen=True)
class NIAHData:
    """A batch of S-NIAH examples with slice metadata.

    Attributes:
        inputs: ``[N, T]`` long token ids.
        labels: ``[N, T]`` long; the needle's value at position ``T - 1``, ``IGNORE_INDEX`` elsewhere.
        depths: ``[N]`` float64, requested needle depth in [0, 1] (0 = start of the haystack).
        needle_pos: ``[N]`` long, position of the needle's key.
        distances: ``[N]`` long, query position minus needle-key position.
        seq_lens: ``[N]`` long, sequence length per example.
    """

    inputs: torch.Tensor
    labels: torch.Tensor
    depths: torch.Tensor
    needle_pos: torch.Tensor
    distances: torch.Tensor
    seq_lens: torch.Tensor

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def query_mask(self) -> torch.Tensor:
        """``[N, T]`` bool, True at the query position."""
        return self.labels != IGNORE_INDEX

    def subset(self, index: torch.Tensor | slice) -> NIAHData:
        """The examples selected by ``index`` (a slice or index tensor over the first dimension)."""
        return NIAHData(inputs=self.inputs[index], labels=self.labels[index], depths=self.depths[index],
                        needle_pos=self.needle_pos[index], distances=self.distances[index],
                        seq_lens=self.seq_lens[index])


def niah(
    num_examples: int,
    *,
    seq_len: int,
    vocab_size: int,
    seed: int,
    depth: float | Sequence[float] | None = None,
    noise: str = "uniform",
) -> NIAHData:
    """Generate ``num_examples`` needle-in-a-haystack sequences; same arguments, same tensors.

    Args:
        num_examples: N.
        seq_len: T >= 3 (needle key, its value, the query).
        vocab_size: V >= 4; keys from ``[0, V/2)``, values from ``[V/2, V)``.
        seed: seeds a private ``torch.Generator``.
        depth: needle depth in [0, 1]: one float for every example, a length-N sequence, or ``None`` for
            uniform random depths (training).
        noise: ``"uniform"``: the haystack is uniform over the vocabulary without the needle's key (other keys
            occur in it); ``"values"``: uniform over the value half only, so no haystack token is a key (the
            layout of MQAR data made with ``filler="values"``).

    Returns:
        :class:`NIAHData`.
    """
    check_int("num_examples", num_examples, minimum=1)
    check_int("seq_len", seq_len, minimum=3)
    check_int("vocab_size", vocab_size, minimum=4)
    check_int("seed", seed)
    check_choice("noise", noise, ("uniform", "values"))
    gen = torch.Generator().manual_seed(seed)
    n, t, v = num_examples, seq_len, vocab_size
    if depth is None:
        depths = torch.rand(n, generator=gen, dtype=torch.float64)
    elif isinstance(depth, (int, float)):
        depths = torch.full((n,), check_probability("depth", depth), dtype=torch.float64)
    else:
        if len(depth) != n:
            raise ValueError(f"depth must have num_examples={n} entries, got {len(depth)}")
        depths = torch.tensor([check_probability("depth", float(d)) for d in depth], dtype=torch.float64)
    half = v // 2
    keys = torch.randint(0, half, (n,), generator=gen)
    values = torch.randint(half, v, (n,), generator=gen)
    if noise == "uniform":  # V - 1 symbols, shifted past the key: uniform over the vocabulary without the key
        hay = torch.randint(0, v - 1, (n, t), generator=gen)
        inputs = hay + (hay >= keys[:, None]).long()
    else:
        inputs = torch.randint(half, v, (n, t), generator=gen)
    pos = (depths * (t - 3)).round().long()
    rows = torch.arange(n)
    inputs[rows, pos] = keys
    inputs[rows, pos + 1] = values
    inputs[:, -1] = keys
    labels = torch.full((n, t), IGNORE_INDEX, dtype=torch.long)
    labels[:, -1] = values
    return NIAHData(inputs=inputs, labels=labels, depths=depths, needle_pos=pos, distances=(t - 1) - pos,
                    seq_lens=torch.full((n,), t, dtype=torch.long))
