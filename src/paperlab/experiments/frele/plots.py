"""Plots for the FreLE experiments: band learning curves, frequency x epoch heat-maps, spectrum overlays, sweeps."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from paperlab.tables import save_figure

__all__ = ["mean_amplitude", "plot_band_curves", "plot_heatmaps", "plot_sines", "plot_spectrum_overlay",
           "plot_sweep"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_band_curves(histories: dict[str, list[dict]], out_dir: Path, name: str) -> str:
    """Validation band RMSE per epoch; ``histories`` maps a loss label to ``SpectralBiasTracker.history``.

    The first label is drawn solid, the others dashed (MSE solid vs FreLE dashed).
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    colors = {"LF": "tab:blue", "MF": "tab:orange", "HF": "tab:red"}
    for i, (label, hist) in enumerate(histories.items()):
        for band, color in colors.items():
            ax.plot(range(1, len(hist) + 1), [h[band] for h in hist], color=color, ls="-" if i == 0 else "--",
                    marker="o", ms=3, label=f"{band} {label}")
    ax.set(xlabel="epoch", ylabel="band RMSE (validation)", yscale="log")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=7, ncol=2)
    return save_figure(fig, out_dir, name)


def plot_heatmaps(maps: dict[str, torch.Tensor], out_dir: Path, name: str, *, vmax: float = 1.0,
                  ylabel: str = "rfft bin", yticklabels: Sequence[str] | None = None) -> str:
    """Side-by-side ``[epochs, K]`` heat-maps (frequency on y, epoch on x), colour 0..vmax."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(maps), figsize=(4 * len(maps), 3.2), squeeze=False, layout="constrained")
    im = None
    for ax, (label, m) in zip(axes[0], maps.items(), strict=True):
        im = ax.imshow(m.T.numpy(), aspect="auto", origin="lower", vmin=0, vmax=vmax, cmap="viridis",
                       extent=(0.5, m.shape[0] + 0.5, -0.5, m.shape[1] - 0.5))
        ax.set(title=label, xlabel="epoch", ylabel=ylabel)
        if yticklabels is not None:
            ax.set_yticks(range(len(yticklabels)), list(yticklabels))
    fig.colorbar(im, ax=axes[0].tolist(), label="relative error")
    return save_figure(fig, out_dir, name)


def mean_amplitude(x: torch.Tensor) -> list[float]:
    """Mean rfft amplitude over windows and channels of ``x [N, H, C]`` (FFT along H): ``H // 2 + 1`` values."""
    return torch.fft.rfft(x.double(), dim=1).abs().mean(dim=(0, 2)).tolist()


def plot_spectrum_overlay(target: torch.Tensor, preds: dict[str, torch.Tensor], out_dir: Path, name: str) -> str:
    """Mean amplitude spectrum of the target and each forecast: ``[N, H, C]`` series, or the 1-d spectra
    :func:`mean_amplitude` returned."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.5))

    def amp(x: torch.Tensor) -> list[float]:
        return x.double().tolist() if x.dim() == 1 else mean_amplitude(x)

    ax.plot(amp(target), color="black", lw=2, label="target")
    for label, p in preds.items():
        ax.plot(amp(p), lw=1.2, label=label)
    ax.set(xlabel="rfft bin", ylabel="mean amplitude", yscale="log")
    ax.legend(fontsize=8)
    return save_figure(fig, out_dir, name)


def plot_sines(errors: dict[str, torch.Tensor], spectra: dict[str, torch.Tensor], target: torch.Tensor,
               out_dir: Path, name: str) -> tuple[str, str]:
    """Sines experiment: ``k x epoch`` heat-maps (colour 0-1) and the final log-spectrum overlay (bins 0-35)."""
    n = next(iter(errors.values())).shape[1]
    heat = plot_heatmaps(errors, out_dir, f"{name}_heatmap", ylabel="frequency",
                         yticklabels=[f"k{i + 1}" for i in range(n)])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(torch.fft.rfft(target.double()).abs()[:36].numpy(), color="black", lw=2, label="target")
    for label, pred in spectra.items():
        ax.plot(torch.fft.rfft(pred.double()).abs()[:36].numpy(), lw=1, label=label)
    ax.set(xlabel="rfft bin", ylabel="|Y_k|", yscale="log")
    ax.legend(fontsize=6, ncol=2)
    return heat, save_figure(fig, out_dir, f"{name}_spectrum")


def plot_sweep(xs: Sequence[float], means: Sequence[float], stds: Sequence[float], out_dir: Path, name: str, *,
               xlabel: str) -> str:
    """Test MSE (mean +- std over seeds) against a swept hyperparameter."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.errorbar(list(xs), list(means), yerr=list(stds), marker="o", capsize=3)
    ax.set(xlabel=xlabel, ylabel="test MSE")
    return save_figure(fig, out_dir, name)
