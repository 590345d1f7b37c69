"""The Symbolic Index probe and the paper's bounds (Zou, Xiong, Liu, arXiv 2602.01148, Sec. 4 and App. A.7).

Every formula here is a **reconstructed statement**: the paper's display equations are missing from the
available text and were rebuilt from its appendix proofs (checked algebraically and by the tests).

- Def 4.9   Symbolic Index I_S = max_u p(u | h, x), in [1/|V|, 1].
- Def 4.10  decision margin = top-1 logit minus top-2 logit.
- Thm 4.11  margin >= log(I_S / (1 - I_S)).
- Thm 4.12  with B valid options and p renormalised on them,
            KL(uniform || p) >= -log B - (1/B) [log I_S + (B-1) log((1 - I_S)/(B-1))]  (the B-dependent form;
            the paper's B-free simplification is wrong for B >= 3).
- Thm 4.5   at the extremal p = (1-d, d/(B-1), ...): KL = -((B-1)/B) log d - c_B (``kl_extremal``).
- Thm 4.8   E||h~_M - h*_M||^2 <= ((1 - L^(2M)) / (1 - L^2)) d sigma^2 (``compounding_error_bound``).
- App. A.7  noise curve A(sigma) = Phi(margin / (sqrt(C) sigma)) (``noise_curve``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import torch
from scipy.optimize import minimize_scalar

from paperlab._validate import check_in_range, check_int, check_positive

__all__ = [
    "compounding_error_bound",
    "decision_margin",
    "exploration_kl_lower_bound",
    "fit_noise_ratio",
    "kl_extremal",
    "kl_to_uniform",
    "margin_lower_bound",
    "noise_curve",
    "restrict",
    "symbolic_index",
]

_SUM_TOL = 1e-4


def _tensor(name: str, x, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``torch.as_tensor(x, dtype=dtype)``; None, text and other non-numeric input raise ``TypeError`` naming
    ``name`` (torch's own errors name no argument)."""
    if x is None or isinstance(x, str | bytes):
        raise TypeError(f"{name} must be a number, sequence, array or tensor of numbers, got {type(x).__name__} "
                        f"{x!r}")
    try:
        return torch.as_tensor(x, dtype=dtype)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{name} must be numeric, got {type(x).__name__} ({err})") from err


