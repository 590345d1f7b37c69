"""Closed forms and toy constructions behind Thm 4.3 and Thm 5.1 of arXiv 2602.01148.

Both are **reconstructed statements** (the paper's equations are missing from the available text).

- Thm 4.3 (CoT under-explores): a Dirichlet policy with alpha = (kappa - (B-1)c, c, ..., c) has mean p_bar with
  KL(uniform || p_bar) = ((B-1)/B) log kappa - log B - ((B-1)/B) log c + O(1/kappa).
- Thm 5.1 (no curriculum can fail): features h_expert = [1,0,0], h_shortcut = [0,1,1], h_bad = [0,1,0], a
  log-linear policy P(h) ~ exp(theta . h) started at theta* = [10,0,0]; maximum likelihood on shortcut samples
  drives theta_2 + theta_3 -> inf and the success rate R = P(expert) -> 0, on expert samples R -> 1.
"""

from __future__ import annotations

import math

import torch

from paperlab._validate import check_choice, check_int, check_positive

__all__ = ["SHORTCUT_FEATURES", "dirichlet_mean_kl", "dirichlet_kl_closed_form", "shortcut_mle"]

SHORTCUT_FEATURES = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.0, 0.0]], dtype=torch.float64)


def dirichlet_mean_kl(n_options: int, kappa: float, c: float) -> float:
    """Exact KL(uniform_B || p_bar), p_bar = alpha / kappa with alpha = (kappa - (B-1)c, c, ..., c)."""
    b = check_int("n_options", n_options, minimum=2)
    kappa, c = check_positive("kappa", kappa), check_positive("c", c)
    if kappa <= (b - 1) * c:
        raise ValueError(f"kappa must exceed (B-1)*c = {(b - 1) * c}, got {kappa}")
    p = [(kappa - (b - 1) * c) / kappa] + [c / kappa] * (b - 1)
    return -math.log(b) - sum(math.log(x) for x in p) / b


def dirichlet_kl_closed_form(n_options: int, kappa: float, c: float) -> float:
    """Thm 4.3's leading terms: ((B-1)/B) log kappa - log B - ((B-1)/B) log c (error O(1/kappa))."""
    b = check_int("n_options", n_options, minimum=2)
    kappa, c = check_positive("kappa", kappa), check_positive("c", c)
    return (b - 1) / b * math.log(kappa) - math.log(b) - (b - 1) / b * math.log(c)


def shortcut_mle(samples: str, *, steps: int = 2000, lr: float = 0.5) -> list[float]:
    """Gradient ascent on the log-likelihood of ``samples`` ("shortcut" or "expert") from theta* = [10, 0, 0].

    Returns the success rate R = P_theta(expert) after every step (``steps + 1`` values, the first at theta*).
    """
    check_choice("samples", samples, ("shortcut", "expert"))
    check_int("steps", steps, minimum=0)
    check_positive("lr", lr)
    theta = torch.tensor([10.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    target = 1 if samples == "shortcut" else 0
    history = []
    for _ in range(steps + 1):
        logp = torch.log_softmax(SHORTCUT_FEATURES @ theta, dim=0)
        history.append(float(logp[0].detach().exp()))
        (grad,) = torch.autograd.grad(logp[target], theta)
        with torch.no_grad():
            theta += lr * grad
    return history[: steps + 1]
