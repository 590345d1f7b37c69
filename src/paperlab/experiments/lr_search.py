"""Learning-rate tuning for the evidence protocol: each arm tunes on a declared grid (one seed, a short budget),
and the grid grows geometrically past whichever edge holds the best value until the best is interior or a cap is
reached. A comparison between arms is only fair when each sits at its own tuned learning rate; a best value on
the grid's edge means the tuning did not finish, and the table says so ("grid edge")."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from paperlab._validate import check_int, check_positive

__all__ = ["LRChoice", "lr_cell", "tune_lr"]


@dataclass(frozen=True, kw_only=True)
class LRChoice:
    """The outcome of :func:`tune_lr`.

    ``tried`` holds every ``(lr, score)`` evaluated, sorted by lr; ``interior`` is True when the best lr has a
    tried neighbour on both sides; ``extensions`` counts the values added beyond the declared grid.
    """

    lr: float
    score: float
    tried: tuple[tuple[float, float], ...]
    interior: bool
    extensions: int

    @property
    def grid_edge(self) -> bool:
        """The cap stopped the search with the best value still on an edge."""
        return not self.interior

    @classmethod
    def untuned(cls, lr: float) -> LRChoice:
        """The one lr an arm uses when no grid is given (no score; tables show it as a grid edge)."""
        return cls(lr=lr, score=math.nan, tried=((lr, math.nan),), interior=False, extensions=0)

    def cell(self) -> str:
        """The lr as a table shows it: ``0.003``, or ``0.1 (grid edge)``."""
        return f"{self.lr:.3g}" + (" (grid edge)" if self.grid_edge else "")


def tune_lr(train_eval: Callable[[float], float], grid: Sequence[float], *, minimize: bool = True,
            factor: float | None = None, max_extensions: int = 3) -> LRChoice:
    """Evaluate ``train_eval`` on ``grid``, then extend past the best edge until the best lr is interior.

    Args:
        train_eval: lr -> score of one short training run (e.g. validation loss); called once per lr. A
            non-finite score (a diverged run) counts as the worst score.
        grid: at least 3 distinct positive learning rates (any order).
        minimize: lower scores are better (a loss); False for an accuracy.
        factor: the geometric step of an extension; None uses the grid's own ratio at that edge.
        max_extensions: how many values may be added beyond the grid in total.

    Returns:
        :class:`LRChoice`; ``interior`` is False ("grid edge") when the cap was reached first.
    """
    lrs = sorted(check_positive("grid value", lr) for lr in grid)
    if len(lrs) < 3 or len(set(lrs)) != len(lrs):
        raise ValueError(f"grid must hold at least 3 distinct learning rates, got {list(grid)}")
    if factor is not None and check_positive("factor", factor) <= 1.0:
        raise ValueError(f"factor must be > 1 (a geometric step), got {factor}")
    check_int("max_extensions", max_extensions, minimum=0)
    scores = {lr: float(train_eval(lr)) for lr in lrs}
    extensions = 0
    while True:
        tried = sorted(scores)
        best = min(tried, key=lambda lr: _badness(scores[lr], minimize))  # ties: the smallest lr
        at_low, at_high = best == tried[0], best == tried[-1]
        if not (at_low or at_high) or extensions == max_extensions:
            break
        ratio = factor or (tried[-1] / tried[-2] if at_high else tried[1] / tried[0])
        new = tried[-1] * ratio if at_high else tried[0] / ratio
        scores[new] = float(train_eval(new))
        extensions += 1
    return LRChoice(lr=best, score=scores[best], tried=tuple((lr, scores[lr]) for lr in tried),
                    interior=not (at_low or at_high), extensions=extensions)


def _badness(score: float, minimize: bool) -> float:
    if not math.isfinite(score):
        return math.inf
    return score if minimize else -score


def lr_cell(choices: Mapping[str, LRChoice]) -> str:
    """Each arm's tuned lr for a table cell: ``kla 0.003, gdn 0.1 (grid edge)``."""
    return ", ".join(f"{arm} {choice.cell()}" for arm, choice in choices.items())
