"""Log-space parametrisations of the fitted laws: log L_hat(theta), its Jacobian, a grid of starts, and maps.

Every form predicts ``f = log L_hat`` from ``lN = log N``, ``lD = log D`` (and ``lT = log T``) as a log-sum-exp,
which keeps E, A, B > 0 and is what Chinchilla's approach 3 does. ``theta`` may carry a leading batch axis
``[S, P]`` (used to score the whole grid of starts at once); the Jacobian is only computed for ``[P]``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import zeta

from paperlab.scaling.laws import ChinchillaLaw, FrontierLaw, KaplanLaw

__all__ = ["Form", "chinchilla_form", "frontier_form", "kaplan_form"]

Forward = Callable[[np.ndarray, dict[str, np.ndarray], bool], tuple[np.ndarray, np.ndarray | None]]


@dataclass(frozen=True)
class Form:
    """One law's fitting form: parameter names, forward pass, starts, bounds, and the map to the law."""

    name: str
    names: tuple[str, ...]
    forward: Forward
    grid: np.ndarray  # [S, P] starts
    bounds: tuple[tuple[float | None, float | None], ...]
    to_params: Callable[[np.ndarray], dict[str, float]]
    to_law: Callable[[dict[str, float]], ChinchillaLaw | KaplanLaw | FrontierLaw]
    needs_steps: bool = False


def _col(theta: np.ndarray, i: int) -> np.ndarray:
    return theta[..., i, None] if theta.ndim > 1 else theta[i]


