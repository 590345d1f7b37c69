"""Fit scaling laws to (N, D, loss) points: Huber on log-loss, a grid of starts, L-BFGS-B, bootstrap CIs.

Recipe (Chinchilla approach 3 as replicated by Besiroglu et al. 2024, arXiv 2404.10102): the objective is the
**sum** over points of Huber_delta(log L_hat - log L) with delta = 1e-3 (a mean makes the gradient so small that
L-BFGS stops early); every start of a grid is scored, L-BFGS-B (analytic gradient) runs from the ``n_starts``
best (``DEFAULT_STARTS`` by default, ``None`` for every start as Epoch's notebook does), and the lowest objective
wins. Bootstrap refits resample points with replacement and start from the full-data optimum; intervals are
percentiles. AIC/BIC use a Gaussian likelihood of the log residuals: AIC = n log(RSS/n) + 2k,
BIC = n log(RSS/n) + k log n (RSS/n floored at float resolution, so an exact fit stays finite).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize

from paperlab._validate import check_choice, check_int, check_positive
from paperlab.exceptions import NotFittedError
from paperlab.scaling._forms import Form, chinchilla_form, frontier_form, kaplan_form
from paperlab.scaling.laws import LAWS, FrontierLaw, as_real_array

__all__ = ["DEFAULT_STARTS", "FIT_LAWS", "FitResult", "LawFitter", "check_points", "fit_law", "huber"]

FIT_LAWS = ("chinchilla", "kaplan", "frontier")
DEFAULT_STARTS = 8
"""L-BFGS-B runs from the 8 best-scoring grid starts unless told otherwise. Measured against L-BFGS-B from every
start (chinchilla 4,500, kaplan 6,912, frontier 1,920, strict frontier 640; 18-320 CPU-s a fit) on Epoch's points
(240 and all 245) and the Kyo subset (234), 14 fits (chinchilla also on C <= 1e21): the best-scoring start alone
reached the full grid's optimum every time (objective within 1e-12 relative, log-parameters within 3e-6), and
21-50% of all starts reach it. 8 is a margin over that: 0.5-1.4 CPU-s a fit on a busy machine, most of it spent
scoring the grid."""
_OPTION_LAW = {"p": "kaplan", "s": "frontier", "gamma_N": "frontier", "tie_coverage": "frontier"}


def huber(r: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Huber loss of residuals ``r`` and its derivative (both shaped like ``r``)."""
    a = np.abs(r)
    val = np.where(a <= delta, 0.5 * r**2, delta * (a - 0.5 * delta))
    return val, np.clip(r, -delta, delta)


def check_points(n_min: int = 1, **arrays: Any) -> dict[str, np.ndarray]:
    """Validate named 1-D arrays: real numbers (not bool, complex or text), finite, > 0, one common length
    >= ``n_min``; return float64 arrays."""
    out = {}
    for name, x in arrays.items():
        a = as_real_array(name, x)
        if a.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
        bad = ~np.isfinite(a) | (a <= 0)
        if bad.any():
            raise ValueError(f"{name} must be finite and > 0; {int(bad.sum())} bad value(s), e.g. {a[bad][0]!r}")
        out[name] = a
    lengths = {k: len(v) for k, v in out.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"arguments must have the same length, got {lengths}")
    n = next(iter(lengths.values()))
    if n < n_min:
        raise ValueError(f"need at least {n_min} points for this fit, got {n}")
    return out


def _holdout_mask(holdout: Any, n: int) -> np.ndarray:
    """[n] boolean mask from ``holdout``: None (no point held out), a boolean mask [n], or integer indices."""
    if holdout is None:
        return np.zeros(n, bool)
    h = np.asarray(holdout)
    if h.ndim != 1:
        raise ValueError(f"holdout must be a 1-D boolean mask or integer indices, got shape {h.shape}")
    if h.dtype == bool:
        if h.shape != (n,):
            raise ValueError(f"holdout as a boolean mask must have length {n} (one flag per point), got {len(h)}")
        return h
    if h.size and not np.issubdtype(h.dtype, np.integer):
        raise ValueError(f"holdout must be a boolean mask or integer indices, got dtype {h.dtype} (e.g. {h[0]!r})")
    idx = h.astype(int)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"holdout indices must lie in [0, {n}), got min {idx.min()} and max {idx.max()}")
    mask = np.zeros(n, bool)
    mask[idx] = True
    return mask


