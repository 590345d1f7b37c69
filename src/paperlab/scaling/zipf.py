"""Zipf-pattern simulator of the Effective-Frontier theory (arXiv 2602.02593) **[reconstruction]**.

Patterns k = 1, 2, ... have probabilities p_k = k^(-zipf_alpha) / zeta(zipf_alpha) (finite K: normalised over
k <= K). The reducible loss is dL = sum_k p_k q_k with a per-pattern residual q_k in [0, 1] per resource
(all reconstructions of the paper's capacity, coverage and optimisation bottlenecks):

- capacity N:      q_k = 1[k > c_N N^gamma]                      -> dL ~ N^(-gamma (zipf_alpha - 1))
- coverage D:      q_k = (1 - p_k)^D  (``coverage="poisson"``: exp(-D p_k))  -> D^(-(zipf_alpha - 1)/zipf_alpha)
- optimisation T:  q_k = exp(-lr_mu p_k^opt_bias T)             -> T^(-(zipf_alpha - 1)/(zipf_alpha opt_bias))

Combining (section 1.4): ``"product"`` learns a pattern only if every resource allows it,
q_k = 1 - prod_r (1 - q_k^(r)); ``"hard"`` puts a step at the smallest frontier k_star = min_r k_r (the
Max-Bottleneck principle: dL is then exactly the max of the single-resource tail masses); ``"soft"`` uses
k_star = (sum_r k_r^(-s))^(-1/s). Frontiers: k_N = c_N N^gamma, k_D = (D / zeta)^(1/zipf_alpha),
k_T = (lr_mu T)^(1/(zipf_alpha opt_bias)) / zeta^(1/zipf_alpha).

K = None is the infinite-K mode: exact sums for k <= K0, quadrature beyond (midpoint-corrected, in
u = k^(1 - zipf_alpha); relative error ~ zipf_alpha^2 / (24 K0^2)), Hurwitz zeta for step tails. Finite K
biases slopes once a frontier nears K; ``expected_loss`` refuses frontiers >= K unless ``allow_saturation``.
"""

from __future__ import annotations

import math
from typing import Any, overload

import numpy as np
from scipy.integrate import quad
from scipy.special import zeta

from paperlab._validate import check_choice, check_int, check_positive

__all__ = ["compute_optimal_exponents", "expected_loss", "forward_map", "frontiers", "inverse_map",
           "log_log_slope", "monte_carlo_loss", "tail_mass", "tail_sum_quadrature", "theory_exponents",
           "zipf_probs"]

K0_DEFAULT = 10**6
_K_MAX = 10**7  # finite-K sums are materialised; keep them in memory


def _check_alpha(zipf_alpha: float) -> float:
    zipf_alpha = check_positive("zipf_alpha", zipf_alpha)
    if zipf_alpha <= 1:
        raise ValueError(f"zipf_alpha must be > 1 (p_k = k^-alpha is not normalisable and exponents vanish as "
                         f"alpha -> 1), got {zipf_alpha}")
    return zipf_alpha


@overload
def _check_K(K: int) -> int: ...


@overload
def _check_K(K: None) -> None: ...


def _check_K(K: int | None) -> int | None:
    if K is None:
        return None
    check_int("K", K, minimum=1)
    if K > _K_MAX:
        raise ValueError(f"K must be <= {_K_MAX} (finite sums are materialised); use K=None for infinite K, got {K}")
    return K


def zipf_probs(zipf_alpha: float, K: int) -> np.ndarray:
    """[K] probabilities p_k proportional to k^-zipf_alpha, k = 1..K, normalised over k <= K."""
    _check_alpha(zipf_alpha)
    w = np.arange(1, _check_K(K) + 1, dtype=np.float64) ** -zipf_alpha
    return w / w.sum()


def tail_mass(n: Any, zipf_alpha: float, *, K: int | None = None) -> np.ndarray:
    """sum_{k > n} p_k for integer n >= 0 (K = None: infinite K, exact via the Hurwitz zeta function)."""
    _check_alpha(zipf_alpha)
    n = np.floor(np.asarray(n, dtype=float))
    if K is None:
        return zeta(zipf_alpha, n + 1.0) / zeta(zipf_alpha, 1.0)
    p = zipf_probs(zipf_alpha, K)
    cum = np.concatenate([[0.0], np.cumsum(p)])
    return 1.0 - cum[np.clip(n, 0, K).astype(int)]


