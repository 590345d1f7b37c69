"""Losses: FreLE and its peers (``frele``), spectral-bias measurements (``spectral``), the synthetic sines
experiment (``sines``) and optional neuralforecast/darts adapters (``adapters``, imported on demand)."""

from __future__ import annotations

from paperlab.losses.frele import (
    LOSSES,
    FreLELoss,
    efr_loss,
    fredf_loss,
    frele_loss,
    get_loss,
    ifr_weights,
    mae_loss,
    mse_loss,
)
from paperlab.losses.spectral import (
    BAND_NAMES,
    SpectralBiasTracker,
    band_slices,
    per_bin_relative_error,
    spectral_band_errors,
)

__all__ = ["BAND_NAMES", "LOSSES", "FreLELoss", "SpectralBiasTracker", "band_slices", "efr_loss", "fredf_loss",
           "frele_loss", "get_loss", "ifr_weights", "mae_loss", "mse_loss", "per_bin_relative_error",
           "spectral_band_errors"]