def _candidate_ids(candidates, n_options: int, lead: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """``candidates`` as long ids ``[..., K]`` (a ``[K]`` list expanded to ``lead + [K]``), each in
    ``[0, n_options)`` and distinct within a row; floats must be whole numbers (a cast would truncate 1.7 to 1)."""
    raw = _tensor("candidates", candidates)
    if raw.dtype == torch.bool or raw.is_complex():
        raise TypeError(f"candidates must be integer ids, got dtype {raw.dtype}")
    if raw.is_floating_point():
        bad = raw[~(torch.isfinite(raw) & (raw == raw.round()))]
        if bad.numel():
            raise ValueError(f"candidates must be integer ids, got {bad.numel()} non-integer value(s) such as "
                             f"{bad.flatten()[:3].tolist()}")
    idx = raw.to(dtype=torch.long, device=device)
    if idx.dim() == 1:
        idx = idx.expand(*lead, idx.shape[0])
    if tuple(idx.shape[:-1]) != tuple(lead) or idx.shape[-1] == 0:
        raise ValueError(f"candidates must be [K] or {list(lead)} + [K] with K >= 1, got {list(idx.shape)}")
    out = (idx < 0) | (idx >= n_options)
    if out.any():
        raise ValueError(f"candidates must be ids in [0, {n_options}), got {idx[out].unique().tolist()[:5]}")
    ordered = idx.sort(-1).values
    repeated = ordered[..., 1:] == ordered[..., :-1]
    if repeated.any():
        dup = ordered[..., 1:][repeated].unique().tolist()[:5]
        raise ValueError(f"candidates must be distinct ids, got duplicate id(s) {dup}: a repeated option would be "
                         "counted twice")
    return idx


def _as_probs(probs, name: str = "probs") -> torch.Tensor:
    p = _tensor(name, probs, dtype=torch.float64 if not torch.is_tensor(probs) else None)
    if not p.is_floating_point() or p.dim() == 0:
        raise ValueError(f"{name} must be a floating array [..., V] with V >= 1, got shape {tuple(p.shape)}")
    if not torch.isfinite(p).all() or (p < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    total = p.sum(-1)
    if ((total - 1).abs() > _SUM_TOL).any():
        worst = float(total.flatten()[(total - 1).abs().flatten().argmax()])
        raise ValueError(f"{name} must sum to 1 over the last axis (tolerance {_SUM_TOL}), got a row summing to "
                         f"{worst:.6g}")
    return p


def restrict(probs, candidates: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """Restrict a distribution to candidate ids and renormalise.

    Args:
        probs: ``[..., V]`` probabilities (rows sum to 1).
        candidates: ``[K]`` integer ids shared by all rows, or ``[..., K]`` ids per row; ids lie in ``[0, V)``
            and are distinct within a row (a repeated id would count its option twice: ValueError).
    Returns:
        ``[..., K]`` probabilities summing to 1 (rows with no mass on the candidates raise ValueError).
    """
    p = _as_probs(probs)
    idx = _candidate_ids(candidates, p.shape[-1], tuple(p.shape[:-1]), p.device)
    sub = p.gather(-1, idx)
    mass = sub.sum(-1, keepdim=True)
    if (mass <= 0).any():
        raise ValueError("a row puts zero probability on all candidates; cannot renormalise")
    return sub / mass


def _top_p(p: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus truncation: keep the smallest top set with mass >= top_p, renormalise (sorted, [..., V])."""
    sorted_p, _ = p.sort(-1, descending=True)
    before = sorted_p.cumsum(-1) - sorted_p  # mass strictly above each entry
    kept = torch.where(before < top_p, sorted_p, torch.zeros_like(sorted_p))
    return kept / kept.sum(-1, keepdim=True)


def symbolic_index(probs, *, candidates: Sequence[int] | torch.Tensor | None = None,
                   top_p: float | None = None) -> torch.Tensor:
    """Symbolic Index I_S = max probability (Def 4.9, reconstructed statement).

    Args:
        probs: ``[..., V]`` probabilities; rows must sum to 1 (else ValueError).
        candidates: optional ids (``[K]`` or ``[..., K]``): restrict to them and renormalise first.
        top_p: optional nucleus truncation (the paper used 0.95), renormalised, applied after restriction.
    Returns:
        ``[...]`` values in [1/K, 1] (K = number of candidates, or V).
    """
    p = restrict(probs, candidates) if candidates is not None else _as_probs(probs)
    if top_p is not None:
        check_in_range("top_p", top_p, 0.0, 1.0, low_open=True)
        p = _top_p(p, top_p)
    return p.max(-1).values


def decision_margin(logits, *, candidates: Sequence[int] | torch.Tensor | None = None) -> torch.Tensor:
    """Top-1 minus top-2 logit (Def 4.10), optionally over candidate ids only. ``[..., V] -> [...]``.

    ``logits`` are real numbers (bool and complex raise ``TypeError``); ``candidates`` are distinct integer ids
    in ``[0, V)``, ``[K]`` or ``[..., K]`` (as for :func:`restrict`).
    """
    z = _tensor("logits", logits)
    if z.dtype == torch.bool or z.is_complex():
        raise TypeError(f"logits must be real numbers, got dtype {z.dtype} (shape {list(z.shape)})")
    if z.dim() == 0:
        raise ValueError("logits must be [..., V] with V >= 2 options on the last axis, got a 0-d value")
    if candidates is not None:
        z = z.gather(-1, _candidate_ids(candidates, z.shape[-1], tuple(z.shape[:-1]), z.device))
    if z.shape[-1] < 2:
        raise ValueError(f"decision_margin needs at least 2 options on the last axis, got shape {list(z.shape)}")
    top = z.topk(2, dim=-1).values
    return top[..., 0] - top[..., 1]


def _as_index(i_s, low: float, name: str = "i_s") -> torch.Tensor:
    if isinstance(i_s, bool) or (torch.is_tensor(i_s) and i_s.dtype == torch.bool):
        raise TypeError(f"{name} must be a probability in [{low:.6g}, 1], got bool {i_s!r}")
    x = _tensor(name, i_s, dtype=torch.float64)
    bad = ~torch.isfinite(x) | (x < low - 1e-12) | (x > 1 + 1e-12) | (x <= 0)
    if bad.any():
        raise ValueError(f"{name} must lie in [{low:.6g}, 1], got {x[bad].flatten()[0].item():.6g}")
    return x.clamp(max=1.0)


def margin_lower_bound(i_s) -> torch.Tensor:
    """Thm 4.11 (reconstructed statement): margin >= log(I_S / (1 - I_S)), computed as log I_S - log1p(-I_S).

    Vacuous (<= 0) for I_S <= 1/2; +inf at I_S = 1. ``i_s`` must lie in (0, 1] (else ValueError).
    """
    x = _as_index(i_s, 0.0)
    return x.log() - torch.log1p(-x)


def exploration_kl_lower_bound(i_s, n_options: int) -> torch.Tensor:
    """Thm 4.12 (reconstructed statement, B-dependent form): the least KL(uniform_B || p) given I_S = max p.

    KL >= -log B - (1/B) [log I_S + (B-1) log((1 - I_S)/(B-1))], with equality when the other B-1 options share
    1 - I_S equally; 0 at I_S = 1/B, +inf at I_S = 1. ``i_s`` must lie in [1/B, 1] (else ValueError).
    """
    b = check_int("n_options", n_options, minimum=2)
    x = _as_index(i_s, 1.0 / b)
    rest = torch.where(x < 1, (1 - x) / (b - 1), torch.ones_like(x))
    val = -math.log(b) - (x.log() + (b - 1) * rest.log()) / b
    val = torch.where(x < 1, val, torch.full_like(x, math.inf))
    return val.clamp(min=0.0)  # rounding near I_S = 1/B


def kl_to_uniform(probs, *, candidates: Sequence[int] | torch.Tensor | None = None) -> torch.Tensor:
    """KL(uniform over the B options || p restricted to them) = -log B - (1/B) sum_i log p_i. ``[..., V] -> [...]``.

    Args:
        probs: ``[..., V]`` probabilities.
        candidates: the valid options (``[B]`` or ``[..., B]`` ids); all V entries if None.
    """
    p = restrict(probs, candidates) if candidates is not None else _as_probs(probs)
    b = p.shape[-1]
    return -math.log(b) - p.log().mean(-1)


def kl_extremal(n_options: int, delta: float) -> float:
    """Thm 4.5 (reconstructed statement): KL(uniform || p_delta) at p_delta = (1-delta, delta/(B-1), ...).

    Equals -log B - (1/B) log(1-delta) - ((B-1)/B) log(delta/(B-1)); its slope in -log(delta) is (B-1)/B, not
    the paper's 1/2 (which holds only at B = 2).
    """
    b = check_int("n_options", n_options, minimum=2)
    d = check_in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    if b < 2**53:  # b is exact as a float
        return -math.log(b) - math.log1p(-d) / b - (b - 1) / b * math.log(d / (b - 1))
    # b beyond float range (10**400 would overflow ``float / b``): the same terms in logs, 1/b may underflow to 0
    log_b, inv_b = math.log(b), math.exp(-math.log(b))
    return -log_b - math.log1p(-d) * inv_b - (1.0 - inv_b) * (math.log(d) - math.log(b - 1))


def compounding_error_bound(lipschitz: float, steps: int, dim: int, sigma: float) -> float:
    """Thm 4.8 (reconstructed statement): ((1 - L^(2M)) / (1 - L^2)) d sigma^2, = M d sigma^2 at L = 1.

    An upper bound on E||h~_M - h*_M||^2 for an L-Lipschitz transition with N(0, sigma^2 I_d) noise at each of
    M steps; equality for f = L x orthogonal. The bound grows like L^(2M - 2): where it exceeds the float64 range
    (e.g. L = 2 over 10**6 steps) the result is ``inf``, still a true (vacuous) upper bound, as for any float
    overflow; it is 0 for sigma = 0 or M = 0 and d sigma^2 for M = 1, whatever L.
    """
    lip = check_positive("lipschitz", lipschitz, allow_zero=True)
    m = check_int("steps", steps, minimum=0)
    d = check_int("dim", dim, minimum=1)
    s = check_positive("sigma", sigma, allow_zero=True)
    try:
        growth = float(m) if abs(lip - 1.0) < 1e-12 else (1 - lip ** (2 * m)) / (1 - lip ** 2)
    except OverflowError:  # L > 1 and L^2 or L^(2M) beyond float64: sum_{k<M} L^(2k) in logs
        if m == 0 or s == 0:
            return 0.0
        log_growth = 2 * (m - 1) * math.log(lip) + math.log1p(-lip ** (-2 * m)) - math.log1p(-lip ** -2)
        log_bound = log_growth + math.log(d) + 2 * math.log(s)
        return math.exp(log_bound) if log_bound < math.log(sys.float_info.max) else math.inf
    return growth * d * s * s


def noise_curve(sigma, *, margin, scale=1.0) -> torch.Tensor:
    """App. A.7 (reconstructed statement): A(sigma) = mean_i Phi(margin_i / (scale_i sigma)).

    Args:
        sigma: ``[S]`` noise levels (>= 0; A(0) = 1 for positive margins).
        margin: scalar or ``[N]`` per-example decision margins.
        scale: sqrt(C), scalar or ``[N]`` (for a two-class linear head, ||w_1 - w_2||).
    Returns:
        ``[S]`` predicted accuracy ratios Acc(sigma) / Acc(0).
    """
    s = _tensor("sigma", sigma, torch.float64).reshape(-1, 1)
    if (s < 0).any() or not torch.isfinite(s).all():
        raise ValueError("sigma must be finite and >= 0")
    m = _tensor("margin", margin, torch.float64).reshape(1, -1)
    if m.numel() == 0:
        raise ValueError("margin must hold at least one value (the mean over no examples is undefined)")
    if not torch.isfinite(m).all():
        raise ValueError(f"margin must be finite, got {int((~torch.isfinite(m)).sum())} NaN/inf value(s) "
                         "(a NaN margin would turn into a finite accuracy at sigma = 0)")
    c = _tensor("scale", scale, torch.float64).reshape(1, -1)
    if (c <= 0).any() or not torch.isfinite(c).all():
        raise ValueError("scale (sqrt(C)) must be finite and > 0")
    if c.shape[1] not in (1, m.shape[1]) and m.shape[1] != 1:
        raise ValueError(f"margin and scale must have one length N (or be scalars), got margin [{m.shape[1]}] and "
                         f"scale [{c.shape[1]}]")
    z = m / (c * s)  # inf/nan at sigma = 0 handled below
    phi = 0.5 * (1 + torch.erf(z / math.sqrt(2)))
    phi = torch.where(s == 0, (m > 0).to(phi.dtype) + 0.5 * (m == 0).to(phi.dtype), phi)
    return phi.mean(-1)


def fit_noise_ratio(sigmas: Sequence[float], ratios: Sequence[float]) -> tuple[float, float]:
    """Fit the one-parameter curve A(sigma) = Phi(r / sigma) by least squares; return (r, R^2).

    Args:
        sigmas: noise levels, finite and >= 0 (the sigma = 0 points carry no information and are ignored).
        ratios: measured Acc(sigma) / Acc(0) at those levels (finite).
    """
    s = _tensor("sigmas", sigmas, torch.float64)
    a = _tensor("ratios", ratios, torch.float64)
    if s.shape != a.shape or s.dim() != 1:
        raise ValueError(f"sigmas and ratios must be 1-d of one length, got {list(s.shape)} and {list(a.shape)}")
    if not torch.isfinite(s).all() or (s < 0).any():
        bad = s[~torch.isfinite(s) | (s < 0)]
        raise ValueError(f"sigmas must be finite and >= 0, got {bad.tolist()[:3]}")
    if not torch.isfinite(a).all():
        raise ValueError(f"ratios must be finite, got {a.tolist()}")
    keep = s > 0
    if keep.sum() < 2:
        raise ValueError("fit_noise_ratio needs at least two sigma > 0 points")
    s, a = s[keep], a[keep]

    def sse(log_r: float) -> float:
        return float(((noise_curve(s, margin=math.exp(log_r)) - a) ** 2).sum())

    lo, hi = math.log(float(s.min()) * 1e-3), math.log(float(s.max()) * 1e3)
    res = minimize_scalar(sse, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    r = math.exp(res.x)
    tot = float(((a - a.mean()) ** 2).sum())
    r2 = 1 - res.fun / tot if tot > 0 else float("nan")
    return r, r2