def tail_sum_quadrature(n0: int, zipf_alpha: float, q: Any = None, *, upper: float = math.inf) -> float:
    """sum_{n0 < k <= upper} k^-zipf_alpha q(k) by quadrature of the midpoint-shifted integral.

    The integral of x^-alpha q(x) over [n0 + 1/2, upper + 1/2] is taken in u = x^(1-alpha) (a log-like change
    of variable that maps the infinite tail to a bounded interval). ``q`` maps an array of k to residuals in
    [0, 1] (None: 1). Unnormalised (divide by zeta for probability mass).
    """
    a = _check_alpha(zipf_alpha)
    u_hi = (n0 + 0.5) ** (1.0 - a)
    u_lo = 0.0 if math.isinf(upper) else (upper + 0.5) ** (1.0 - a)
    if u_lo >= u_hi:
        return 0.0

    def f(u: float) -> float:
        if q is None or u <= 0.0:
            return 1.0
        return float(q(np.array([u ** (1.0 / (1.0 - a))]))[0])

    val, _ = quad(f, u_lo, u_hi, limit=400, epsabs=0.0, epsrel=1e-10)
    return val / (a - 1.0)


def frontiers(*, zipf_alpha: float, N: float | None = None, D: float | None = None, T: float | None = None,
              opt_bias: float = 1.0, gamma: float = 1.0, c_N: float = 1.0, lr_mu: float = 1.0) -> dict[str, float]:
    """Frontier ranks k_r of the given resources (keys ``capacity``, ``coverage``, ``optimization``)."""
    z = float(zeta(_check_alpha(zipf_alpha), 1.0))
    out = {}
    if N is not None:
        out["capacity"] = c_N * check_positive("N", N) ** gamma
    if D is not None:
        out["coverage"] = (check_positive("D", D) / z) ** (1.0 / zipf_alpha)
    if T is not None:
        out["optimization"] = (lr_mu * check_positive("T", T)) ** (1.0 / (zipf_alpha * opt_bias)) / z ** (
            1.0 / zipf_alpha)
    if not out:
        raise ValueError("pass at least one of N, D, T")
    return out


def _residual_fn(zipf_alpha, D, T, opt_bias, lr_mu, coverage, norm):
    def r(k: np.ndarray) -> np.ndarray:
        p = k**-zipf_alpha / norm
        keep = np.ones_like(p)
        if D is not None:
            unseen = np.exp(-D * p) if coverage == "poisson" else np.exp(D * np.log1p(-p))
            keep *= 1.0 - unseen
        if T is not None:
            keep *= 1.0 - np.exp(-lr_mu * p**opt_bias * T)
        return 1.0 - keep

    return r


def expected_loss(*, zipf_alpha: float, N: float | None = None, D: float | None = None, T: float | None = None,
                  opt_bias: float = 1.0, gamma: float = 1.0, c_N: float = 1.0, lr_mu: float = 1.0,
                  K: int | None = None, combine: str = "product", s: float = 4.0, coverage: str = "binomial",
                  K0: int = K0_DEFAULT, allow_saturation: bool = False) -> float:
    """Exact, noise-free reducible loss dL(N, D, T) (any resource may be None = unlimited).

    Args: see the module docstring; ``combine`` in {"product", "hard", "soft"}, ``s`` for "soft".
    Returns: dL as a float (normalised pattern mass, so dL <= 1).
    """
    _check_alpha(zipf_alpha)
    check_choice("combine", combine, ("product", "hard", "soft"))
    check_choice("coverage", coverage, ("binomial", "poisson"))
    K = _check_K(K)
    fr = frontiers(zipf_alpha=zipf_alpha, N=N, D=D, T=T, opt_bias=opt_bias, gamma=gamma, c_N=c_N, lr_mu=lr_mu)
    if K is not None and not allow_saturation and max(fr.values()) >= K:
        raise ValueError(f"a frontier reaches K={K} ({ {k: round(v, 1) for k, v in fr.items()} }): finite-K bias "
                         "makes losses fall faster than the power law; use K=None or allow_saturation=True")
    if combine != "product":
        ks = np.array(list(fr.values()))
        k_star = ks.min() if combine == "hard" else float((ks**-s).sum() ** (-1.0 / s))
        return float(tail_mass(k_star, zipf_alpha, K=K))
    kmax = math.inf if N is None else math.floor(fr["capacity"])
    if K is not None:
        kmax = min(kmax, K)
        norm = float((np.arange(1, K + 1, dtype=float) ** -zipf_alpha).sum())
    else:
        norm = float(zeta(zipf_alpha, 1.0))
    beyond = 0.0 if math.isinf(kmax) else float(tail_mass(kmax, zipf_alpha, K=K))
    if D is None and T is None:
        return beyond
    r = _residual_fn(zipf_alpha, D, T, opt_bias, lr_mu, coverage, norm)
    n_exact = int(min(kmax, K0 if K is None else K))
    k = np.arange(1, n_exact + 1, dtype=float)
    inside = float((k**-zipf_alpha * r(k)).sum()) / norm
    if n_exact < kmax:  # only in infinite-K mode
        inside += tail_sum_quadrature(n_exact, zipf_alpha, r, upper=kmax) / norm
    return beyond + inside


