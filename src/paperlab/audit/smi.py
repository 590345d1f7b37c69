"""SMI-style unlearning auditor: estimate the non-member proportion of the forget set's features.

arXiv 2602.01150 (Sun et al., "SMI: Statistical Membership Inference for Reliable Unlearned Model Auditing")
estimates "the non-member mixture proportion in the unlearned feature distribution" with bootstrap reference
ranges. The paper body is unavailable: **this estimator is our reconstruction** from the abstract's ingredients,
not the paper's algorithm. Model: ``P_F = pi P_N + (1 - pi) P_M``, where ``M`` are features of retained training
data (members), ``N`` of held-out data (non-members) and ``F`` of the forget set; the forgetting rate is ``pi``.

Defaults are ours: Gaussian kernel with the median-heuristic bandwidth (frozen at ``fit``), U-statistics,
B = 200 percentile bootstrap resampling F, M and N (the full SMI experiment uses 1000), references capped at
2000 points per set (our first plan: 5000), a 200-permutation MMD test gating identifiability, and class
reweighting of M and N to F's class histogram when labels are given. Bootstrap resampling is i.i.d. (not
class-stratified). Identifiability needs usable separation, not only significance: a large sample passes the
permutation test with no usable separation (a witness AUC of M vs N of 0.52), so an estimate whose bootstrap
range is wider than ``max_width`` is not returned either, nor one whose witness AUC is below ``min_auc``.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np
import torch

from paperlab._validate import check_choice, check_in_range, check_int, check_positive
from paperlab.audit.base import MIN_SAMPLES, AuditResult, NotSeparableWarning, Params, as_features, auc
from paperlab.audit.estimators import get_estimator, witness_scores
from paperlab.audit.kernels import cross_mean, kernel_matrix, median_sq_distance, mmd_permutation, self_mean
from paperlab.audit.scratch import buffer, buffer_of, reusing
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
        alpha: the range is the ``[alpha/2, 1 - alpha/2]`` percentile interval.
        n_permutations: permutations of the M-vs-N MMD test.
        level: if the test's p-value exceeds ``level`` the references are declared not separable.
        min_auc: the references are also declared not separable when the leave-one-out kernel witness separates
            M from N with an AUC below ``min_auc`` (default 0.53, chosen on planted mixtures; 0 turns it off).
        max_width: an estimate whose bootstrap range (at ``alpha``) is wider than ``max_width`` is not returned
            (NaN with a :class:`NotSeparableWarning`; default 0.7, chosen on planted mixtures; 1 turns it off;
            needs ``n_bootstrap > 0``).
        stratify: ``reweight`` weights M and N to F's class histogram when labels are passed; ``none``.
        max_ref: cap on each of M, N and F (seeded subsample).
        n_components: PCA dimensions for ``em``.
        seed: seeds subsampling, bandwidth subsample, permutations and the bootstrap.
    """

    def __init__(self, *, estimator: str = "mmd", kernel: str = "gaussian", bandwidth: float | None = None,
                 n_bootstrap: int = 200, alpha: float = 0.05, n_permutations: int = 200, level: float = 0.05,
                 min_auc: float = MIN_AUC, max_width: float = MAX_WIDTH, stratify: str = "reweight",
                 max_ref: int = 2000, n_components: int = 32, seed: int = 0) -> None:
        self.estimator, self.kernel, self.bandwidth = estimator, kernel, bandwidth
        self.n_bootstrap, self.alpha, self.n_permutations, self.level = n_bootstrap, alpha, n_permutations, level
        self.min_auc, self.max_width = min_auc, max_width
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
        check_choice("stratify", self.stratify, ("reweight", "none"))
        check_int("max_ref", self.max_ref, minimum=MIN_SAMPLES)
        check_int("n_components", self.n_components, minimum=1)

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
        lm, ln = _labels("member_labels", member_labels, len(m)), _labels("nonmember_labels", nonmember_labels,
                                                                          len(n))
        m, lm = self._cap(m, lm, 1)
        n, ln = self._cap(n, ln, 2)
        pooled = np.concatenate([m, n])
        self.mean_ = pooled.mean(0)
        std = pooled.std(0)
        self.scale_ = np.where(std > 1e-12, std, 1.0)
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
        self.constant_ = bool((std <= 1e-12).all())
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
                M and N are reweighted to this class histogram.

        Returns:
            :class:`AuditResult` (``forgetting_rate`` NaN with a :class:`NotSeparableWarning` and range
            [0, 1] when the references fail the identifiability test).
        """
        self._check_fitted()
        start = time.perf_counter()
        f = as_features("forget_features", forget_features, dim=self.member_.shape[1])
        lf = _labels("labels", labels, len(f))
        f, lf = self._cap(f, lf, 3)
        if self.constant_:
            self._warn_not_separable("every member and non-member feature vector is the same")
            return AuditResult(method=self.name, forgetting_rate=math.nan, low=0.0, high=1.0, raw_rate=math.nan,
                               auc=self.auc_, mmd2=self.mmd2_, p_value=self.p_value_, identifiable=False,
                               n_forget=len(f), n_member=len(self.member_), n_nonmember=len(self.nonmember_),
                               seconds=time.perf_counter() - start)
        ft = self._standardise(f)
        wm0, wn0 = self._class_weights(lf)
        k_ff, k_fm, k_fn = (self._k(ft, ft, slot="ff"), self._k(ft, self.member_, slot="fm"),
                            self._k(ft, self.nonmember_, slot="fn"))
        scores, auc_value = self.estimator_.forget_scores(ft, k_fm, k_fn)
        sizes = (len(ft), len(wm0), len(wn0))
        k_mm, k_nn, k_mn = self._reference_blocks()
        blocks = (k_fn, k_fm, k_mn, k_mm, k_nn, k_ff)
        pi0, means = self._batch(blocks, tuple(np.ones((k, 1)) for k in sizes), wm0, wn0, scores, full=True)
        assert means is not None  # the full sample always computes the kernel means
        raw = float(pi0[0])
        rate = min(max(raw, 0.0), 1.0)
        residual = _residual(means, rate)
        identifiable = self.identifiable_ and math.isfinite(raw)
        if not identifiable:  # no range is computed: the result is NaN with the range [0, 1]
            self._warn_not_separable(self._gate_failure())
            rate, low, high = math.nan, 0.0, 1.0
        elif self.n_bootstrap:
            rng = np.random.default_rng([self.seed, 7])
            low, high = self._bootstrap_range(rng, sizes, blocks, wm0, wn0, scores)
            if not (math.isfinite(low) and math.isfinite(high)):  # no replicate defined an estimate
                low, high = 0.0, 1.0
            if high - low > self.max_width:
                self._warn_not_separable(self._gate_failure(width=(low, high)))
                identifiable, rate, low, high = False, math.nan, 0.0, 1.0
        else:
            low = high = rate
        return AuditResult(method=self.name, forgetting_rate=rate, low=low, high=high, raw_rate=raw,
                           residual=residual, auc=auc_value, mmd2=self.mmd2_, p_value=self.p_value_,
                           identifiable=identifiable, n_forget=len(ft), n_member=len(self.member_),
                           n_nonmember=len(self.nonmember_), seconds=time.perf_counter() - start)

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

    def _batch(self, blocks64: tuple[torch.Tensor, ...], counts: tuple[np.ndarray, ...], wm0: np.ndarray,
               wn0: np.ndarray, scores: dict[str, Any], *, full: bool) -> tuple[np.ndarray, tuple | None]:
        """Unclipped estimates ``[B]`` for counts ``(cF, cM, cN)``, each ``[n, B]``, and the kernel means.

        ``full``: the full sample (``B = 1``, fp64); otherwise bootstrap replicates with fp32 kernel means (half
        the cost; ranges equal to ~1e-6) and weights rounded through fp32; kernel means only for estimators
        with ``replicate_kernel_means`` (the others use them only for the full-sample residual).
        """
        dt = _DT if full else torch.float32
        w = (torch.as_tensor(counts[0], dtype=dt), torch.as_tensor(counts[1] * wm0[:, None], dtype=dt),
             torch.as_tensor(counts[2] * wn0[:, None], dtype=dt))
        km = None
        if full or self.estimator_.replicate_kernel_means:
            b = blocks64 if full else tuple(k.float() for k in blocks64)
            km = tuple(x.double() for x in (cross_mean(b[0], w[0], w[2]), cross_mean(b[1], w[0], w[1]),
                                            cross_mean(b[2], w[1], w[2]), self_mean(b[3], w[1]),
                                            self_mean(b[4], w[2]), self_mean(b[5], w[0])))
        return self.estimator_.proportion(km, tuple(x.double() for x in w), scores), km

    def _bootstrap_range(self, rng: np.random.Generator, sizes: tuple[int, int, int],
                         blocks64: tuple[torch.Tensor, ...], wm0: np.ndarray, wn0: np.ndarray, scores: dict[str, Any]
                         ) -> tuple[float, float]:
        """The estimator's percentile range at ``alpha`` (replicates: :meth:`_batch` on bootstrap counts)."""
        q = np.array([self.alpha / 2, 1 - self.alpha / 2])

        def replicates(counts: tuple[np.ndarray, ...]) -> np.ndarray:
            return self._batch(blocks64, counts, wm0, wn0, scores, full=False)[0]

        return self.estimator_.bootstrap_range(rng, sizes, q, n_bootstrap=self.n_bootstrap, wm0=wm0, wn0=wn0,
                                               scores=scores, replicates=replicates)

    def _class_weights(self, lf: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Per-point weights of M and N matching F's class histogram (ones when not stratifying)."""
        ones = np.ones(len(self.member_)), np.ones(len(self.nonmember_))
        if self.stratify == "none" or lf is None or self.member_labels_ is None or self.nonmember_labels_ is None:
            return ones
        classes, counts = np.unique(lf, return_counts=True)
        target = dict(zip(classes.tolist(), (counts / counts.sum()).tolist(), strict=True))
        out = []
        for name, ref in (("member", self.member_labels_), ("nonmember", self.nonmember_labels_)):
            rc, rn = np.unique(ref, return_counts=True)
            have = dict(zip(rc.tolist(), (rn / rn.sum()).tolist(), strict=True))
            missing = sorted(set(target) - set(have))
            if missing:
                raise ValueError(f"forget-set classes {missing} have no {name} reference points; stratify="
                                 f"'reweight' needs every forget class in both references (or use stratify='none')")
            out.append(np.array([target.get(c, 0.0) / have[c] for c in ref.tolist()]))
        return out[0], out[1]


def _residual(means: tuple[torch.Tensor, ...], pi: float) -> float:
    """``MMD(F, pi N + (1 - pi) M) / MMD(M, N)`` from the kernel means of the full sample."""
    k_fn, k_fm, k_mn, k_mm, k_nn, k_ff = (float(x[0]) for x in means)
    inner, mmd2_mn = k_fn - k_fm - k_mn + k_mm, k_nn - 2 * k_mn + k_mm
    fit2 = max(k_ff - 2 * k_fm + k_mm - 2 * pi * inner + pi * pi * mmd2_mn, 0.0)
    return math.sqrt(fit2 / mmd2_mn) if mmd2_mn > 0 else math.inf


def _labels(name: str, labels: Any, n: int) -> np.ndarray | None:
    if labels is None:
        return None
    if isinstance(labels, torch.Tensor):
        labels = labels.detach().cpu().numpy()
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match the features, got {arr.shape}")
    return arr
