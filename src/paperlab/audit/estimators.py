"""The mixture-proportion estimators of :class:`paperlab.audit.SMI`, one class each, and their registry.

Reconstructions (arXiv 2602.01150 names kernel MMD, Wasserstein distances and mixture modelling; the forms are
ours, not the paper's unknown algorithm). ``SMI`` does what every estimator shares:
standardising, kernel blocks, the identifiability test, class weights, bootstrap counts and the residual. An
estimator adds only its own part, for weights ``w = (wF, wM, wN)``, each ``[n, B]`` (one column per bootstrap
replicate):

- ``fit``: scores of the member and non-member references (their AUC is reported);
- ``forget_scores``: what ``proportion`` needs of the forget set;
- ``proportion``: the unclipped estimates ``[B]``;
- ``bootstrap_range``: the percentile range of a pooled estimate (default: the percentiles of every
  replicate's estimate; SMI's other intervals and ``per_class`` use every replicate).

A new estimator is one subclass of :class:`MixtureEstimator` and one entry in :data:`ESTIMATORS`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch

from paperlab._validate import check_choice
from paperlab.audit.base import auc
from paperlab.audit.kernels import mixture_estimate
from paperlab.audit.mixture import crossfit_logistic, em_proportion, gaussian_llr, pca_basis
from paperlab.audit.w1 import w1_proportion, w1_range

__all__ = ["ESTIMATORS", "EnergyDistance", "GaussianEM", "KernelMeanMatching", "LogisticCrossFit",
           "MixtureEstimator", "Wasserstein1", "get_estimator", "witness_scores"]

_Blocks = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
_References = tuple[np.ndarray | None, np.ndarray | None, float]


class MixtureEstimator(ABC):
    """One SMI estimator; ``SMI.fit`` makes a fresh instance, which keeps what it learned from the references.

    Class attributes:
        kernel: the kernel this estimator needs (``None``: SMI's ``kernel`` option).
        replicate_kernel_means: bootstrap replicates need the six weighted kernel means (otherwise they are
            computed for the full sample only, for the residual).
    """

    kernel: ClassVar[str | None] = None
    replicate_kernel_means: ClassVar[bool] = False

    @abstractmethod
    def fit(self, member: torch.Tensor, nonmember: torch.Tensor, blocks: _Blocks, *, n_components: int, seed: int
            ) -> _References:
        """Learn from the standardised references ``member [nM, d]``, ``nonmember [nN, d]`` (fp64).

        Args:
            blocks: kernel blocks ``(K_MM [nM, nM], K_NN [nN, nN], K_MN [nM, nN])``; valid only during the call.
            n_components, seed: SMI's options of the same names.

        Returns:
            ``(s_m [nM], s_n [nN], auc)``: reference scores (higher = more non-member-like) and their AUC;
            ``(None, None, nan)`` when the scores depend on the forget set.
        """

    @abstractmethod
    def forget_scores(self, forget: torch.Tensor, k_fm: torch.Tensor, k_fn: torch.Tensor
                      ) -> tuple[dict[str, Any], float]:
        """``(scores, auc)`` of the standardised forget set ``forget [nF, d]`` (kernel blocks ``K_FM [nF, nM]``,
        ``K_FN [nF, nN]``): what :meth:`proportion` reads, and the references' AUC under this audit's score."""

    @abstractmethod
    def proportion(self, means: tuple[torch.Tensor, ...] | None, w: tuple[torch.Tensor, ...],
                   scores: dict[str, Any]) -> np.ndarray:
        """Unclipped estimates ``[B]`` for fp64 weights ``w = (wF, wM, wN)``, each ``[n, B]``; ``means``: the six
        kernel means ``[B]`` (``kbar(F,N), kbar(F,M), kbar(M,N), kbar(M,M), kbar(N,N), kbar(F,F)``), ``None`` on
        replicates unless ``replicate_kernel_means``."""

    def bootstrap_range(self, rows: tuple[np.ndarray, ...], q: np.ndarray, *, wm0: np.ndarray, wn0: np.ndarray,
                        scores: dict[str, Any], replicates: Callable[[tuple[np.ndarray, ...]], np.ndarray]
                        ) -> tuple[float, float]:
        """Percentiles ``q [2]`` of the clipped replicate estimates (NaN replicates dropped; NaN if none is left).

        ``rows``: the multinomial bootstrap counts of F, M and N, ``int64 [B, n]`` each
        (:func:`~paperlab.audit.base.resample_count_rows`); ``replicates(counts)`` gives the unclipped estimates
        for counts ``[n, B]``; ``wm0``, ``wn0`` are the class weights.
        """
        reps = np.clip(replicates(tuple(r.T.astype(float) for r in rows)), 0.0, 1.0)
        reps = reps[np.isfinite(reps)]
        if not len(reps):
            return math.nan, math.nan
        low, high = np.quantile(reps, q)
        return float(low), float(high)


def witness_scores(blocks: _Blocks) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out kernel witness ``f(x) = kbar(x, N) - kbar(x, M)`` of the references (matching the
    U-statistics) from ``(K_MM, K_NN, K_MN)``: ``(s_m [nM], s_n [nN])``, higher = more non-member-like."""
    k_mm, k_nn, k_mn = blocks
    nm, nn_ = len(k_mm), len(k_nn)
    s_m = (k_mn.sum(1) / nn_ - (k_mm.sum(1) - k_mm.diagonal()) / (nm - 1)).numpy()
    s_n = ((k_nn.sum(1) - k_nn.diagonal()) / (nn_ - 1) - k_mn.sum(0) / nm).numpy()
    return s_m, s_n


class _Witness(MixtureEstimator):
    """Scores by the kernel witness (:func:`witness_scores`)."""

    def fit(self, member: torch.Tensor, nonmember: torch.Tensor, blocks: _Blocks, *, n_components: int, seed: int
            ) -> _References:
        self.s_m, self.s_n = witness_scores(blocks)
        self.auc = auc(self.s_n, self.s_m)
        return self.s_m, self.s_n, self.auc

    def forget_scores(self, forget: torch.Tensor, k_fm: torch.Tensor, k_fn: torch.Tensor
                      ) -> tuple[dict[str, Any], float]:
        return {"f": (k_fn.mean(1) - k_fm.mean(1)).numpy()}, self.auc


class KernelMeanMatching(_Witness):
    """``mmd``: the closed-form minimiser of ``MMD(F, pi N + (1 - pi) M)`` (:func:`~paperlab.audit.kernels.
    mixture_estimate`)."""

    replicate_kernel_means = True

    def proportion(self, means: tuple[torch.Tensor, ...] | None, w: tuple[torch.Tensor, ...],
                   scores: dict[str, Any]) -> np.ndarray:
        assert means is not None  # replicate_kernel_means: SMI computes them for every batch
        return mixture_estimate(*means)[0].numpy()


class EnergyDistance(KernelMeanMatching):
    """``energy``: :class:`KernelMeanMatching` with ``k(x, y) = -|x - y|`` (the energy distance)."""

    kernel = "energy"


class Wasserstein1(_Witness):
    """``w1``: the 1-D Wasserstein minimiser on the witness scores (:mod:`paperlab.audit.w1`)."""

    def proportion(self, means: tuple[torch.Tensor, ...] | None, w: tuple[torch.Tensor, ...],
                   scores: dict[str, Any]) -> np.ndarray:
        wf, wm, wn = (x.numpy() for x in w)
        return w1_proportion(scores["f"], self.s_m, self.s_n, wf, wm, wn)

    def bootstrap_range(self, rows: tuple[np.ndarray, ...], q: np.ndarray, *, wm0: np.ndarray, wn0: np.ndarray,
                        scores: dict[str, Any], replicates: Callable[[tuple[np.ndarray, ...]], np.ndarray]
                        ) -> tuple[float, float]:
        """The same range without every replicate (:func:`~paperlab.audit.w1.w1_range`: equal to the percentiles
        of all replicates), from the same counts, with weights rounded through fp32 as SMI's replicates are."""
        wm, wn = ((r * w0).astype(np.float32).astype(np.float64) for r, w0 in ((rows[1], wm0), (rows[2], wn0)))
        low, high = w1_range(scores["f"], self.s_m, self.s_n, rows[0].astype(np.float64).T, wm.T, wn.T, q)
        return float(low), float(high)


class GaussianEM(MixtureEstimator):
    """``em``: Gaussians with a shared covariance on the top ``n_components`` PCA directions; the proportion is
    the maximum-likelihood fixed point of EM (:func:`~paperlab.audit.mixture.em_proportion`)."""

    def fit(self, member: torch.Tensor, nonmember: torch.Tensor, blocks: _Blocks, *, n_components: int, seed: int
            ) -> _References:
        k = min(n_components, member.shape[1])
        self.pca_mean, self.pca = pca_basis(torch.cat([member, nonmember]), k)
        self.pm, self.pn = self._project(member), self._project(nonmember)
        ones_m, ones_n = torch.ones(len(member), 1, dtype=member.dtype), torch.ones(len(nonmember), 1,
                                                                                   dtype=member.dtype)
        coef, icpt = gaussian_llr(self.pm, self.pn, ones_m, ones_n)
        s_m, s_n = (self.pm @ coef + icpt)[:, 0].numpy(), (self.pn @ coef + icpt)[:, 0].numpy()
        self.auc = auc(s_n, s_m)
        return s_m, s_n, self.auc

    def _project(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.pca_mean) @ self.pca

    def forget_scores(self, forget: torch.Tensor, k_fm: torch.Tensor, k_fn: torch.Tensor
                      ) -> tuple[dict[str, Any], float]:
        return {"pf": self._project(forget)}, self.auc

    def proportion(self, means: tuple[torch.Tensor, ...] | None, w: tuple[torch.Tensor, ...],
                   scores: dict[str, Any]) -> np.ndarray:
        coef, icpt = gaussian_llr(self.pm, self.pn, w[1], w[2])
        return em_proportion(scores["pf"] @ coef + icpt, w[0]).numpy()


class LogisticCrossFit(MixtureEstimator):
    """``classifier``: cross-fitted logistic regression ``g`` (member vs non-member, scored held out);
    ``pi = (mean_F g - mean_M g) / (mean_N g - mean_M g)``. Needs scikit-learn."""

    def fit(self, member: torch.Tensor, nonmember: torch.Tensor, blocks: _Blocks, *, n_components: int, seed: int
            ) -> _References:
        # held-out reference scores need the forget set too: the classifiers are fitted per audit
        self.member, self.nonmember, self.seed = member.numpy(), nonmember.numpy(), seed
        return None, None, math.nan

    def forget_scores(self, forget: torch.Tensor, k_fm: torch.Tensor, k_fn: torch.Tensor
                      ) -> tuple[dict[str, Any], float]:
        g_m, g_n, g_f = crossfit_logistic(self.member, self.nonmember, forget.numpy(), seed=self.seed)
        return {"m": g_m, "n": g_n, "f": g_f}, auc(g_n, g_m)

    def proportion(self, means: tuple[torch.Tensor, ...] | None, w: tuple[torch.Tensor, ...],
                   scores: dict[str, Any]) -> np.ndarray:
        wf, wm, wn = (x.numpy() for x in w)

        def mean(g: np.ndarray, wt: np.ndarray) -> np.ndarray:
            return (g[:, None] * wt).sum(0) / wt.sum(0)

        gm = mean(scores["m"], wm)
        return (mean(scores["f"], wf) - gm) / (mean(scores["n"], wn) - gm)


# the plain-dict registry: SMI(estimator=NAME) builds ESTIMATORS[NAME]() at fit; the order is the docs' order
ESTIMATORS: dict[str, type[MixtureEstimator]] = {
    "mmd": KernelMeanMatching,
    "energy": EnergyDistance,
    "w1": Wasserstein1,
    "em": GaussianEM,
    "classifier": LogisticCrossFit,
}


def get_estimator(name: str) -> type[MixtureEstimator]:
    """``ESTIMATORS[name]``; an unknown name raises ``ValueError`` listing the valid ones."""
    check_choice("estimator", name, ESTIMATORS)
    return ESTIMATORS[name]
