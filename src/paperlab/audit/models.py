"""Small CPU classifiers for unlearning audits, and their training through ``paperlab.train.train``.

Our reproduction plan for arXiv 2602.01150 uses an MLP 784-256-256-10 (penultimate 256-d) and a
LeNet-style CNN (penultimate 84-d), Adam 1e-3, batch 128, no augmentation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from paperlab._validate import check_choice, check_int, check_positive
from paperlab.train import train

__all__ = ["ARCHITECTURES", "MLP", "LeNet", "TrainConfig", "accuracy", "epoch_batches", "fit_classifier",
           "make_model", "predict_logits"]


class MLP(nn.Module):
    """Flatten, then ``Linear-ReLU`` blocks of widths ``hidden``, then a linear head.

    Input ``[B, *in_shape]``; output logits ``[B, classes]``; the penultimate features are the head's input.
    """

    def __init__(self, in_dim: int, *, hidden: Sequence[int] = (256, 256), classes: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class LeNet(nn.Module):
    """LeNet-style CNN: two 5x5 conv + pool blocks, adaptive pooling to 4x4, FC 120-84, linear head.

    Input ``[B, 1, H, W]`` (``[B, H, W]`` is unsqueezed); any H, W >= 4 works thanks to the adaptive pool,
    so both MNIST (28x28) and sklearn digits (8x8) fit. Penultimate features are 84-d.
    """

    def __init__(self, *, channels: int = 1, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
            nn.Linear(16 * 16, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU())
        self.head = nn.Linear(84, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            x = x.unsqueeze(1)
        return self.head(self.features(x))


ARCHITECTURES = ("mlp", "cnn")


def make_model(arch: str, *, in_shape: Sequence[int], classes: int = 10, width: int = 256, seed: int = 0
               ) -> nn.Module:
    """A freshly initialised ``mlp`` (two hidden layers of ``width``) or ``cnn``; same seed, same weights.

    Initialisation draws from a forked RNG seeded with ``seed``; the caller's global RNG state is untouched.
    """
    check_choice("arch", arch, ARCHITECTURES)
    check_int("width", width, minimum=1)
    in_shape = tuple(int(s) for s in in_shape)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if arch == "mlp":
            return MLP(int(torch.tensor(in_shape).prod()), hidden=(width, width), classes=classes)
        return LeNet(channels=in_shape[0] if len(in_shape) == 3 else 1, classes=classes)


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Supervised training: Adam at ``lr`` for ``epochs`` passes in batches of ``batch_size``."""

    epochs: int = 30
    lr: float = 1e-3
    batch_size: int = 128
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, minimum=1)
        check_positive("lr", self.lr)
        check_int("batch_size", self.batch_size, minimum=1)
        check_positive("weight_decay", self.weight_decay, allow_zero=True)


def epoch_batches(n: int, batch_size: int, *, seed: int) -> tuple[Callable[[int], torch.Tensor], int]:
    """A ``step -> index tensor`` source that reshuffles every epoch, and the number of steps per epoch.

    The permutation of epoch ``e`` is drawn from a generator seeded with ``(seed, e)``, so the batch depends
    only on the step (exact resumes, identical reruns). The last partial batch is kept.
    """
    check_int("n", n, minimum=1)
    per_epoch = -(-n // batch_size)
    cache: dict[int, torch.Tensor] = {}

    def at(step: int) -> torch.Tensor:
        epoch, k = divmod(step, per_epoch)
        if epoch not in cache:
            cache.clear()
            g = torch.Generator().manual_seed(seed * 100_003 + epoch)
            cache[epoch] = torch.randperm(n, generator=g)
        return cache[epoch][k * batch_size:(k + 1) * batch_size]

    return at, per_epoch


def fit_classifier(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, config: TrainConfig = TrainConfig(), seed: int = 0
) -> nn.Module:
    """Train ``model`` in place with cross-entropy (via ``paperlab.train.train``) and return it in eval mode.

    Args:
        x: ``[n, ...]`` float inputs; y: ``[n]`` int64 labels.
    """
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    at, per_epoch = epoch_batches(len(x), config.batch_size, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)

    def loss_fn(m: nn.Module, idx: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(m(x[idx]), y[idx])

    train(model, loss_fn, at, opt, steps=config.epochs * per_epoch, progress=False, desc="classifier")
    return model.eval()


@torch.no_grad()
def predict_logits(model: nn.Module, x: torch.Tensor, *, batch_size: int = 1024) -> torch.Tensor:
    """Logits ``[n, classes]`` in eval mode, in batches (the model's mode is restored afterwards)."""
    was_training = model.training
    model.eval()
    out = torch.cat([model(x[i:i + batch_size]) for i in range(0, len(x), batch_size)]) if len(x) else None
    model.train(was_training)
    if out is None:
        raise ValueError("x must hold at least one example")
    return out


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy of ``model`` on ``(x [n, ...], y [n])``."""
    return float((predict_logits(model, x).argmax(1) == y).float().mean())
