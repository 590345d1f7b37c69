"""SMI-style unlearning auditor: estimate the non-member proportion of the forget set's features.

arXiv 2602.01150 (Sun et al., "SMI: Statistical Membership Inference for Reliable Unlearned Model Auditing")
estimates "the non-member mixture proportion in the unlearned feature distribution" with bootstrap reference
ranges. The paper body is unavailable: **this estimator is our reconstruction** from the abstract's ingredients,
not the paper's algorithm. Model: ``P_F = pi P_N + (1 - pi) P_M``, where ``M`` are features of retained training
data (members), ``N`` of held-out data (non-members) and ``F`` of the forget set; the forgetting rate is ``pi``.

Defaults are ours: Gaussian kernel with the median-heuristic bandwidth (frozen at ``fit``), U-statistics,
B = 200 percentile bootstrap resampling F, M and N (the full SMI experiment uses 1000), references capped at
2000 points per set (our first plan: 5000), a 200-permutation MMD test gating identifiability, and class
reweighting of M and N to F's class histogram when labels are given. Bootstrap resampling is i.i.d.
(class-stratified with ``stratify="per_class"``); ``basic`` and BCa intervals are options. Identifiability
needs usable separation, not only significance: a large sample passes the permutation test with no usable
separation (a witness AUC of M vs N of 0.52), so an estimate whose bootstrap range is wider than
``max_width`` is not returned either, nor one whose witness AUC is below ``min_auc``.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from paperlab._validate import check_choice, check_in_range, check_int, check_positive
from paperlab.audit.base import (
    MIN_SAMPLES,
    AuditResult,
    NotSeparableWarning,
    Params,
    as_features,
    auc,
    resample_count_rows,
)
from paperlab.audit.bootstrap import (
    INTERVALS,
    acceleration,
    bootstrap_interval,
    jackknife_weights,
    stratified_count_rows,
)
from paperlab.audit.estimators import get_estimator, witness_scores
from paperlab.audit.kernels import cross_mean, kernel_matrix, median_sq_distance, mmd_permutation, self_mean
from paperlab.audit.scratch import buffer, buffer_of, reusing
from paperlab.audit.strata import as_labels, class_masks, class_weights
from paperlab.exceptions import NotFittedError

__all__ = ["MAX_WIDTH", "MIN_AUC", "SMI"]

_DT = torch.float64
# The usable-separation gate's defaults, chosen on 1752 planted Gaussian-mixture audits (mmd and w1, d = 1 and
# 16, n_F = 300 and 1000, witness AUC 0.49-0.65; docs/smi.md, "Identifiability"). Of the 1330 that passed the
# permutation test, a bound on the bootstrap range's width rejects the useless ones (rejected mean absolute
# error 0.25 at width 0.7; kept 0.08), better than a bound on the witness AUC at the same pass rate; the AUC
# floor adds the regime of the reported failure (witness AUC 0.52-0.53, where a narrow range can sit far from
# the truth).
MAX_WIDTH = 0.7
MIN_AUC = 0.53
# a feature column whose standard deviation is at most this fraction of its largest magnitude is constant
_CONSTANT_RTOL = 1e-12


class SMI(Params):
    """Training-free forgetting-rate estimator (estimator shape: ``fit`` then ``estimate``).

    Args:
        estimator: a key of :data:`~paperlab.audit.estimators.ESTIMATORS`: ``mmd`` (closed-form kernel mean
            estimate, default), ``energy`` (the same with ``k = -|x - y|``), ``w1`` (1-D Wasserstein on the
            kernel witness score), ``em`` (Gaussian mixture on PCA features), ``classifier`` (cross-fitted
            logistic regression).
        kernel: ``gaussian`` or ``laplacian``; used by ``mmd``, ``w1`` and the identifiability test.
        bandwidth: kernel scale ``h``; ``None`` = median pairwise squared distance of M and N at fit.
        n_bootstrap: bootstrap replicates for the range (0 = no range: ``low = high = rate``).
        alpha: the range is a ``1 - alpha`` bootstrap interval.
        n_permutations: permutations of the M-vs-N MMD test.
        level: if the test's p-value exceeds ``level`` the references are declared not separable.
        min_auc: the references are also declared not separable when the leave-one-out kernel witness separates
            M from N with an AUC below ``min_auc`` (default 0.53, chosen on planted mixtures; 0 turns it off).
        max_width: an estimate whose bootstrap range (at ``alpha``) is wider than ``max_width`` is not returned
            (NaN with a :class:`NotSeparableWarning`; default 0.7, chosen on planted mixtures; 1 turns it off;
            needs ``n_bootstrap > 0``).
        stratify: ``reweight`` weights M and N to F's class histogram when labels are passed; ``per_class``
            combines per-class estimates ``pi_c`` with weights ``|F_c| / |F|`` and resamples within classes
            (needs labels at ``fit`` and ``estimate``); ``none``.
        interval: ``percentile`` (default, chosen by a coverage test on planted mixtures), ``basic`` or ``bca``
            (:mod:`paperlab.audit.bootstrap`).
        max_ref: cap on each of M, N and F (seeded subsample).
        n_components: PCA dimensions for ``em``.
        seed: a non-negative int; seeds subsampling, bandwidth subsample, permutations and the bootstrap.
    """

    def __init__(self, *, estimator: str = "mmd", kernel: str = "gaussian", bandwidth: float | None = None,
                 n_bootstrap: int = 200, alpha: float = 0.05, n_permutations: int = 200, level: float = 0.05,
                 min_auc: float = MIN_AUC, max_width: float = MAX_WIDTH, stratify: str = "reweight",
                 interval: str = "percentile", max_ref: int = 2000, n_components: int = 32, seed: int = 0) -> None:
        self.estimator, self.kernel, self.bandwidth = estimator, kernel, bandwidth
        self.n_bootstrap, self.alpha, self.n_permutations, self.level = n_bootstrap, alpha, n_permutations, level
        self.min_auc, self.max_width, self.interval = min_auc, max_width, interval
        self.stratify, self.max_ref, self.n_components, self.seed = stratify, max_ref, n_components, seed

    def _check_params(self) -> None:
        check_choice("kernel", self.kernel, ("gaussian", "laplacian"))
        if self.bandwidth is not None:
            check_positive("bandwidth", self.bandwidth)
        check_int("n_bootstrap", self.n_bootstrap, minimum=0)
        check_in_range("alpha", self.alpha, 0.0, 1.0, low_open=True, high_open=True)
        check_int("n_permutations", self.n_permutations, minimum=1)
        check_in_range("level", self.level, 0.0, 1.0)
        check_in_range("min_auc", self.min_auc, 0.0, 1.0)
        check_in_range("max_width", self.max_width, 0.0, 1.0, low_open=True)
        check_choice("stratify", self.stratify, ("reweight", "per_class", "none"))
        check_choice("interval", self.interval, INTERVALS)
        check_int("max_ref", self.max_ref, minimum=MIN_SAMPLES)
        check_int("n_components", self.n_components, minimum=1)
        check_int("seed", self.seed, minimum=0)

    @property
    def name(self) -> str:
        return f"smi-{self.estimator}"

    def _cap(self, x: np.ndarray, labels: np.ndarray | None, salt: int) -> tuple[np.ndarray, np.ndarray | None]:
        if len(x) <= self.max_ref:
            return x, labels
        idx = np.sort(np.random.default_rng([self.seed, salt]).permutation(len(x))[:self.max_ref])
        return x[idx], (labels[idx] if labels is not None else None)

    def _k(self, a: torch.Tensor, b: torch.Tensor, *, out32: torch.Tensor | None = None, slot: str | None = None,
           owner: object = None) -> torch.Tensor:
        """Kernel block ``[len(a), len(b)]``; ``slot``: written into that scratch buffer
        (:func:`~paperlab.audit.scratch.buffer`; the block must not outlive the call that asked for it)."""
        out = buffer(slot, len(a), len(b), a.dtype, owner=owner) if slot else None
        return kernel_matrix(a, b, kernel=self.kernel_, bandwidth=self.bandwidth_, out32=out32, out=out)

    def fit(self, member_features: Any, nonmember_features: Any, *, member_labels: Any = None,
            nonmember_labels: Any = None) -> SMI:
        """Fit the references: standardise, freeze the bandwidth, test identifiability.

        Args:
            member_features: ``[nM, d]`` features of retained training data (array or tensor).
            nonmember_features: ``[nN, d]`` features of held-out data.
            member_labels, nonmember_labels: optional ``[n]`` class labels (for ``stratify="reweight"``).
        """
        start = time.perf_counter()
        self.estimator_ = get_estimator(self.estimator)()
        self._check_params()
        self.kernel_ = self.estimator_.kernel or self.kernel
        m = as_features("member_features", member_features)
        n = as_features("nonmember_features", nonmember_features, dim=m.shape[1])
        lm, ln = as_labels("member_labels", member_labels, len(m)), as_labels("nonmember_labels", nonmember_labels,
                                                                              len(n))
        m, lm = self._cap(m, lm, 1)
        n, ln = self._cap(n, ln, 2)
        pooled = np.concatenate([m, n])
        self.mean_ = pooled.mean(0)
        std = pooled.std(0)
        # a column is constant when its spread is at rounding level *relative to its magnitude*: an absolute
        # floor would call every column of features scaled by 1e-40 constant, and the audit must not depend on
        # the features' unit
        constant = std <= _CONSTANT_RTOL * np.abs(pooled).max(0)
        self.scale_ = np.where(constant, 1.0, std)
        self.member_ = torch.as_tensor((m - self.mean_) / self.scale_, dtype=_DT)
        self.nonmember_ = torch.as_tensor((n - self.mean_) / self.scale_, dtype=_DT)
        self.member_labels_, self.nonmember_labels_ = lm, ln
        pool_t = torch.cat([self.member_, self.nonmember_])
        self.bandwidth_ = (float(self.bandwidth) if self.bandwidth is not None
                           else median_sq_distance(pool_t, seed=self.seed))
        # 1-d features inside reuse_scratch: the pooled block stays in the shared scratch and is recomputed
        # (exactly: one product per entry) if another fit took it over, instead of tens of MB of fresh memory
        # per audit; otherwise the auditor keeps its blocks (freed with it)
        self.recompute_ = self.member_.shape[1] == 1 and reusing()
        k_pool32 = buffer("pool32", len(pool_t), len(pool_t), torch.float32)  # for the permutation test
        self._pool_owner = object()
        k_pool = self._k(pool_t, pool_t, out32=k_pool32, slot="pool" if self.recompute_ else None,
                         owner=self._pool_owner)
        nm = len(m)
        blocks = k_pool[:nm, :nm], k_pool[nm:, nm:], k_pool[:nm, nm:]
        if not self.recompute_:
            self.k_mm_, self.k_nn_, self.k_mn_ = blocks
        self.mmd2_, self.p_value_ = mmd_permutation(k_pool, nm, permutations=self.n_permutations, seed=self.seed,
                                                    k_pool32=k_pool32)
        # every reference point equal (e.g. a collapsed feature layer): nothing to fit, no rate to estimate
        self.constant_ = bool(constant.all())
        s_m, s_n = witness_scores(blocks)  # the gate's separation, the same for every estimator
        self.witness_auc_ = auc(s_n, s_m)
        self.identifiable_ = (self.p_value_ <= self.level and self.witness_auc_ >= self.min_auc
                              and not self.constant_)
        if self.constant_:
            self.s_m_, self.s_n_, self.auc_ = None, None, 0.5
        else:
            self.s_m_, self.s_n_, self.auc_ = self.estimator_.fit(self.member_, self.nonmember_, blocks,
                                                                  n_components=self.n_components, seed=self.seed)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "fit_seconds_"):
            raise NotFittedError("this SMI auditor is not fitted yet; call fit(member_features, nonmember_features)")

    def witness(self, x: Any) -> np.ndarray:
        """Kernel witness ``f(x) = kbar(x, N) - kbar(x, M)`` of raw features ``x [n, d]``; returns ``[n]``.

        A debiased soft membership score: higher means more non-member-like. ``pi`` equals
        ``(mean_F f - mean_M f) / (mean_N f - mean_M f)`` with leave-one-out values on M and N.
        """
        self._check_fitted()
        xs = self._standardise(as_features("x", x, dim=self.member_.shape[1], min_samples=1))
        return (self._k(xs, self.nonmember_).mean(1) - self._k(xs, self.member_).mean(1)).numpy()

    def _standardise(self, x: np.ndarray) -> torch.Tensor:
        return torch.as_tensor((x - self.mean_) / self.scale_, dtype=_DT)

    def estimate(self, forget_features: Any, *, labels: Any = None) -> AuditResult:
        """Audit a forget set.

        Args:
            forget_features: ``[nF, d]`` features of the forget set under the audited model.
            labels: optional ``[nF]`` class labels; with ``stratify="reweight"`` and labels given at ``fit``,
                M and N are reweighted to this class histogram; ``stratify="per_class"`` needs them.

        Returns:
            :class:`AuditResult` (``forgetting_rate`` NaN with a :class:`NotSeparableWarning` and range
            [0, 1] when the references fail the identifiability test or the range is wider than ``max_width``).
        """
        self._check_fitted()
        start = time.perf_counter()
        f = as_features("forget_features", forget_features, dim=self.member_.shape[1])
        lf = as_labels("labels", labels, len(f))
        f, lf = self._cap(f, lf, 3)
        if self.constant_:
            self._warn_not_separable("every member and non-member feature vector is the same")
            return AuditResult(method=self.name, forgetting_rate=math.nan, low=0.0, high=1.0, raw_rate=math.nan,
                               auc=self.auc_, mmd2=self.mmd2_, p_value=self.p_value_, identifiable=False,
                               n_forget=len(f), n_member=len(self.member_), n_nonmember=len(self.nonmember_),
                               seconds=time.perf_counter() - start)
        au = self._prepare(self._standardise(f), lf)
        pi0, means = self._batch(au, tuple(np.ones((k, 1)) for k in au.sizes), full=True)
        assert means is not None  # the full sample always computes the kernel means
        raw = float(pi0[0] if au.masks is None else self._estimates(au, tuple(np.ones((k, 1)) for k in au.sizes),
                                                                      full=True)[0])
        rate = min(max(raw, 0.0), 1.0)
        low, high, identifiable = self._gated_range(au, raw, rate)
        return AuditResult(method=self.name, forgetting_rate=rate if identifiable else math.nan, low=low, high=high,
                           raw_rate=raw, residual=_residual(means, rate), auc=au.auc, mmd2=self.mmd2_,
                           p_value=self.p_value_, identifiable=identifiable, n_forget=au.sizes[0],
                           n_member=len(self.member_), n_nonmember=len(self.nonmember_),
                           seconds=time.perf_counter() - start)

    def _gate_failure(self, *, width: tuple[float, float] | None = None) -> str:
        test = f"MMD^2 = {self.mmd2_:.3g}, permutation p = {self.p_value_:.3g}"
        if self.p_value_ > self.level:
            return f"{test} > {self.level}"
        if self.witness_auc_ < self.min_auc:
            return f"witness AUC {self.witness_auc_:.3f} < min_auc = {self.min_auc}, although {test}"
        if width is not None:
            return (f"the {1 - self.alpha:.0%} bootstrap range [{width[0]:.2f}, {width[1]:.2f}] is wider than "
                    f"max_width = {self.max_width}, although {test} (witness AUC {self.witness_auc_:.3f}): too "
                    "little separation, or too few points, for a usable estimate")
        return f"{test}, but the estimate is undefined"

    def _warn_not_separable(self, why: str) -> None:
        warnings.warn(f"members and non-members are not separable ({why}); no forgetting rate is returned. Try "
                      "another layer, a 1-d membership score (membership_score(logits, labels, kind="
                      "'scaled_confidence')) with estimator='w1', or audit_unlearning(), which does that",
                      NotSeparableWarning, stacklevel=3)

    def _reference_blocks(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(K_MM, K_NN, K_MN)`` in fp64: kept from ``fit``; for 1-d features fitted inside ``reuse_scratch``,
        fit's scratch block if no other fit has reused it since, else recomputed (exactly) into scratch buffers."""
        if not self.recompute_:
            return self.k_mm_, self.k_nn_, self.k_mn_
        nm, n = len(self.member_), len(self.member_) + len(self.nonmember_)
        pool = buffer_of("pool", getattr(self, "_pool_owner", None), n, n)
        if pool is not None:  # fit's pooled block is still in this thread's scratch (no other fit since)
            return pool[:nm, :nm], pool[nm:, nm:], pool[:nm, nm:]
        return (self._k(self.member_, self.member_, slot="mm"), self._k(self.nonmember_, self.nonmember_, slot="nn"),
                self._k(self.member_, self.nonmember_, slot="mn"))

    def _prepare(self, ft: torch.Tensor, lf: np.ndarray | None) -> _Audit:
        """Kernel blocks, class weights, the estimator's forget scores and (``per_class``) the class columns."""
        masks = labels = None
        if self.stratify == "per_class":
            if lf is None or self.member_labels_ is None or self.nonmember_labels_ is None:
                raise ValueError("stratify='per_class' needs class labels: pass member_labels and nonmember_labels "
                                 "to fit and labels to estimate")
            labels = (lf, self.member_labels_, self.nonmember_labels_)
            masks = class_masks(*labels)
        wm0, wn0 = self._class_weights(lf)
        k_ff, k_fm, k_fn = (self._k(ft, ft, slot="ff"), self._k(ft, self.member_, slot="fm"),
                            self._k(ft, self.nonmember_, slot="fn"))
        scores, auc_value = self.estimator_.forget_scores(ft, k_fm, k_fn)
        k_mm, k_nn, k_mn = self._reference_blocks()
        return _Audit(blocks=(k_fn, k_fm, k_mn, k_mm, k_nn, k_ff), wm0=wm0, wn0=wn0, scores=scores, auc=auc_value,
                      sizes=(len(ft), len(wm0), len(wn0)), labels=labels, masks=masks)

    def _gated_range(self, au: _Audit, raw: float, rate: float) -> tuple[float, float, bool]:
        """``(low, high, identifiable)``: the bootstrap range, or ``(0, 1, False)`` with a warning when the gate
        fails (then no range is computed, or it was wider than ``max_width``)."""
        if not (self.identifiable_ and math.isfinite(raw)):
            self._warn_not_separable(self._gate_failure())
            return 0.0, 1.0, False
        if not self.n_bootstrap:
            return rate, rate, True
        low, high = self._range(au, raw)
        if not (math.isfinite(low) and math.isfinite(high)):  # no replicate defined an estimate
            low, high = 0.0, 1.0
        if high - low > self.max_width:
            self._warn_not_separable(self._gate_failure(width=(low, high)))
            return 0.0, 1.0, False
        return low, high, True

    def _range(self, au: _Audit, raw: float) -> tuple[float, float]:
        """The ``interval`` at ``alpha`` from ``n_bootstrap`` replicates resampling F, M and N (within classes
        for ``per_class``); the percentile range of a pooled estimate comes from the estimator (w1: fast)."""
        rng = np.random.default_rng([self.seed, 7])
        if au.labels is not None:
            rows = tuple(stratified_count_rows(rng, lab, self.n_bootstrap) for lab in au.labels)
        else:
            rows = tuple(resample_count_rows(rng, k, self.n_bootstrap) for k in au.sizes)
        if self.interval == "percentile" and au.masks is None:
            q = np.array([self.alpha / 2, 1 - self.alpha / 2])
            return self.estimator_.bootstrap_range(rows, q, wm0=au.wm0, wn0=au.wn0, scores=au.scores,
                                                   replicates=lambda c: self._batch(au, c, full=False)[0])
        reps = self._estimates(au, tuple(r.T.astype(float) for r in rows), full=False)
        accel = self._acceleration(au) if self.interval == "bca" else 0.0
        return bootstrap_interval(raw, reps, alpha=self.alpha, kind=self.interval, accel=accel)

    def _acceleration(self, au: _Audit) -> float:
        """BCa's acceleration from delete-a-group jackknife estimates of F, M and N in turn (fp64)."""
        deleted = []
        for i, k in enumerate(au.sizes):
            jack = jackknife_weights(k, seed=self.seed * 3 + i)
            counts = tuple(jack if j == i else np.ones((n, jack.shape[1])) for j, n in enumerate(au.sizes))
            deleted.append(self._estimates(au, counts, full=True))
        return acceleration(deleted)

    def _estimates(self, au: _Audit, counts: tuple[np.ndarray, ...], *, full: bool) -> np.ndarray:
        """Unclipped estimates ``[K]`` for counts ``(cF, cM, cN)``, each ``[n, K]``; ``per_class``: the
        ``|F_c|``-weighted sum of the per-class estimates (class columns in blocks of at most 4096)."""
        if au.masks is None:
            return self._batch(au, counts, full=full)[0]
        n_classes, n_cols = au.masks[0].shape[1], counts[0].shape[1]
        out = np.zeros(n_cols)
        step = max(1, 4096 // n_classes)
        for s in range(0, n_cols, step):
            c = tuple(x[:, s:s + step] for x in counts)
            per = tuple((x[:, None, :] * m[:, :, None]).reshape(len(x), -1) for x, m in zip(c, au.masks, strict=True))
            pi = self._batch(au, per, full=full)[0].reshape(n_classes, -1)
            share = (c[0][:, None, :] * au.masks[0][:, :, None]).sum(0) / c[0].sum(0)  # |F_c| / |F| [C, k]
            out[s:s + step] = np.where(share > 0, share * pi, 0.0).sum(0)
        return out

    def _batch(self, au: _Audit, counts: tuple[np.ndarray, ...], *, full: bool
               ) -> tuple[np.ndarray, tuple | None]:
        """Unclipped estimates ``[B]`` for counts ``(cF, cM, cN)``, each ``[n, B]``, and the kernel means.

        ``full``: the full sample (fp64); otherwise bootstrap replicates with fp32 kernel means (half the cost;
        ranges equal to ~1e-6) and weights rounded through fp32; kernel means only for estimators with
        ``replicate_kernel_means`` (the others use them only for the full-sample residual).
        """
        dt = _DT if full else torch.float32
        w = (torch.as_tensor(counts[0], dtype=dt), torch.as_tensor(counts[1] * au.wm0[:, None], dtype=dt),
             torch.as_tensor(counts[2] * au.wn0[:, None], dtype=dt))
        km = None
        if full or self.estimator_.replicate_kernel_means:
            b = au.blocks if full else tuple(k.float() for k in au.blocks)
            km = tuple(x.double() for x in (cross_mean(b[0], w[0], w[2]), cross_mean(b[1], w[0], w[1]),
                                            cross_mean(b[2], w[1], w[2]), self_mean(b[3], w[1]),
                                            self_mean(b[4], w[2]), self_mean(b[5], w[0])))
        return self.estimator_.proportion(km, tuple(x.double() for x in w), au.scores), km

    def _class_weights(self, lf: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Per-point weights of M and N matching F's class histogram (ones when not stratifying)."""
        if self.stratify == "none" or lf is None or self.member_labels_ is None or self.nonmember_labels_ is None:
            return np.ones(len(self.member_)), np.ones(len(self.nonmember_))
        return class_weights(lf, self.member_labels_, self.nonmember_labels_)


@dataclass(frozen=True, kw_only=True, eq=False)
class _Audit:
    """What one ``estimate`` computes once: kernel blocks ``(K_FN, K_FM, K_MN, K_MM, K_NN, K_FF)``, class weights
    ``[nM]``, ``[nN]``, the estimator's forget scores and AUC, sizes ``(nF, nM, nN)``; for ``per_class`` the
    labels of F, M, N and their class columns ``[n, C]``."""

    blocks: tuple[torch.Tensor, ...]
    wm0: np.ndarray
    wn0: np.ndarray
    scores: dict[str, Any]
    auc: float
    sizes: tuple[int, int, int]
    labels: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    masks: tuple[np.ndarray, np.ndarray, np.ndarray] | None


def _residual(means: tuple[torch.Tensor, ...], pi: float) -> float:
    """``MMD(F, pi N + (1 - pi) M) / MMD(M, N)`` from the kernel means of the full sample."""
    k_fn, k_fm, k_mn, k_mm, k_nn, k_ff = (float(x[0]) for x in means)
    inner, mmd2_mn = k_fn - k_fm - k_mn + k_mm, k_nn - 2 * k_mn + k_mm
    fit2 = max(k_ff - 2 * k_fm + k_mm - 2 * pi * inner + pi * pi * mmd2_mn, 0.0)
    return math.sqrt(fit2 / mmd2_mn) if mmd2_mn > 0 else math.inf

