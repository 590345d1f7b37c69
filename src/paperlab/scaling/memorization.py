"""A real learning experiment: MLPs memorising Zipf-distributed keys (our experiment P2; CPU, torch).

Task: K keys, each with a fixed Gaussian input x_k in R^dim and a uniformly random label among ``classes``;
key k is drawn with probability p_k ~ k^-zipf_alpha. Model: MLP dim -> W -> W -> classes. Metric: the exact
Zipf-weighted error over all keys, sum_k p_k err_k / (1 - 1/classes) (chance level = 1).

Three sweeps, each through :func:`paperlab.train.train`:
- capacity: width W, trained on the full expected loss sum_k p_k CE_k (infinite data) for many steps;
- coverage: D Zipf draws, trained to convergence on the seen keys weighted by their counts;
- optimisation: the expected loss for T steps with SGD or Adam (errors recorded along one run).
The theory (reconstruction) predicts error slopes -gamma (alpha - 1) in N, -(alpha - 1)/alpha in D and
-(alpha - 1)/(alpha opt_bias) in T; ``effective_frontier`` inverts the tail mass to read k_star off an error.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from paperlab._runtime import torch_threads
from paperlab._validate import check_choice, check_int, check_positive
from paperlab.scaling.zipf import log_log_slope
from paperlab.train import train

__all__ = ["ZipfTask", "effective_frontier", "make_mlp", "make_task", "n_params", "sweep", "tail_exponent",
           "train_coverage", "train_expected", "unseen_mass", "zipf_error"]


@dataclass(frozen=True)
class ZipfTask:
    """Keys as tensors: inputs ``x`` [K, dim], labels ``y`` [K] (int64), probabilities ``p`` [K] (float32)."""

    x: torch.Tensor
    y: torch.Tensor
    p: torch.Tensor
    zipf_alpha: float
    classes: int


def make_task(*, K: int = 2**14, dim: int = 64, classes: int = 64, zipf_alpha: float = 1.5,
              seed: int = 0) -> ZipfTask:
    """Build the memorisation task deterministically from ``seed``."""
    check_int("K", K, minimum=2)
    check_int("dim", dim, minimum=1)
    check_int("classes", classes, minimum=2)
    if zipf_alpha <= 1:
        raise ValueError(f"zipf_alpha must be > 1, got {zipf_alpha}")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(K, dim, generator=g)
    y = torch.randint(0, classes, (K,), generator=g)
    w = torch.arange(1, K + 1, dtype=torch.float64) ** -zipf_alpha
    return ZipfTask(x=x, y=y, p=(w / w.sum()).float(), zipf_alpha=zipf_alpha, classes=classes)


def make_mlp(width: int, *, dim: int, classes: int, seed: int) -> nn.Module:
    """MLP dim -> width -> width -> classes with ReLU, initialised from ``seed``."""
    check_int("width", width, minimum=1)
    model = nn.Sequential(nn.Linear(dim, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, classes))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # PyTorch's default Linear init, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), from our generator
        for layer in model:
            if isinstance(layer, nn.Linear):
                bound = 1.0 / math.sqrt(layer.in_features)
                layer.weight.uniform_(-bound, bound, generator=g)
                layer.bias.uniform_(-bound, bound, generator=g)
    return model


def n_params(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def zipf_error(model: nn.Module, task: ZipfTask) -> float:
    """sum_k p_k 1[argmax != y_k] / (1 - 1/classes) over all K keys."""
    wrong = (model(task.x).argmax(-1) != task.y).float()
    return float((task.p * wrong).sum()) / (1.0 - 1.0 / task.classes)


@functools.lru_cache(maxsize=8)
def _zipf_tail(zipf_alpha: float, K: int) -> np.ndarray:
    """``tail[k-1]`` = Zipf mass beyond key k (read-only; cached: experiments invert thousands of errors)."""
    w = np.arange(1, K + 1, dtype=float) ** -zipf_alpha
    tail = 1.0 - np.cumsum(w / w.sum())
    tail.flags.writeable = False
    return tail


def effective_frontier(error: float, zipf_alpha: float, K: int) -> float:
    """k such that the Zipf tail mass beyond k equals ``error`` (log-linear interpolation; K if error ~ 0)."""
    tail = _zipf_tail(float(zipf_alpha), int(K))
    if error <= tail[-2]:
        return float(K)
    i = int(np.searchsorted(-tail, -error))  # first k with tail <= error
    if i == 0:
        return 1.0
    t0, t1 = math.log(tail[i - 1]), math.log(tail[i])
    frac = (math.log(error) - t0) / (t1 - t0)
    return float(math.exp(math.log(i) + frac * (math.log(i + 1) - math.log(i))))


def tail_exponent(R: list[float], k: list[float], *, gamma: float, zipf_alpha: float, K: int) -> float:
    """The error exponent a frontier law k ~ R^gamma predicts on this grid of R at finite K.

    The frontier is placed at the measured level (k_j = k_bar (R_j / R_bar)^gamma, bars geometric means of the
    measured ``k`` and of ``R``) and the error is the Zipf tail beyond it, so the finite key set and the discrete
    grid bend the prediction exactly as they bend the measurement; far below K it is gamma (alpha - 1).
    Returns minus the least-squares log-log slope of tail(k_j) against R_j.
    """
    logR, logk = np.log(np.asarray(R, dtype=float)), np.log(np.asarray(k, dtype=float))
    k_pred = np.exp(logk.mean() + gamma * (logR - logR.mean()))
    tail = _zipf_tail(float(zipf_alpha), int(K))
    # tail[k-1] is the mass beyond key k: interpolate in log-log between integer keys, clipped to [1, K-1]
    keys = np.arange(1, K + 1, dtype=float)
    kk = np.clip(k_pred, 1.0, K - 1.0)
    err = np.exp(np.interp(np.log(kk), np.log(keys[:-1]), np.log(tail[:-1])))
    return -log_log_slope(list(np.exp(logR)), list(err))


def _draw_counts(task: ZipfTask, D: int, seed: int) -> torch.Tensor:
    """How often each key is drawn in the D Zipf draws of ``seed`` (the draws ``train_coverage`` trains on)."""
    check_int("D", D, minimum=1)
    g = torch.Generator().manual_seed(10_000 + seed)
    draws = torch.multinomial(task.p.double(), D, replacement=True, generator=g)
    return torch.bincount(draws, minlength=len(task.p)).float()


def unseen_mass(task: ZipfTask, *, D: int, seed: int = 0) -> float:
    """Zipf mass of the keys the D draws of ``seed`` miss: the error of a model that memorised what it saw."""
    return float(task.p.double()[_draw_counts(task, D, seed) == 0].sum())


def _optimizer(model: nn.Module, name: str, lr: float) -> torch.optim.Optimizer:
    check_choice("optimizer", name, ("adam", "sgd"))
    check_positive("lr", lr)
    if name == "adam":
        return torch.optim.Adam(model.parameters(), lr=lr)
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def train_expected(task: ZipfTask, *, width: int, steps: int, record_at: tuple[int, ...] = (),
                   optimizer: str = "adam", lr: float = 3e-3, seed: int = 0) -> dict[int, float]:
    """Train on the exact expected loss sum_k p_k CE_k (full batch, infinite data).

    Returns {step: zipf_error} at each step in ``record_at`` and at ``steps``.
    """
    model = make_mlp(width, dim=task.x.shape[1], classes=task.classes, seed=seed)
    want = set(record_at) | {steps}
    errors: dict[int, float] = {}

    def loss_fn(m: nn.Module, _batch: None) -> torch.Tensor:
        ce = nn.functional.cross_entropy(m(task.x), task.y, reduction="none")
        return (task.p * ce).sum()

    def on_step(step: int, m: nn.Module) -> None:
        if step in want:
            errors[step] = zipf_error(m, task)

    with torch_threads(1):
        train(model, loss_fn, lambda _s: None, _optimizer(model, optimizer, lr), steps=steps, on_step=on_step,
              progress=False, desc=f"W={width}")
    return errors


def train_coverage(task: ZipfTask, *, D: int, width: int, steps: int, lr: float = 3e-3,
                   weighting: str = "counts", seed: int = 0) -> tuple[float, int]:
    """Draw D keys (seeded), train on the seen keys (weights = counts, or uniform), return (error, #seen)."""
    check_choice("weighting", weighting, ("counts", "uniform"))
    counts = _draw_counts(task, D, seed)
    seen = counts > 0
    xs, ys = task.x[seen], task.y[seen]
    w = counts[seen] / D if weighting == "counts" else torch.full_like(counts[seen], 1.0 / int(seen.sum()))
    model = make_mlp(width, dim=task.x.shape[1], classes=task.classes, seed=seed)

    def loss_fn(m: nn.Module, _batch: None) -> torch.Tensor:
        return (w * nn.functional.cross_entropy(m(xs), ys, reduction="none")).sum()

    opt = _optimizer(model, "adam", lr)
    with torch_threads(1):
        train(model, loss_fn, lambda _s: None, opt, steps=steps, progress=False, desc=f"D={D}")
        return zipf_error(model, task), int(seen.sum())


def sweep(*, zipf_alpha: float, K: int, widths: tuple[int, ...], cap_steps: int, D_values: tuple[int, ...],
          cov_width: int, cov_steps: int, opt_width: int, opt_record: tuple[int, ...], lr_adam: float,
          lr_sgd: float, seed: int) -> dict[str, object]:
    """Run the three sweeps for one seed; return curves, measured exponents and the empirical gamma.

    Exponents are minus the least-squares log-log slopes of the Zipf-weighted error. ``opt_record`` steps
    (the last is the run length) are read along one full-batch run per optimiser. ``unseen_D`` is the mass of
    the keys each coverage run never saw (its error if it memorised every seen key).
    """
    task = make_task(K=K, zipf_alpha=zipf_alpha, seed=seed)
    dim = task.x.shape[1]
    Ns = [n_params(make_mlp(w, dim=dim, classes=task.classes, seed=seed)) for w in widths]
    cap = [train_expected(task, width=w, steps=cap_steps, lr=lr_adam, seed=seed)[cap_steps] for w in widths]
    k_eff = [effective_frontier(e, zipf_alpha, K) for e in cap]
    cov = [train_coverage(task, D=d, width=cov_width, steps=cov_steps, lr=lr_adam, seed=seed)[0] for d in D_values]
    unseen = [unseen_mass(task, D=d, seed=seed) for d in D_values]
    T = tuple(sorted(opt_record))
    curves = {opt: train_expected(task, width=opt_width, steps=T[-1], record_at=T, optimizer=opt,
                                  lr=lr_adam if opt == "adam" else lr_sgd, seed=seed) for opt in ("adam", "sgd")}
    return {
        "N": Ns, "error_N": cap, "k_eff_N": k_eff, "D": list(D_values), "error_D": cov, "unseen_D": unseen,
        "T": list(T),
        "error_T_adam": [curves["adam"][t] for t in T], "error_T_sgd": [curves["sgd"][t] for t in T],
        "exp_N": -log_log_slope(Ns, cap), "gamma": log_log_slope(Ns, k_eff), "exp_D": -log_log_slope(D_values, cov),
        "exp_T_adam": -log_log_slope(T, [curves["adam"][t] for t in T]),
        "exp_T_sgd": -log_log_slope(T, [curves["sgd"][t] for t in T]),
        "max_frontier": max(k_eff + [effective_frontier(e, zipf_alpha, K) for e in cov]),
    }
