"""Non-kernel mixture-proportion estimators used by :class:`paperlab.audit.SMI` (reconstructions).

arXiv 2602.01150 names "mixture modelling", "MMD and Wasserstein"; the concrete forms below are our
reconstruction, not the paper's (unknown) algorithm. All take per-point weights batched over
bootstrap replicates, ``w [n, B]``, and return ``[B]`` estimates.

- ``em``: Gaussian components with a shared covariance on PCA features; the proportion is the maximum-
  likelihood fixed point of the EM update ``pi <- mean_F pi p_N / (pi p_N + (1 - pi) p_M)``, found by
  bisection on the (monotone) derivative of the concave log-likelihood, which is where EM converges.
- ``classifier``: cross-fitted logistic regression ``g`` (member vs non-member);
  ``pi = (mean_F g - mean_M g) / (mean_N g - mean_M g)`` on held-out scores.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["crossfit_logistic", "em_proportion", "gaussian_llr", "pca_basis"]


def pca_basis(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean ``[d]`` and the top-``k`` principal directions ``[d, min(k, d)]`` of ``x [n, d]``."""
    mean = x.mean(0)
    _, _, vh = torch.linalg.svd(x - mean, full_matrices=False)
    return mean, vh[:k].T


def gaussian_llr(m: torch.Tensor, n: torch.Tensor, wm: torch.Tensor, wn: torch.Tensor, *, ridge: float = 1e-6
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-likelihood ratio ``log p_N(x) - log p_M(x) = x @ coef + intercept`` of two Gaussians with a shared
    (pooled within-set, weighted) covariance, one fit per replicate.

    Args:
        m: ``[nM, k]`` member features; n: ``[nN, k]``; wm ``[nM, B]``, wn ``[nN, B]`` weights.

    Returns:
        ``coef [k, B]``, ``intercept [B]``.
    """
    mu_m = (wm.T @ m) / wm.sum(0)[:, None]  # [B, k]
    mu_n = (wn.T @ n) / wn.sum(0)[:, None]
    k = m.shape[1]
    # weighted scatter sum_i w_i x_i x_i^T - (sum w) mu mu^T, via the flattened outer products [n, k*k]
    outer_m = (m[:, :, None] * m[:, None, :]).reshape(len(m), -1)
    outer_n = (n[:, :, None] * n[:, None, :]).reshape(len(n), -1)
    scatter = (wm.T @ outer_m + wn.T @ outer_n).reshape(-1, k, k)
    scatter -= wm.sum(0)[:, None, None] * mu_m[:, :, None] * mu_m[:, None, :]
    scatter -= wn.sum(0)[:, None, None] * mu_n[:, :, None] * mu_n[:, None, :]
    cov = scatter / (wm.sum(0) + wn.sum(0))[:, None, None]
    scale = torch.diagonal(cov, dim1=1, dim2=2).mean(1)
    cov = cov + ridge * scale[:, None, None] * torch.eye(k, dtype=m.dtype)
    coef = torch.linalg.solve(cov, (mu_n - mu_m).unsqueeze(-1)).squeeze(-1)  # [B, k]
    intercept = -0.5 * ((mu_n + mu_m) * coef).sum(1)
    return coef.T, intercept


def em_proportion(llr: torch.Tensor, w: torch.Tensor, *, iters: int = 60) -> torch.Tensor:
    """Maximum-likelihood proportion in [0, 1] of the fixed-component mixture.

    Args:
        llr: ``[nF, B]`` log-likelihood ratios ``log p_N - log p_M`` of the forget points.
        w: ``[nF, B]`` weights.

    Returns:
        ``[B]``; the derivative ``sum w (r - 1) / (1 + pi (r - 1))`` (``r = exp(llr)``) decreases in pi, so
        ``iters`` bisection steps pin the root to ``2^-iters``.
    """
    d = torch.exp(llr.clamp(-50.0, 50.0)) - 1.0

    def score(pi: torch.Tensor) -> torch.Tensor:
        return (w * d / (1.0 + pi * d)).sum(0)

    lo = torch.zeros(llr.shape[1], dtype=llr.dtype)
    hi = torch.ones_like(lo)
    at_zero, at_one = score(lo) <= 0, score(hi) >= 0
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        up = score(mid) > 0
        lo = torch.where(up, mid, lo)
        hi = torch.where(up, hi, mid)
    pi = 0.5 * (lo + hi)
    return torch.where(at_zero, torch.zeros_like(pi), torch.where(at_one, torch.ones_like(pi), pi))


def crossfit_logistic(m: np.ndarray, n: np.ndarray, f: np.ndarray, *, folds: int = 2, seed: int = 0
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Held-out probabilities ``g(x) = P(non-member | x)`` from ``folds`` logistic regressions.

    Each member/non-member point is scored by the model that did not see it; forget points get the mean of
    all fold models. Classes are balanced in the loss. Needs scikit-learn.

    Returns:
        ``(g_m [nM], g_n [nN], g_f [nF])``.
    """
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("estimator='classifier' needs scikit-learn: pip install 'paperlab[dev]' "
                          "(or scikit-learn)") from err
    rng = np.random.default_rng(seed)
    fold_m, fold_n = rng.permutation(len(m)) % folds, rng.permutation(len(n)) % folds
    g_m, g_n, g_f = np.empty(len(m)), np.empty(len(n)), np.zeros(len(f))
    for k in range(folds):
        x = np.concatenate([m[fold_m != k], n[fold_n != k]])
        y = np.concatenate([np.zeros((fold_m != k).sum()), np.ones((fold_n != k).sum())])
        clf = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced").fit(x, y)
        g_m[fold_m == k] = clf.predict_proba(m[fold_m == k])[:, 1]
        g_n[fold_n == k] = clf.predict_proba(n[fold_n == k])[:, 1]
        g_f += clf.predict_proba(f)[:, 1] / folds
    return g_m, g_n, g_f
