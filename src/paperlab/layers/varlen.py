"""Packed sequences (``cu_seqlens``, flash-linear-attention's varlen convention) for the mixers.

A batch of size 1 holds N sequences back to back; ``cu_seqlens`` ``[N + 1]`` gives their cumulative starts
``0 = c_0 < c_1 < ... < c_N = T``. Every mixer then treats each sequence as if it ran alone: it starts from
the empty state, nothing flows across a boundary, and the outputs are the per-sequence outputs concatenated.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from paperlab.ops.delta_rule._checks import check_cu_seqlens

__all__ = ["PackedSeqs", "check_packed_call"]


@dataclass(frozen=True)
class PackedSeqs:
    """Checked ``cu_seqlens`` and what the mixers derive from it (all on the input's device).

    Attributes:
        bounds: the boundaries as ints ``[0, c_1, ..., T]``.
        cu_seqlens: the same as a long tensor ``[N + 1]``.
        seq: ``[T]`` the sequence index of each step.
        pos: ``[T]`` each step's 0-based position within its sequence.
        lengths: ``[N]`` the sequence lengths.
    """

    bounds: list[int]
    cu_seqlens: torch.Tensor
    seq: torch.Tensor
    pos: torch.Tensor
    lengths: torch.Tensor

    @property
    def n(self) -> int:
        """Number of sequences N."""
        return len(self.bounds) - 1

    @classmethod
    def from_cu_seqlens(cls, cu_seqlens: object, batch: int, steps: int, device: torch.device) -> PackedSeqs:
        """Check ``cu_seqlens`` for an input ``[batch, steps, ...]`` (``check_cu_seqlens``; one host sync)."""
        bounds = check_cu_seqlens(cu_seqlens, batch, steps)
        cu = torch.tensor(bounds, dtype=torch.long, device=device)
        lengths = cu.diff()
        seq = torch.repeat_interleave(torch.arange(len(bounds) - 1, device=device), lengths)
        pos = torch.arange(steps, device=device) - cu[seq]
        return cls(bounds=bounds, cu_seqlens=cu, seq=seq, pos=pos, lengths=lengths)

    def last_window(self, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Steps ``[N, width]`` of the last ``width`` tokens of each sequence (right-aligned) and whether each is
        one of its tokens (False where the sequence is shorter than ``width``; those indices are clamped)."""
        cu = self.cu_seqlens
        idx = cu[1:, None] - width + torch.arange(width, device=cu.device)
        valid = idx >= cu[:-1, None]
        return idx.clamp_min(0), valid


def check_packed_call(name: str, *, state: object, attention_mask: torch.Tensor | None) -> None:
    """Refuse ``cu_seqlens`` with a decode state or a padding ``attention_mask`` in mixer ``name``."""
    if state is not None:
        raise ValueError(f"{name}: cu_seqlens starts every packed sequence from the empty state, so it cannot be "
                         f"combined with a decode state; pass state=None (the returned state holds the N "
                         f"sequences as a batch of N, to continue them)")
    if attention_mask is not None and not bool(attention_mask.to(torch.bool).all()):
        raise ValueError(f"{name}: cu_seqlens cannot be combined with a padding attention_mask (packed sequences "
                         f"have no padding); drop the padded steps from the packed row, or pass no cu_seqlens")
