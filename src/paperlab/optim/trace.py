"""Row-norm and angular-step traces of weight matrices during training (Nora's stability diagnostics).

For a row-wise update ``theta_i <- (1 - lr wd) theta_i - lr s d_i`` with ``<d_i, theta_i> = 0`` and
``||d_i|| = 1`` (Nora), the squared row norm follows ``r^2 <- (1 - lr wd)^2 r^2 + lr^2 s^2`` whatever the data.
``radial_residual`` measures how far a run departs from that recursion, in units of the step ``lr^2 s^2``:
~0 for Nora (round-off), large for RMNP, whose update has a radial part ("radial jitter").
"""

from __future__ import annotations

import torch
from torch import Tensor

from paperlab.optim.functional import as_rows

__all__ = ["RowTracer", "angular_steps", "radial_residual"]


class RowTracer:
    """Records the row norms of ``params`` after every step (call it as ``on_step(step, model)``).

    Attributes:
        norms: per parameter, a list of ``[rows]`` fp64 row-norm tensors; entry 0 is the initial state.
        angles: per parameter, a list of ``[rows]`` angles (radians) between consecutive weight rows.
    """

    def __init__(self, params: list[Tensor]) -> None:
        self.params = list(params)
        self.norms: list[list[Tensor]] = [[self._norm(p)] for p in self.params]
        self.angles: list[list[Tensor]] = [[] for _ in self.params]
        self._prev = [as_rows(p.detach()).double().clone() for p in self.params]

    @staticmethod
    def _norm(p: Tensor) -> Tensor:
        return as_rows(p.detach()).double().norm(dim=1)

    def __call__(self, step: int, model: object = None) -> None:
        for i, p in enumerate(self.params):
            cur = as_rows(p.detach()).double()
            self.norms[i].append(cur.norm(dim=1))
            self.angles[i].append(angular_steps(self._prev[i], cur))
            self._prev[i] = cur.clone()

    def norm_trace(self, index: int = 0) -> Tensor:
        """``[steps + 1, rows]`` row norms of parameter ``index``."""
        return torch.stack(self.norms[index])

    def angle_trace(self, index: int = 0) -> Tensor:
        """``[steps, rows]`` angular steps of parameter ``index``."""
        return torch.stack(self.angles[index])


def angular_steps(before: Tensor, after: Tensor) -> Tensor:
    """Angle (radians) between each row of ``before`` and ``after`` (``[rows, cols]`` each) -> ``[rows]``."""
    cos = (before * after).sum(1) / (before.norm(dim=1) * after.norm(dim=1)).clamp_min(1e-300)
    return torch.arccos(cos.clamp(-1.0, 1.0))


def radial_residual(norms: Tensor, lrs: Tensor, *, weight_decay: float, scale: float = 1.0) -> Tensor:
    """``|r_{t+1}^2 - (1 - lr_t wd)^2 r_t^2 - lr_t^2 s^2| / (lr_t^2 s^2)`` for every step and row.

    Args:
        norms: ``[steps + 1, rows]`` row norms (from :class:`RowTracer`).
        lrs: ``[steps]`` learning rate used at each step.
        weight_decay: the decoupled decay ``wd``; scale: the shape factor ``s``.
    Returns:
        ``[steps, rows]``; Nora gives round-off (~1e-3 in fp32 at lr 1e-2), RMNP order 1 or more.
    """
    r2 = norms.double().square()
    lr = lrs.double()[:, None]
    step = (lr * scale).square()
    predicted = (1 - lr * weight_decay).square() * r2[:-1] + step
    return (r2[1:] - predicted).abs() / step.clamp_min(1e-300)