def monte_carlo_loss(*, zipf_alpha: float, K: int, D: int, N: float | None = None, T: float | None = None,
                     opt_bias: float = 1.0, gamma: float = 1.0, c_N: float = 1.0, lr_mu: float = 1.0,
                     seed: int = 0) -> float:
    """One finite-size draw of dL: D Zipf samples (inverse CDF over k <= K), seen patterns learned.

    Capacity keeps the floor(c_N N^gamma) most frequent seen patterns; T steps leave the residual
    exp(-lr_mu (n_k/D)^opt_bias T) on a kept pattern seen n_k times. Returns sum_k p_k q_k.
    """
    p = zipf_probs(zipf_alpha, K)
    check_int("D", D, minimum=1)
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(p)
    draws = np.minimum(np.searchsorted(cdf, rng.random(D) * cdf[-1], side="right"), K - 1)
    counts = np.bincount(draws, minlength=K)
    q = np.where(counts > 0, 0.0, 1.0)
    if N is not None:
        cap = math.floor(c_N * check_positive("N", N) ** gamma)
        order = np.argsort(-counts, kind="stable")  # most frequent first; ties by rank
        q[order[cap:]] = 1.0
    if T is not None:
        learned = q == 0.0
        q[learned] = np.exp(-lr_mu * (counts[learned] / D) ** opt_bias * check_positive("T", T))
    return float((p * q).sum())


def theory_exponents(zipf_alpha: float, *, opt_bias: float = 1.0, gamma: float = 1.0) -> dict[str, float]:
    """Closed-form decay exponents (dL ~ R^-e) [reconstruction]."""
    a = _check_alpha(zipf_alpha)
    check_positive("opt_bias", opt_bias)
    return {"capacity": gamma * (a - 1.0), "coverage": (a - 1.0) / a, "optimization": (a - 1.0) / (a * opt_bias)}


def compute_optimal_exponents(*, zipf_alpha: float, gamma_N: float, gamma_X: float) -> dict[str, float]:
    """Capacity vs X equilibrium with C ~ N X: N_opt ~ C^n, X_opt ~ C^x, dL_opt ~ C^-loss [reconstruction]."""
    a = _check_alpha(zipf_alpha)
    tot = check_positive("gamma_N", gamma_N) + check_positive("gamma_X", gamma_X)
    return {"n": gamma_X / tot, "x": gamma_N / tot, "loss": (a - 1.0) * gamma_N * gamma_X / tot}


def inverse_map(a_N: float, b_D: float) -> tuple[float, float]:
    """Fitted Chinchilla exponents (a_N on N, b_D on D) -> (zipf_alpha, gamma): alpha = 1/(1-b_D), gamma =
    a_N/(alpha-1), assuming coverage-limited data (gamma_D = 1/alpha) [reconstruction]."""
    check_positive("a_N", a_N)
    if not 0 < b_D < 1:
        raise ValueError(f"b_D must lie in (0, 1) for the coverage map, got {b_D}")
    zipf_alpha = 1.0 / (1.0 - b_D)
    return zipf_alpha, a_N / (zipf_alpha - 1.0)


def forward_map(zipf_alpha: float, gamma: float) -> tuple[float, float]:
    """(zipf_alpha, gamma) -> (a_N, b_D) = (gamma (alpha - 1), (alpha - 1)/alpha); inverse of ``inverse_map``."""
    a = _check_alpha(zipf_alpha)
    return check_positive("gamma", gamma) * (a - 1.0), (a - 1.0) / a


def log_log_slope(x: Any, y: Any) -> float:
    """Least-squares slope of log y on log x (x, y: [n] positive, n >= 2)."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if lx.size < 2 or lx.shape != ly.shape:
        raise ValueError(f"need two equal-length arrays of >= 2 points, got {lx.shape} and {ly.shape}")
    return float(np.polyfit(lx, ly, 1)[0])
