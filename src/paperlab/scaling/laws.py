"""Scaling laws as small frozen dataclasses: ``law(N, D)`` (and ``T`` steps for the frontier law) -> loss.

Chinchilla (Hoffmann et al. 2022):  L = E + A / N^alpha + B / D^beta.
Kaplan p-norm (Kaplan et al. 2020): L = E + (X^p + Y^p)^(1/p), X = A / N^alpha, Y = B / D^beta. Kaplan's joint
  law [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D is the member E = 0, p = 1/alpha_D (``KaplanLaw.from_kaplan``);
  Chinchilla's sum is p = 1, and p -> inf is the max of the two terms.
Effective-Frontier law (arXiv 2602.02593; the functional form is our **reconstruction**):
  L = E + G(zipf_alpha) * k_star^(1 - zipf_alpha),  k_star = (sum_r (c_r R_r^gamma_r)^(-s))^(-1/s),
  G(zipf_alpha) = 1 / ((zipf_alpha - 1) zeta(zipf_alpha)) (the Zipf tail mass beyond k_star for a step kernel;
  other kernels only rescale the c_r). s = inf is the hard minimum (the Max-Bottleneck principle).

Names: the Zipf exponent is ``zipf_alpha`` and the optimisation bias ``opt_bias`` everywhere; ``alpha`` and
``beta`` are Chinchilla's N and D exponents only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import zeta

__all__ = ["LAWS", "ChinchillaLaw", "FrontierLaw", "KaplanLaw", "PowerLaw", "as_real_array", "frontier_tail_constant"]


def as_real_array(name: str, x: Any) -> np.ndarray:
    """``x`` (scalar, sequence, array or tensor) as float64; bool (an indicator, not a quantity), complex and
    text raise ``TypeError`` naming ``name`` (numpy would read True as 1.0 and drop an imaginary part)."""
    if x is None or isinstance(x, str | bytes):
        raise TypeError(f"{name} must be numeric, got {type(x).__name__} {x!r}")
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as err:  # ragged nested lists
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__}") from err
    kind = raw.dtype.kind
    if kind in "bc":
        raise TypeError(f"{name} must be real numbers, got {'bool' if kind == 'b' else 'complex'} values "
                        f"(dtype {raw.dtype})")
    if kind not in "iuf":
        try:
            if kind in "USV":
                raise TypeError(f"dtype {raw.dtype} is text")
            return raw.astype(float)  # an object array holding numbers
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name} must be numeric, got {type(x).__name__} of dtype {raw.dtype}") from err
    return np.asarray(x, dtype=float)


def _arr(name: str, x: Any) -> np.ndarray:
    a = as_real_array(name, x)
    if np.any(~np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {x!r}")
    return a


def frontier_tail_constant(zipf_alpha: float) -> float:
    """G = 1/((zipf_alpha - 1) zeta(zipf_alpha)): sum_{k > n} p_k ~ G n^(1 - zipf_alpha) [reconstruction]."""
    if zipf_alpha <= 1:
        raise ValueError(f"zipf_alpha must be > 1 (Zipf normalisable), got {zipf_alpha}")
    return 1.0 / ((zipf_alpha - 1.0) * float(zeta(zipf_alpha, 1)))


@dataclass(frozen=True, kw_only=True)
class _TwoResourceLaw:
    """Shared parameters and helpers of the laws in N (parameters) and D (tokens)."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float

    def terms(self, N: Any, D: Any) -> dict[str, np.ndarray]:
        """Reducible loss of each resource: ``capacity`` A/N^alpha and ``coverage`` B/D^beta."""
        N, D = _arr("N", N), _arr("D", D)
        return {"capacity": self.A / N**self.alpha, "coverage": self.B / D**self.beta}

    @property
    def n_exponent(self) -> float:
        """Compute-optimal N_opt ~ C^a with a = beta / (alpha + beta); for the p-norm law, for every p (our
        algebra: sum vs max changes prefactors only). NaN when alpha = beta = 0: a loss flat in N and D has no
        compute-optimal split."""
        total = self.alpha + self.beta
        return self.beta / total if total != 0 else math.nan

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class ChinchillaLaw(_TwoResourceLaw):
    """L = E + A / N^alpha + B / D^beta (Hoffmann et al. 2022, approach 3)."""

    def __call__(self, N: Any, D: Any) -> np.ndarray:
        """Loss for parameters ``N`` and tokens ``D`` (broadcast arrays)."""
        t = self.terms(N, D)
        return self.E + t["capacity"] + t["coverage"]


