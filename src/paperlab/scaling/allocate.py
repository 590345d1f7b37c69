"""Compute-optimal allocation for any law: N_opt(C), D_opt(C), L_opt(C) under C = k N D (k = 6 by default).

Chinchilla's law has the closed form N_opt = G (C/k)^(beta/(alpha+beta)), G = (alpha A/(beta B))^(1/(alpha+beta))
(Hoffmann et al. 2022, eq. 4). Other laws are minimised numerically over log N (bounded Brent; the losses here are
unimodal in log N). The active bottleneck is the resource whose term (reducible loss it alone would leave) is
largest, i.e. the smallest frontier for the Effective-Frontier law (Max-Bottleneck principle, reconstruction).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from paperlab._validate import check_positive
from paperlab.scaling.laws import ChinchillaLaw, FrontierLaw

__all__ = ["Allocation", "D_opt", "L_opt", "N_opt", "active_bottleneck", "allocation_exponent",
           "optimal_allocation"]


@dataclass(frozen=True)
class Allocation:
    """The compute-optimal point at budget C: N, D, the loss there and the active bottleneck."""

    C: float
    N: float
    D: float
    loss: float
    bottleneck: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _evaluate(law: Any, N: Any, D: Any, tokens_per_step: float | None) -> Any:
    if isinstance(law, FrontierLaw) and law.c_T is not None:
        if tokens_per_step is None:
            raise ValueError("this frontier law has an optimisation frontier: pass tokens_per_step (T = D / it)")
        return law(N, D, np.asarray(D) / tokens_per_step)
    return law(N, D)


def active_bottleneck(law: Any, N: float, D: float, *, tokens_per_step: float | None = None) -> str:
    """Name of the largest reducible term ("capacity", "coverage" or "optimization") at (N, D)."""
    if isinstance(law, FrontierLaw) and law.c_T is not None:
        if tokens_per_step is None:
            raise ValueError("pass tokens_per_step for a law with an optimisation frontier")
        terms = law.terms(N, D, D / tokens_per_step)
    else:
        terms = law.terms(N, D)
    return max(terms, key=lambda k: float(np.max(terms[k])))


def optimal_allocation(law: Any, C: float, *, flops_per_param_token: float = 6.0,
                       tokens_per_step: float | None = None) -> Allocation:
    """Minimise ``law`` over N with D = C / (k N) (k = ``flops_per_param_token``).

    Args:
        law: any law with ``__call__(N, D)`` and ``terms``; a FrontierLaw with steps needs ``tokens_per_step``.
        C: compute budget in FLOP.
    """
    C = check_positive("C", C)
    k = check_positive("flops_per_param_token", flops_per_param_token)
    if isinstance(law, ChinchillaLaw):
        G = (law.alpha * law.A / (law.beta * law.B)) ** (1.0 / (law.alpha + law.beta))
        N = G * (C / k) ** (law.beta / (law.alpha + law.beta))
    else:
        hi = math.log(C / k)  # N in [1, C/k] keeps D >= 1

        def f(x: float) -> float:
            return float(np.log(_evaluate(law, math.exp(x), C / (k * math.exp(x)), tokens_per_step)))

        res = minimize_scalar(f, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-10})
        N = math.exp(res.x)
    D = C / (k * N)
    loss = float(_evaluate(law, N, D, tokens_per_step))
    return Allocation(C=C, N=N, D=D, loss=loss,
                      bottleneck=active_bottleneck(law, N, D, tokens_per_step=tokens_per_step))


def N_opt(law: Any, C: Any, **kw: Any) -> np.ndarray:
    """[len(C)] compute-optimal parameters (keywords as in :func:`optimal_allocation`)."""
    return np.array([optimal_allocation(law, float(c), **kw).N for c in np.atleast_1d(C)])


def D_opt(law: Any, C: Any, **kw: Any) -> np.ndarray:
    """[len(C)] compute-optimal tokens."""
    return np.array([optimal_allocation(law, float(c), **kw).D for c in np.atleast_1d(C)])


def L_opt(law: Any, C: Any, **kw: Any) -> np.ndarray:
    """[len(C)] loss at the compute-optimal allocation."""
    return np.array([optimal_allocation(law, float(c), **kw).loss for c in np.atleast_1d(C)])


def allocation_exponent(law: Any, *, C_low: float = 1e20, C_high: float = 1e24, **kw: Any) -> float:
    """Local exponent a of N_opt ~ C^a between two budgets (slope of log N_opt on log C)."""
    n_lo, n_hi = N_opt(law, [C_low, C_high], **kw)
    return float(math.log(n_hi / n_lo) / math.log(C_high / C_low))