def _information_criteria(rss: float, y: np.ndarray, k: int) -> tuple[float, float]:
    """(AIC, BIC) of a Gaussian likelihood of the [n] log residuals with ``k`` parameters.

    The residual variance RSS/n is floored at the float64 resolution of ``y`` (eps * max|y|)^2, so an exact fit
    (RSS = 0, e.g. points sampled from the law itself) gets the finite AIC of residuals at rounding level.
    """
    n = len(y)
    floor = (np.finfo(float).eps * max(float(np.abs(y).max()), 1.0)) ** 2
    ll = n * math.log(max(rss / n, floor))
    return ll + 2 * k, ll + k * math.log(n)


@dataclass(frozen=True, kw_only=True)
class FitResult:
    """A fitted law: natural parameters, fit quality, bootstrap intervals and held-out error.

    ``params`` for "chinchilla": E, A, B, alpha, beta; "kaplan": the same plus p; "frontier": E, zipf_alpha,
    c_N, gamma_N, c_D, gamma_D (, c_T, gamma_T), s. ``n_exponent`` is a in N_opt ~ C^a (C = 6ND).
    ``ci`` maps each parameter (and "n_exponent") to a (2.5%, 97.5%) percentile interval.
    """

    law: str
    params: dict[str, float]
    objective: float
    n_points: int
    n_params: int
    rss_log: float
    aic: float
    bic: float
    n_exponent: float
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    heldout_rmse: float | None = None
    n_heldout: int = 0
    n_starts: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (tuples become lists)."""
        d = asdict(self)
        d["ci"] = {k: list(v) for k, v in self.ci.items()}
        return d

    def make_law(self) -> Any:
        """The law object (``ChinchillaLaw`` / ``KaplanLaw`` / ``FrontierLaw``) with these parameters."""
        return LAWS[self.law](**self.params)


def _form(name: str, **opts: Any) -> Form:
    if name == "chinchilla":
        return chinchilla_form()
    if name == "kaplan":
        return kaplan_form(p=opts.get("p"))
    return frontier_form(tie_coverage=opts.get("tie_coverage", True), with_steps=opts.get("with_steps", False),
                         s=opts.get("s"), gamma_N=opts.get("gamma_N"))


def _one_blas_thread() -> contextlib.AbstractContextManager:
    """L-BFGS-B on 5 parameters is slowed 10x by BLAS threads spinning on a busy machine: use one if we can."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only a speed-up
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _objective(theta: np.ndarray, form: Form, X: dict[str, np.ndarray], y: np.ndarray, delta: float):
    f, J = form.forward(theta, X, True)
    assert J is not None  # forward returns the Jacobian when asked for it
    val, psi = huber(f - y, delta)
    return float(val.sum()), J.T @ psi


