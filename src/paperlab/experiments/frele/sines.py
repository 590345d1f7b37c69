"""Synthetic spectral-bias experiment of FreLE (arXiv 2510.25800, Figs. 1-3): fit sums of sines, watch each bin.

Task [P; sizes are ours, I]: ``x_n = 2 pi n / 128`` for n < 128, target ``sum_k a_k sin(k x)`` for k = 1, 2, 3
(rfft bins 1-3), equal amplitudes ``(1, 1, 1)`` or unequal ``(1, 2, 3)``. Models: an MLP 1 -> 64 -> 64 -> 1 on each
``x_n``, and an LSTM-like recurrent cell (hidden 64) reading ``x_n`` as a sequence, each with ReLU, tanh or the
Ricker-wavelet activation. Training: full batch, Adam lr 1e-2, MSE, 400 epochs (the paper's 100 are too few for
the tanh MLP to fit bin 3), through ``paperlab.train``. Recorded per epoch: ``|Y_hat_k - Y_k| / |Y_k|``, k = 1..3,
measured on the prediction the step's loss used (i.e. before that step's update).

Ricker activation [P Eq. 5, garbled]: ``c * (1 - (x/a)^2) * exp(-x^2 / (2 a^2))`` with a = 1; we read
``c = pi^(1/4) / sqrt(15 a)`` from the paper's text (the textbook constant is ``2 / (sqrt(3 a) pi^(1/4))``,
``c='textbook'``) [I].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from paperlab._validate import check_choice, check_int, check_positive
from paperlab.train import train

__all__ = ["ACTIVATIONS", "GatedRecurrent", "Ricker", "SinesFit", "epochs_to_threshold", "fit_sines",
           "make_sines_model", "sines_task"]

ACTIVATIONS = ("relu", "tanh", "ricker")


class Ricker(nn.Module):
    """Ricker ("Mexican hat") activation ``c * (1 - (x/a)^2) * exp(-x^2 / (2 a^2))``.

    Args:
        a: width > 0.
        c: a number, ``'paper'`` (``pi^(1/4) / sqrt(15 a)``, our reading of Eq. 5, I) or ``'textbook'``.
    """

    def __init__(self, *, a: float = 1.0, c: float | str = "paper") -> None:
        super().__init__()
        self.a = check_positive("a", a)
        if isinstance(c, str):
            check_choice("c", c, ("paper", "textbook"))
            c = math.pi ** 0.25 / math.sqrt(15 * a) if c == "paper" else 2 / (math.sqrt(3 * a) * math.pi ** 0.25)
        self.c = float(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x / self.a
        return self.c * (1 - z * z) * torch.exp(-0.5 * z * z)


def _activation(name: str) -> nn.Module:
    check_choice("activation", name, ACTIVATIONS)
    return {"relu": nn.ReLU, "tanh": nn.Tanh, "ricker": Ricker}[name]()


class GatedRecurrent(nn.Module):
    """LSTM cell whose candidate and output non-linearity is ``activation`` (``nn.LSTM`` hard-codes tanh).

    ``forward(x [T]) -> [T]``: reads the sequence one value per step, emits a linear readout per step.
    """

    def __init__(self, *, hidden: int = 64, activation: str = "tanh") -> None:
        super().__init__()
        self.hidden = check_int("hidden", hidden, minimum=1)
        self.gates = nn.Linear(1 + hidden, 4 * hidden)
        self.act = _activation(activation)
        self.readout = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(self.hidden)
        c = x.new_zeros(self.hidden)
        outs = []
        for t in range(x.shape[0]):
            i, f, g, o = self.gates(torch.cat([x[t : t + 1], h])).chunk(4)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * self.act(g)
            h = torch.sigmoid(o) * self.act(c)
            outs.append(h)
        return self.readout(torch.stack(outs)).squeeze(-1)


class _PointMLP(nn.Module):
    def __init__(self, hidden: int, activation: str) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), _activation(activation), nn.Linear(hidden, hidden),
                                 _activation(activation), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.unsqueeze(-1)).squeeze(-1)


def sines_task(amplitudes: Sequence[float] = (1.0, 1.0, 1.0), *, n: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``x [n]`` (``2 pi i / n``) and target ``y [n] = sum_k a_k sin(k x)``, k = 1..len(amplitudes)."""
    check_int("n", n, minimum=2 * len(amplitudes) + 2)
    x = 2 * math.pi * torch.arange(n, dtype=torch.float32) / n
    y = sum(float(a) * torch.sin((k + 1) * x) for k, a in enumerate(amplitudes))
    return x, torch.as_tensor(y)


def make_sines_model(kind: str = "mlp", *, activation: str = "tanh", hidden: int = 64, seed: int = 0) -> nn.Module:
    """A seeded ``'mlp'`` (1 -> hidden -> hidden -> 1, pointwise) or ``'lstm'`` (:class:`GatedRecurrent`)."""
    check_choice("kind", kind, ("mlp", "lstm"))
    check_int("seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):  # seeded init without touching the caller's global RNG
        torch.manual_seed(seed)
        if kind == "mlp":
            return _PointMLP(hidden, activation)
        return GatedRecurrent(hidden=hidden, activation=activation)


@dataclass
class SinesFit:
    """``errors [epochs, n_freqs]`` relative error per primary bin; ``pred [n]`` after training."""

    errors: torch.Tensor
    pred: torch.Tensor


def fit_sines(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, epochs: int = 400, lr: float = 1e-2,
              freqs: Sequence[int] = (1, 2, 3)) -> SinesFit:
    """Train full-batch with Adam + MSE through ``paperlab.train``; record the relative error at ``freqs``.

    Args:
        model: ``x [n] -> y_hat [n]``.
        x, y: ``[n]`` from :func:`sines_task`.
        epochs: optimizer steps (one full batch each).
        lr: Adam learning rate.
        freqs: the rfft bins to track (the target's primary frequencies).
    """
    check_int("epochs", epochs, minimum=1)
    check_positive("lr", lr)
    bins = torch.tensor(list(freqs))
    ref = torch.fft.rfft(y)[bins]

    def loss_fn(m: nn.Module, batch):
        pred = m(batch[0])
        rel = (torch.fft.rfft(pred.detach())[bins] - ref).abs() / ref.abs()
        return (pred - batch[1]).pow(2).mean(), {f"err_k{k}": float(r) for k, r in zip(freqs, rel, strict=True)}

    opt = torch.optim.Adam(model.parameters(), lr=lr)
    res = train(model, loss_fn, lambda _s: (x, y), opt, steps=epochs, progress=False, desc="sines")
    errors = torch.tensor([[h[f"err_k{k}"] for k in freqs] for h in res.history], dtype=torch.float64)
    with torch.no_grad():
        pred = model(x)
    return SinesFit(errors=errors, pred=pred)


def epochs_to_threshold(errors: torch.Tensor, *, threshold: float = 0.1) -> list[int | None]:
    """First epoch (1-based) at which each column of ``errors [epochs, F]`` drops below ``threshold``; None if never."""
    check_positive("threshold", threshold)
    out: list[int | None] = []
    for col in errors.T:
        hit = torch.nonzero(col < threshold)
        out.append(int(hit[0]) + 1 if len(hit) else None)
    return out
