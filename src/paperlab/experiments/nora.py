"""Nora (arXiv 2605.03769): claims and small-scale experiments."""

from __future__ import annotations

from paperlab.experiments.base import Claim, Paper

__all__ = ["PAPER"]

PAPER = Paper(
    id="2605.03769",
    name="Nora: Normalized Orthogonal Row Alignment",
    key="nora",
    claims=(
        Claim(id="nora-convergence", text="an efficient and highly promising optimizer (preliminary experiments)",
              paper_value="unknown (paper body unavailable)"),
        Claim(id="nora-stability", text="projecting out the radial component stabilizes weight norms; "
              "RMNP allows radial jitter", paper_value="qualitative"),
        Claim(id="nora-cost", text="O(mn) cost, Muon-like preconditioning without Newton-Schulz",
              paper_value="qualitative"),
    ),
)