def _softmax(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log-sum-exp over axis 0 and the softmax weights (plain numpy: scipy's wrapper costs more here)."""
    m = stack.max(axis=0)
    ex = np.exp(stack - m)
    tot = ex.sum(axis=0)
    return m + np.log(tot), ex / tot


def _grid(*axes: list[float]) -> np.ndarray:
    return np.array(list(itertools.product(*axes)), dtype=float)


# ----- Chinchilla: f = LSE(a - alpha lN, b - beta lD, e); theta = (a, b, e, alpha, beta)
def _chin_forward(theta, X, jac):
    a, b, e, al, be = (_col(theta, i) for i in range(5))
    u = np.stack(np.broadcast_arrays(a - al * X["lN"], b - be * X["lD"], e + 0 * X["lN"]))
    f, w = _softmax(u)
    if not jac:
        return f, None
    J = np.stack([w[0], w[1], w[2], -w[0] * X["lN"], -w[1] * X["lD"]], axis=1)
    return f, J


def chinchilla_form() -> Form:
    """Chinchilla's Approach 3 starts: alpha, beta in {0, .5, .., 2}, e in {-1, -.5, .., 1}, a, b in {0, 5, .., 25}."""
    sweep, e_axis, ab = [0.0, 0.5, 1.0, 1.5, 2.0], [-1.0, -0.5, 0.0, 0.5, 1.0], [0.0, 5, 10, 15, 20, 25]
    grid = _grid(ab, ab, e_axis, sweep, sweep)

    def to_params(t):
        return {"E": math.exp(t[2]), "A": math.exp(t[0]), "B": math.exp(t[1]), "alpha": t[3], "beta": t[4]}

    return Form("chinchilla", ("a", "b", "e", "alpha", "beta"), _chin_forward, grid, ((None, None),) * 5,
                to_params, lambda p: ChinchillaLaw(**p))


# ----- Kaplan p-norm: g = LSE(p(a - alpha lN), p(b - beta lD)) / p; f = LSE(e, g); theta = (a, b, e, al, be, q)
def _kaplan_forward(theta, X, jac, fixed_p):
    a, b, e, al, be = (_col(theta, i) for i in range(5))
    p = np.exp(_col(theta, 5)) if fixed_p is None else fixed_p
    x = np.stack(np.broadcast_arrays(a - al * X["lN"], b - be * X["lD"]))
    lse, om = _softmax(p * x)
    g = lse / p
    f, W = _softmax(np.stack(np.broadcast_arrays(e + 0 * g, g)))
    if not jac:
        return f, None
    dg = [om[0], om[1], -om[0] * X["lN"], -om[1] * X["lD"]]
    cols = [W[1] * dg[0], W[1] * dg[1], W[0], W[1] * dg[2], W[1] * dg[3]]
    if fixed_p is None:
        cols.append(W[1] * ((om * x).sum(axis=0) - g))
    return f, np.stack(cols, axis=1)


def kaplan_form(*, p: float | None = None) -> Form:
    """Kaplan p-norm with E; ``p=None`` fits log p (bounded to [0.5, 50]), a number fixes it."""
    ab, sweep, e_axis = [0.0, 5, 10, 15, 20, 25], [0.0, 0.5, 1.0, 1.5], [-1.0, 0.0, 0.5, 1.0]
    names = ("a", "b", "e", "alpha", "beta") + (("log_p",) if p is None else ())
    axes = [ab, ab, e_axis, sweep, sweep] + ([[0.0, math.log(3.0), math.log(10.0)]] if p is None else [])
    bounds = ((None, None),) * 5 + (((math.log(0.5), math.log(50.0)),) if p is None else ())

    def to_params(t):
        out = {"E": math.exp(t[2]), "A": math.exp(t[0]), "B": math.exp(t[1]), "alpha": t[3], "beta": t[4]}
        out["p"] = math.exp(t[5]) if p is None else float(p)
        return out

    return Form("kaplan", names, lambda t, X, j: _kaplan_forward(t, X, j, p), _grid(*axes), bounds, to_params,
                lambda q: KaplanLaw(**q))


# ----- Effective-Frontier law [reconstruction]:
# z_r = lc_r + gamma_r lR_r (log frontier), m = -LSE(-s z)/s, f = LSE(e, log G(alpha) + (1 - alpha) m)
# theta = (e, u = log(alpha - 1), lc_N, g_N = log gamma_N, lc_D, [g_D], [lc_T, g_T], [log s])
def _log_g(zipf_alpha):
    return -np.log(zipf_alpha - 1.0) - np.log(zeta(zipf_alpha, 1))


def _dlog_g(zipf_alpha, h=1e-6):
    return (_log_g(zipf_alpha + h) - _log_g(zipf_alpha - h)) / (2 * h)


def _frontier_forward(theta, X, jac, layout):
    tie, steps, fixed_s, fixed_gn = layout
    i = iter(range(theta.shape[-1]))
    e, u = _col(theta, next(i)), _col(theta, next(i))
    zipf_alpha = 1.0 + np.exp(u)
    lc = [_col(theta, next(i))]
    gam_log: list[np.ndarray | float | None] = [_col(theta, next(i)) if fixed_gn is None else math.log(fixed_gn)]
    lc.append(_col(theta, next(i)))
    gam_log.append(None if tie else _col(theta, next(i)))
    if steps:
        lc.append(_col(theta, next(i)))
        gam_log.append(_col(theta, next(i)))
    s = fixed_s if fixed_s is not None else np.exp(_col(theta, next(i)))
    gammas = [np.exp(g) if g is not None else 1.0 / zipf_alpha for g in gam_log]
    lR = [X["lN"], X["lD"]] + ([X["lT"]] if steps else [])
    z = np.stack(np.broadcast_arrays(*[c + g * r for c, g, r in zip(lc, gammas, lR, strict=True)]))
    lse, om = _softmax(-s * z)
    m = -lse / s
    h = _log_g(zipf_alpha) + (1.0 - zipf_alpha) * m
    f, W = _softmax(np.stack(np.broadcast_arrays(e + 0 * h, h)))
    if not jac:
        return f, None
    dh_dm = W[1] * (1.0 - zipf_alpha)
    dz = [dh_dm * om[r] for r in range(len(lR))]  # df/dz_r
    dalpha = W[1] * (_dlog_g(zipf_alpha) - m)
    if tie:  # gamma_D = 1/alpha: dz_D/dalpha = -lD/alpha^2
        dalpha = dalpha + dz[1] * (-X["lD"] / zipf_alpha**2)
    cols = [W[0], dalpha * (zipf_alpha - 1.0), dz[0]] + ([dz[0] * gammas[0] * lR[0]] if fixed_gn is None else [])
    cols.append(dz[1])
    if not tie:
        cols.append(dz[1] * gammas[1] * lR[1])
    if steps:
        cols += [dz[2], dz[2] * gammas[2] * lR[2]]
    if fixed_s is None:
        cols.append(dh_dm * ((om * z).sum(axis=0) - m))
    return f, np.stack(cols, axis=1)


def frontier_form(*, tie_coverage: bool = True, with_steps: bool = False, s: float | None = None,
                  gamma_N: float | None = None) -> Form:
    """EF law; ``tie_coverage`` sets gamma_D = 1/zipf_alpha (theory), ``s=None`` fits log s in [0.1, 100],
    ``gamma_N`` fixes the capacity exponent (1.0 is the strict one-pattern-per-parameter form)."""
    names = ["e", "log_alpha_minus_1", "log_c_N"] + (["log_gamma_N"] if gamma_N is None else []) + ["log_c_D"]
    axes = [[-1.0, -0.5, 0.0, 0.5, 1.0], [math.log(x) for x in (0.2, 0.5, 1.0, 2.0)], [-20.0, -12, -4, 4]]
    axes += ([[math.log(x) for x in (0.3, 0.6, 1.0)]] if gamma_N is None else []) + [[-20.0, -12, -4, 4]]
    wide: tuple[float | None, float | None] = (None, None)
    bounds = [wide, (math.log(1e-3), math.log(20.0)), wide]
    bounds += ([(math.log(1e-3), math.log(10.0))] if gamma_N is None else []) + [wide]
    if not tie_coverage:
        names.append("log_gamma_D")
        axes.append([math.log(0.5)])
        bounds.append((math.log(1e-3), math.log(10.0)))
    if with_steps:
        names += ["log_c_T", "log_gamma_T"]
        axes += [[-12.0, -4, 4], [math.log(0.5)]]
        bounds += [(None, None), (math.log(1e-3), math.log(10.0))]
    if s is None:
        names.append("log_s")
        axes.append([0.0, math.log(5.0)])
        bounds.append((math.log(0.1), math.log(100.0)))
    layout = (tie_coverage, with_steps, s, gamma_N)

    def to_params(t):
        it = iter(t)
        e, u = next(it), next(it)
        zipf_alpha = 1.0 + math.exp(u)
        out = {"E": math.exp(e), "zipf_alpha": zipf_alpha, "c_N": math.exp(next(it))}
        out["gamma_N"] = math.exp(next(it)) if gamma_N is None else float(gamma_N)
        out["c_D"] = math.exp(next(it))
        out["gamma_D"] = 1.0 / zipf_alpha if tie_coverage else math.exp(next(it))
        if with_steps:
            out["c_T"], out["gamma_T"] = math.exp(next(it)), math.exp(next(it))
        out["s"] = float(s) if s is not None else math.exp(next(it))
        return out

    return Form("frontier", tuple(names), lambda t, X, j: _frontier_forward(t, X, j, layout), _grid(*axes),
                tuple(bounds), to_params, lambda q: FrontierLaw(**q), needs_steps=with_steps)