class LawFitter:
    """Estimator for one law. ``fit(N, D, loss)`` returns self and sets ``result_``, ``law_``, ``theta_``.

    Args:
        law: "chinchilla", "kaplan" (p-norm) or "frontier" (Effective-Frontier law, reconstruction).
        delta: Huber threshold on log-loss residuals (default 1e-3).
        n_starts: L-BFGS runs from the best-scoring this many grid starts (default ``DEFAULT_STARTS``; None: every
            start, as Epoch's notebook does: one to two CPU-minutes for Chinchilla's 4,500).
        n_bootstrap: bootstrap refits for percentile CIs (0: none).
        seed: a non-negative int; seeds the bootstrap resampling.
        p: kaplan only; None fits p, a number fixes it (1/alpha_D is Kaplan's).
        s: frontier only; soft-min sharpness, None fits it (a finite number fixes it).
        tie_coverage: frontier only; gamma_D = 1/zipf_alpha as the theory says (False: free).
        gamma_N: frontier only; None fits the capacity exponent, 1.0 is the strict reconstruction.

    Options of another law (``p`` for "chinchilla", ``s`` for "kaplan", ...) raise ``ValueError`` rather than being
    ignored; so does ``T`` in ``fit``/``predict`` for the laws of (N, D) only.

    With ``tie_coverage`` and a fitted ``s`` the frontier law is a reparametrisation of the Kaplan p-norm law
    (alpha = gamma_N (zipf_alpha - 1), beta = 1 - 1/zipf_alpha, p = s/(zipf_alpha - 1)): both reach the same
    optimum; fixing ``gamma_N`` is what makes it a stricter law.
    """

    def __init__(self, law: str = "chinchilla", *, delta: float = 1e-3, n_starts: int | None = DEFAULT_STARTS,
                 n_bootstrap: int = 0, seed: int = 0, p: float | None = None, s: float | None = None,
                 tie_coverage: bool = True, gamma_N: float | None = None) -> None:
        self.law = check_choice("law", law, FIT_LAWS)
        self.delta = check_positive("delta", delta)
        self.n_starts = None if n_starts is None else check_int("n_starts", n_starts, minimum=1)
        self.n_bootstrap = check_int("n_bootstrap", n_bootstrap, minimum=0)
        self.seed = check_int("seed", seed, minimum=0)
        self.p = None if p is None else check_positive("p", p)
        if s is not None and not (check_positive("s", s) and math.isfinite(s)):
            raise ValueError(f"s must be finite when fitting (use a large value for a near-hard min), got {s}")
        self.s, self.tie_coverage = s, bool(tie_coverage)
        self.gamma_N = None if gamma_N is None else check_positive("gamma_N", gamma_N)
        given = {"p": p is not None, "s": s is not None, "gamma_N": gamma_N is not None,
                 "tie_coverage": not tie_coverage}  # True is the default, so only False counts as given
        unused = [k for k, v in given.items() if v and _OPTION_LAW[k] != self.law]
        if unused:
            raise ValueError(f"law {self.law!r} does not use {', '.join(unused)}: "
                             + "; ".join(f"{k} is for the {_OPTION_LAW[k]!r} law only" for k in unused))

    def _make_form(self, with_steps: bool) -> Form:
        return _form(self.law, p=self.p, s=self.s, tie_coverage=self.tie_coverage, with_steps=with_steps,
                     gamma_N=self.gamma_N)

    def _check_steps(self, T: Any) -> None:
        if T is not None and self.law != "frontier":
            raise ValueError(f"T (training steps) is used only by the 'frontier' law; law {self.law!r} is a law of "
                             "(N, D): drop T")

    def fit(self, N: Any, D: Any, loss: Any, *, T: Any = None, holdout: Any = None) -> LawFitter:
        """Fit on every point not in ``holdout`` (held-out points give ``heldout_rmse``).

        Args:
            N, D, loss: [n] positive arrays (parameters, tokens, final loss).
            T: [n] training steps, frontier law only (adds the optimisation frontier).
            holdout: [n] boolean mask or integer indices of points kept out of the fit (default: none).
        """
        self._check_steps(T)
        form = self._make_form(T is not None)
        arrays = {"N": N, "D": D, "loss": loss} | ({"T": T} if T is not None else {})
        pts = check_points(1, **arrays)
        mask = _holdout_mask(holdout, len(pts["N"]))
        X = {"lN": np.log(pts["N"]), "lD": np.log(pts["D"])} | ({"lT": np.log(pts["T"])} if T is not None else {})
        y = np.log(pts["loss"])
        train = ~mask
        k = len(form.names)
        if train.sum() < k + 1:
            raise ValueError(f"law {self.law!r} has {k} parameters: need at least {k + 1} fitted points, "
                             f"got {int(train.sum())}")
        Xt = {key: v[train] for key, v in X.items()}
        theta, obj, tried = self._multistart(form, Xt, y[train])
        self.theta_, self.form_ = theta, form
        params = {key: float(v) for key, v in form.to_params(theta).items()}
        law = form.to_law(params)
        f, _ = form.forward(theta, Xt, False)
        rss, n = float(((f - y[train]) ** 2).sum()), int(train.sum())
        ci = self._bootstrap(form, Xt, y[train], theta) if self.n_bootstrap else {}
        held = None
        if mask.any():
            fh, _ = form.forward(theta, {key: v[mask] for key, v in X.items()}, False)
            held = float(np.sqrt(np.mean((fh - y[mask]) ** 2)))
        aic, bic = _information_criteria(rss, y[train], k)
        self.law_ = law
        self.result_ = FitResult(
            law=self.law, params=params, objective=obj, n_points=n, n_params=k, rss_log=rss,
            aic=aic, bic=bic,
            n_exponent=float(law.n_exponent), ci=ci, heldout_rmse=held, n_heldout=int(mask.sum()),
            n_starts=tried)
        return self

    def _multistart(self, form: Form, X, y) -> tuple[np.ndarray, float, int]:
        with _one_blas_thread():
            return self._multistart_inner(form, X, y)

    def _multistart_inner(self, form: Form, X, y) -> tuple[np.ndarray, float, int]:
        grid = form.grid
        with np.errstate(over="ignore", invalid="ignore"):
            f, _ = form.forward(grid, X, False)  # [S, n]: score every start at once
            scores = huber(f - y, self.delta)[0].sum(axis=1)
        order = np.argsort(np.where(np.isfinite(scores), scores, np.inf), kind="stable")
        starts = grid[order[: self.n_starts]] if self.n_starts else grid[order]
        best, best_obj = starts[0], math.inf
        for x0 in starts:
            theta, obj = self._local(form, X, y, x0)
            if obj < best_obj:
                best, best_obj = theta, obj
        return best, best_obj, len(starts)

    def _local(self, form: Form, X, y, x0: np.ndarray) -> tuple[np.ndarray, float]:
        x0 = np.array([np.clip(v, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
                       for v, (lo, hi) in zip(x0, form.bounds, strict=True)])
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            res = minimize(_objective, x0, args=(form, X, y, self.delta), jac=True, method="L-BFGS-B",
                           bounds=form.bounds, options={"maxiter": 2000, "ftol": 1e-15, "gtol": 1e-11})
        return res.x, float(res.fun) if np.isfinite(res.fun) else math.inf

    def _bootstrap(self, form: Form, X, y, theta: np.ndarray) -> dict[str, tuple[float, float]]:
        with _one_blas_thread():
            return self._bootstrap_inner(form, X, y, theta)

    def _bootstrap_inner(self, form: Form, X, y, theta: np.ndarray) -> dict[str, tuple[float, float]]:
        rng = np.random.default_rng(self.seed)
        n = len(y)
        draws: dict[str, list[float]] = {}
        for _ in range(self.n_bootstrap):
            idx = rng.integers(0, n, n)
            th, _ = self._local(form, {k: v[idx] for k, v in X.items()}, y[idx], theta)
            params = form.to_params(th)
            params["n_exponent"] = float(form.to_law(params).n_exponent)
            for key, v in params.items():
                draws.setdefault(key, []).append(v)
        return {k: (float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))) for k, v in draws.items()}

    def _check_fitted(self) -> None:
        if not hasattr(self, "result_"):
            raise NotFittedError("this LawFitter is not fitted yet: call fit(N, D, loss) first")

    def predict(self, N: Any, D: Any, T: Any = None) -> np.ndarray:
        """Predicted loss of the fitted law ([n] from [n] N, D and, for a frontier law fitted with T, T)."""
        self._check_fitted()
        self._check_steps(T)
        given = {"N": N, "D": D} | ({"T": T} if T is not None else {})
        shapes = {k: as_real_array(k, v).shape for k, v in given.items()}
        try:
            np.broadcast_shapes(*shapes.values())
        except ValueError:
            raise ValueError("N, D" + (" and T" if T is not None else "") + " must have one shape (or broadcast "
                             f"together), got shapes {shapes}") from None
        if T is None:
            return self.law_(N, D)
        assert isinstance(self.law_, FrontierLaw)  # _check_steps let T through for the frontier law only
        return self.law_(N, D, T)


def fit_law(name: str, *, N: Any, D: Any, loss: Any, T: Any = None, holdout: Any = None, delta: float = 1e-3,
            n_starts: int | None = DEFAULT_STARTS, n_bootstrap: int = 0, seed: int = 0, p: float | None = None,
            s: float | None = None, tie_coverage: bool = True, gamma_N: float | None = None) -> FitResult:
    """Fit law ``name`` ("chinchilla", "kaplan", "frontier") and return its :class:`FitResult`.

    Args:
        N, D, loss: [n] positive arrays (parameters, tokens, final loss); T: [n] steps (frontier law only).
        holdout: [n] boolean mask, or integer indices, of points kept out of the fit and scored (RMSE of log loss).
        Others: see :class:`LawFitter`.
    """
    fitter = LawFitter(name, delta=delta, n_starts=n_starts, n_bootstrap=n_bootstrap, seed=seed, p=p, s=s,
                       tie_coverage=tie_coverage, gamma_N=gamma_N)
    return fitter.fit(N, D, loss, T=T, holdout=holdout).result_
