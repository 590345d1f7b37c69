"""Shadow-model attacks as forgetting-rate estimators: LiRA (offline/online) and RMIA (our SMI baselines).

Both need ``AttackData.shadow_logits`` ``[K, n, C]``: the logits of K shadow (reference) models on the
audited examples; online LiRA also needs ``shadow_in`` ``[K, n]``. Training those models is the setup cost
that SMI avoids (arXiv 2602.01150 claim: "no shadow model training required").
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from paperlab._validate import check_choice, check_in_range, check_positive
from paperlab.audit.mia import AttackData, _log_softmax, _ScoreMIA, _true_class, scaled_confidence

__all__ = ["RMIA", "LiRA"]


class LiRA(_ScoreMIA):
    """Likelihood-ratio attack (Carlini et al. 2022) on the logit-scaled confidence ``log(p_y / (1 - p_y))``.

    Args:
        online: use IN and OUT Gaussians (needs ``shadow_in``); offline uses OUT shadows only.
        rule: ``fixed`` (offline: member iff the one-sided p-value under the OUT Gaussian is below ``level``;
            online: member iff the likelihood ratio exceeds 1) or ``balanced`` (threshold fitted on M vs N).
        level: the offline p-value level (0.05: "not detected" when p > 0.05).
        global_variance: one variance for all examples (estimated at ``fit``), as LiRA recommends for few
            shadows; otherwise per-example standard deviations (needs >= 2 shadows per side).
    """

    _need_shadows = True

    def __init__(self, *, online: bool = False, rule: str = "fixed", level: float = 0.05,
                 global_variance: bool = True, debias: bool = False, n_bootstrap: int = 200, alpha: float = 0.05,
                 seed: int = 0) -> None:
        super().__init__(rule=rule, debias=debias, n_bootstrap=n_bootstrap, alpha=alpha, seed=seed)
        self.online, self.level, self.global_variance = online, level, global_variance

    @property
    def name(self) -> str:
        return ("lira-online" if self.online else "lira-offline") + ("-debiased" if self.debias else "")

    def _check_params(self) -> None:
        self._check_common()
        check_in_range("level", self.level, 0.0, 1.0, low_open=True, high_open=True)

    @staticmethod
    def _split(data: AttackData, online: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Target statistic ``[n]``, shadow statistics ``[K, n]`` and the IN mask ``[K, n]``."""
        phi = scaled_confidence(data.logits, data.labels)
        sh = scaled_confidence(data.shadow_logits, np.broadcast_to(data.labels, data.shadow_logits.shape[:2]))
        if data.shadow_in is None:
            if online:
                raise ValueError("online LiRA needs shadow_in [K, n] (which shadows trained on each example)")
            mask = np.zeros(sh.shape, dtype=bool)
        else:
            mask = data.shadow_in
        return phi, sh, mask

    @staticmethod
    def _moments(sh: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        count = mask.sum(0)
        mean = np.where(count > 0, (sh * mask).sum(0) / np.maximum(count, 1), np.nan)
        var = np.where(count > 1, (((sh - np.nan_to_num(mean)) ** 2) * mask).sum(0) / np.maximum(count - 1, 1),
                       np.nan)
        return mean, var, count

    def _fit_state(self, member: AttackData, nonmember: AttackData) -> None:
        pooled = [self._split(d, self.online) for d in (member, nonmember)]
        sh = np.concatenate([p[1] for p in pooled], 1)
        mask = np.concatenate([p[2] for p in pooled], 1)
        out_mean, out_var, _ = self._moments(sh, ~mask)
        self.sigma_out_ = float(np.sqrt(np.nanmean(out_var)))
        if self.online:
            in_mean, in_var, _ = self._moments(sh, mask)
            self.sigma_in_ = float(np.sqrt(np.nanmean(in_var)))
            self.gap_ = float(np.nanmean(in_mean - out_mean))  # fallback for examples with no IN shadow
        if not np.isfinite(self.sigma_out_) or self.sigma_out_ <= 0:
            raise ValueError(f"shadow_logits: LiRA needs a positive OUT-shadow variance (at least two OUT shadows "
                             f"per example whose outputs differ), got sigma_out = {self.sigma_out_:.3g}")

    def _scores(self, data: AttackData) -> np.ndarray:
        phi, sh, mask = self._split(data, self.online)
        out_mean, out_var, out_n = self._moments(sh, ~mask)
        in_mean, in_var, in_n = self._moments(sh, mask)
        if (out_n == 0).any():
            if not self.online:
                raise ValueError("offline LiRA needs at least one OUT shadow model for every example")
            out_mean = np.where(out_n > 0, out_mean, in_mean - self.gap_)  # online: borrow the mean IN/OUT gap
        sd_out = np.full(len(phi), self.sigma_out_) if self.global_variance else np.sqrt(np.nan_to_num(
            out_var, nan=self.sigma_out_ ** 2))
        if not self.online:
            return (phi - out_mean) / np.maximum(sd_out, 1e-12)
        in_mean = np.where(in_n > 0, in_mean, out_mean + self.gap_)
        sd_in = np.full(len(phi), self.sigma_in_) if self.global_variance else np.sqrt(np.nan_to_num(
            in_var, nan=self.sigma_in_ ** 2))
        log_in = norm.logpdf(phi, in_mean, np.maximum(sd_in, 1e-12))
        return np.asarray(log_in - norm.logpdf(phi, out_mean, np.maximum(sd_out, 1e-12)))  # [n], typed as an array

    def _fixed_threshold(self) -> float:
        return 0.0 if self.online else float(norm.ppf(1.0 - self.level))


class RMIA(_ScoreMIA):
    """Relative membership inference (Zarifzadeh et al. 2024), offline form.

    ``Pr(x) = ((1 + a)/2) mean_k P_k(y|x) + (1 - a)/2`` from OUT references approximates the IN/OUT average;
    the score of ``x`` is the share of population points ``z`` (the non-member references given to ``fit``)
    with ``[Pr(x|theta)/Pr(x)] / [Pr(z|theta)/Pr(z)] > gamma``; the threshold is fitted on M vs N.
    """

    _need_shadows = True

    def __init__(self, *, a: float = 0.3, gamma: float = 1.0, debias: bool = False, n_bootstrap: int = 200,
                 alpha: float = 0.05, seed: int = 0) -> None:
        super().__init__(rule="balanced", debias=debias, n_bootstrap=n_bootstrap, alpha=alpha, seed=seed)
        self.a, self.gamma = a, gamma

    @property
    def name(self) -> str:
        return "rmia" + ("-debiased" if self.debias else "")

    def _check_params(self) -> None:
        self._check_common()
        check_choice("rule", self.rule, ("balanced",))
        check_in_range("a", self.a, 0.0, 1.0)
        check_positive("gamma", self.gamma)

    def _ratio(self, data: AttackData) -> np.ndarray:
        p_target = np.exp(_true_class(_log_softmax(data.logits), data.labels))
        labels = np.broadcast_to(data.labels, data.shadow_logits.shape[:2])
        p_ref = np.exp(_true_class(_log_softmax(data.shadow_logits), labels)).mean(0)
        return p_target / ((1 + self.a) / 2 * p_ref + (1 - self.a) / 2)

    def _fit_state(self, member: AttackData, nonmember: AttackData) -> None:
        self.population_ = np.sort(self._ratio(nonmember))

    def _scores(self, data: AttackData) -> np.ndarray:
        return np.searchsorted(self.population_, self._ratio(data) / self.gamma, side="left") / len(self.population_)
