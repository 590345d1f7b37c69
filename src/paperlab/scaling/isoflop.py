"""Chinchilla approach 2: isoFLOP profiles -> N_opt per budget -> power law N_opt ~ C^a.

For each compute budget, a parabola in log N is fitted to the loss around the curve's minimum (the minimum point
and ``window`` neighbours on each side); its vertex is N_opt (the lowest point when the local fit is not convex).
Then log N_opt = a log C + c by least squares, and D_opt = C / (6 N_opt) gives D_opt ~ C^b. Budgets must be exact:
``bins`` groups by log-C bins instead, which is only *approximate* (use it for digitised data such as Epoch's
points, and say so). Bootstrap: points are resampled within each budget and everything is refitted.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from paperlab._validate import check_int, check_positive
from paperlab.exceptions import NotFittedError
from paperlab.scaling.allocate import optimal_allocation
from paperlab.scaling.fit import check_points

__all__ = ["IsoFlopFit", "IsoFlopFitter", "fit_isoflop", "synthetic_isoflop"]


@dataclass(frozen=True, kw_only=True)
class IsoFlopFit:
    """N_opt = n_coef C^n_exponent and D_opt = d_coef C^d_exponent; per-budget optima; bootstrap CIs."""

    n_exponent: float
    n_coef: float
    d_exponent: float
    d_coef: float
    budgets: list[float]
    n_opt: list[float]
    loss_opt: list[float]
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    approximate: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = {k: list(v) for k, v in self.ci.items()}
        return d


def _vertex(lN: np.ndarray, loss: np.ndarray, window: int) -> tuple[float, float]:
    """(log N_opt, loss there) from a local parabola around the minimum of one isoFLOP curve."""
    order = np.argsort(lN, kind="stable")
    lN, loss = lN[order], loss[order]
    i = int(np.argmin(loss))
    lo, hi = max(0, i - window), min(len(lN), i + window + 1)
    x, y = lN[lo:hi], loss[lo:hi]
    if len(np.unique(x)) >= 3:
        c2, c1, c0 = np.polyfit(x, y, 2)
        if c2 > 0:
            xv = -c1 / (2 * c2)
            if x.min() <= xv <= x.max():
                return float(xv), float(c0 + c1 * xv + c2 * xv**2)
    return float(lN[i]), float(loss[i])


class IsoFlopFitter:
    """Estimator: ``fit(flops, params, loss)`` returns self and sets ``result_`` (an :class:`IsoFlopFit`).

    Args:
        window: neighbours on each side of a curve's minimum used by the parabola (default 3).
        bins: None groups runs by exact budget; an int groups by that many equal log-C bins (approximate).
        n_bootstrap: resamples for the percentile interval of the exponents (0: none).
        seed: bootstrap seed.
        flops_per_param_token: k in C = k N D.
    """

    def __init__(self, *, window: int = 3, bins: int | None = None, n_bootstrap: int = 200, seed: int = 0,
                 flops_per_param_token: float = 6.0) -> None:
        self.window = check_int("window", window, minimum=1)
        self.bins = None if bins is None else check_int("bins", bins, minimum=2)
        self.n_bootstrap = check_int("n_bootstrap", n_bootstrap, minimum=0)
        self.seed = check_int("seed", seed)
        self.flops_per_param_token = check_positive("flops_per_param_token", flops_per_param_token)

    def _groups(self, C: np.ndarray) -> list[np.ndarray]:
        if self.bins is None:
            keys = np.unique(C, return_inverse=True)[1]
        else:
            lc = np.log(C)
            edges = np.linspace(lc.min(), lc.max(), self.bins + 1)
            keys = np.clip(np.digitize(lc, edges[1:-1]), 0, self.bins - 1)
        groups = [np.flatnonzero(keys == g) for g in np.unique(keys)]
        return [g for g in groups if len(g) >= 3]

    def _optima(self, C, lN, loss, groups, rng=None):
        budgets, n_opt, l_opt = [], [], []
        for g in groups:
            idx = g if rng is None else rng.choice(g, size=len(g), replace=True)
            xv, lv = _vertex(lN[idx], loss[idx], self.window)
            budgets.append(float(np.exp(np.log(C[g]).mean())))
            n_opt.append(math.exp(xv))
            l_opt.append(lv)
        return np.array(budgets), np.array(n_opt), np.array(l_opt)

    def fit(self, flops: Any, params: Any, loss: Any) -> IsoFlopFitter:
        pts = check_points(3, flops=flops, params=params, loss=loss)
        C, lN, y = pts["flops"], np.log(pts["params"]), pts["loss"]
        groups = self._groups(C)
        if len(groups) < 2:
            raise ValueError(f"need at least 2 budgets with >= 3 runs each, got {len(groups)} (bins={self.bins})")
        budgets, n_opt, l_opt = self._optima(C, lN, y, groups)
        a, c = np.polyfit(np.log(budgets), np.log(n_opt), 1)
        d_opt = budgets / (self.flops_per_param_token * n_opt)
        b, cd = np.polyfit(np.log(budgets), np.log(d_opt), 1)
        ci = {}
        if self.n_bootstrap:
            rng = np.random.default_rng(self.seed)
            draws = []
            for _ in range(self.n_bootstrap):
                bb, nb, _ = self._optima(C, lN, y, groups, rng)
                draws.append(np.polyfit(np.log(bb), np.log(nb), 1)[0])
            lo, hi = np.percentile(draws, [2.5, 97.5])
            ci = {"n_exponent": (float(lo), float(hi)), "d_exponent": (float(1 - hi), float(1 - lo))}
        self.result_ = IsoFlopFit(
            n_exponent=float(a), n_coef=float(math.exp(c)), d_exponent=float(b), d_coef=float(math.exp(cd)),
            budgets=budgets.tolist(), n_opt=n_opt.tolist(), loss_opt=l_opt.tolist(), ci=ci,
            approximate=self.bins is not None)
        return self

    def predict(self, C: Any) -> np.ndarray:
        """N_opt at budgets C."""
        if not hasattr(self, "result_"):
            raise NotFittedError("this IsoFlopFitter is not fitted yet: call fit(flops, params, loss) first")
        return self.result_.n_coef * np.asarray(C, dtype=float) ** self.result_.n_exponent


def fit_isoflop(*, flops: Any, params: Any, loss: Any, window: int = 3, bins: int | None = None,
                n_bootstrap: int = 200, seed: int = 0) -> IsoFlopFit:
    """Approach 2 on runs given as [n] arrays of budgets (FLOP), model sizes and final losses."""
    fitter = IsoFlopFitter(window=window, bins=bins, n_bootstrap=n_bootstrap, seed=seed)
    return fitter.fit(flops, params, loss).result_


def synthetic_isoflop(law: Any, *, budgets: Any, n_per_budget: int = 9, span: float = 1.0, noise: float = 0.0,
                      seed: int = 0, flops_per_param_token: float = 6.0) -> tuple[np.ndarray, ...]:
    """IsoFLOP data from a law: per budget, N spread over +-``span`` decades around the law's N_opt, log-normal noise.

    Returns (flops, params, loss), each [len(budgets) * n_per_budget].
    """
    check_int("n_per_budget", n_per_budget, minimum=3)
    rng = np.random.default_rng(seed)
    budgets = np.asarray(budgets, dtype=float)
    centres = [optimal_allocation(law, c, flops_per_param_token=flops_per_param_token).N for c in budgets]
    C = np.repeat(budgets, n_per_budget)
    centre = np.repeat(centres, n_per_budget)
    N = centre * 10 ** np.tile(np.linspace(-span, span, n_per_budget), len(budgets))
    D = C / (flops_per_param_token * N)
    loss = law(N, D) * np.exp(noise * rng.standard_normal(len(C)))
    return C, N, loss