@dataclass(frozen=True, kw_only=True)
class KaplanLaw(_TwoResourceLaw):
    """L = E + ((A/N^alpha)^p + (B/D^beta)^p)^(1/p): Kaplan's joint law as a p-norm (p = 1 is Chinchilla's sum)."""

    p: float

    @classmethod
    def from_kaplan(cls, *, N_c: float = 8.8e13, D_c: float = 5.4e13, alpha_N: float = 0.076,
                    alpha_D: float = 0.095) -> KaplanLaw:
        """Kaplan 2020's L(N, D) = [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D (defaults: Kaplan's fit)."""
        return cls(E=0.0, A=N_c**alpha_N, B=D_c**alpha_D, alpha=alpha_N, beta=alpha_D, p=1.0 / alpha_D)

    def __call__(self, N: Any, D: Any) -> np.ndarray:
        t = self.terms(N, D)
        x, y = t["capacity"], t["coverage"]
        if math.isinf(self.p):
            return self.E + np.maximum(x, y)
        m = np.maximum(x, y)  # factor out the max so large p cannot overflow
        return self.E + m * ((x / m) ** self.p + (y / m) ** self.p) ** (1.0 / self.p)


@dataclass(frozen=True, kw_only=True)
class PowerLaw:
    """Single-resource law L = E + A / R^alpha (R = N, D, steps or compute)."""

    E: float
    A: float
    alpha: float

    def __call__(self, R: Any) -> np.ndarray:
        R = _arr("R", R)
        return self.E + self.A / R**self.alpha

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class FrontierLaw:
    """Effective-Frontier law [reconstruction]: L = E + G k_star^(1 - zipf_alpha), soft min of frontiers.

    Frontiers (patterns learnable under each resource): k_N = c_N N^gamma_N (capacity), k_D = c_D D^gamma_D
    (coverage; the theory has gamma_D = 1/zipf_alpha), k_T = c_T T^gamma_T (optimisation; theory
    gamma_T = 1/(zipf_alpha opt_bias)). ``s`` is the soft-min sharpness; ``s = inf`` is the hard minimum.
    Set ``c_T = None`` for a law of (N, D) only.
    """

    E: float
    zipf_alpha: float
    c_N: float
    gamma_N: float
    c_D: float
    gamma_D: float
    c_T: float | None = None
    gamma_T: float | None = None
    s: float = math.inf

    def __post_init__(self) -> None:
        if self.zipf_alpha <= 1:
            raise ValueError(f"zipf_alpha must be > 1, got {self.zipf_alpha}")
        if not self.s > 0:
            raise ValueError(f"s (soft-min sharpness) must be > 0 or inf, got {self.s}")
        if (self.c_T is None) != (self.gamma_T is None):
            raise ValueError(f"c_T and gamma_T must both be set or both None, got {self.c_T}, {self.gamma_T}")

    def frontiers(self, N: Any, D: Any, T: Any = None) -> dict[str, np.ndarray]:
        """Per-resource frontiers k_r (pattern ranks), keys ``capacity``, ``coverage`` (, ``optimization``)."""
        N, D = _arr("N", N), _arr("D", D)
        out = {"capacity": self.c_N * N**self.gamma_N, "coverage": self.c_D * D**self.gamma_D}
        if self.c_T is not None:
            if T is None:
                raise ValueError("this law has an optimisation frontier: pass T (steps)")
            out["optimization"] = self.c_T * _arr("T", T) ** self.gamma_T
        return out

    def k_star(self, N: Any, D: Any, T: Any = None) -> np.ndarray:
        """The effective frontier: soft minimum (sum_r k_r^-s)^(-1/s); hard min for s = inf."""
        ks = np.stack(np.broadcast_arrays(*self.frontiers(N, D, T).values()))
        if math.isinf(self.s):
            return ks.min(axis=0)
        lk = np.log(ks)
        m = lk.min(axis=0)
        return np.exp(m - np.log(np.exp(-self.s * (lk - m)).sum(axis=0)) / self.s)

    def __call__(self, N: Any, D: Any, T: Any = None) -> np.ndarray:
        G = frontier_tail_constant(self.zipf_alpha)
        return self.E + G * self.k_star(N, D, T) ** (1.0 - self.zipf_alpha)

    def terms(self, N: Any, D: Any, T: Any = None) -> dict[str, np.ndarray]:
        """Reducible loss each resource alone would leave: G k_r^(1 - zipf_alpha)."""
        G = frontier_tail_constant(self.zipf_alpha)
        return {r: G * k ** (1.0 - self.zipf_alpha) for r, k in self.frontiers(N, D, T).items()}

    @property
    def n_exponent(self) -> float:
        """N_opt ~ C^(gamma_D/(gamma_N + gamma_D)) for the capacity-coverage equilibrium (C = 6ND)."""
        return self.gamma_D / (self.gamma_N + self.gamma_D)

    def to_dict(self) -> dict[str, float | None]:
        return asdict(self)


LAWS: dict[str, type] = {"chinchilla": ChinchillaLaw, "kaplan": KaplanLaw, "frontier": FrontierLaw,
                         "power": PowerLaw}
