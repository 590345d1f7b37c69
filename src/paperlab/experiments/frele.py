"""FreLE (arXiv 2510.25800): frequency loss enhancement for forecasting; claims and experiments."""

from __future__ import annotations

from paperlab.experiments.base import Claim, Paper

__all__ = ["PAPER"]

PAPER = Paper(
    id="2510.25800",
    name="FreLE: low-frequency spectral bias in time-series forecasting",
    key="frele",
    claims=(
        Claim(id="frele-beats-mse", text="FreLE improves forecasting accuracy over the time-domain loss",
              paper_value="DLinear+FreLE ETTh1 avg MSE .434 (DLinear .456)"),
        Claim(id="frele-spectral-bias", text="models fit low frequencies before high ones (spectral bias)",
              paper_value="HF error >> LF error (Table 1)"),
    ),
)
