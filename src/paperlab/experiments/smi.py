"""SMI (arXiv 2602.01150): training-free unlearning audits; claims and experiments."""

from __future__ import annotations

from paperlab.experiments.base import Claim, Paper

__all__ = ["PAPER"]

PAPER = Paper(
    id="2602.01150",
    name="SMI: Statistical Membership Inference for unlearning audits",
    key="smi",
    claims=(
        Claim(id="smi-accuracy", text="SMI consistently outperforms all MIA-based baselines",
              paper_value="no numbers available"),
        Claim(id="smi-optimistic", text="MIA-based audits are systematically optimistic",
              paper_value="qualitative"),
        Claim(id="smi-cost", text="no shadow model training required", paper_value="qualitative"),
    ),
)
