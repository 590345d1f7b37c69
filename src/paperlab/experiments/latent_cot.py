"""Capabilities and Fundamental Limits of Latent CoT (arXiv 2602.01148): claims and experiments."""

from __future__ import annotations

from paperlab.experiments.base import Claim, Paper

__all__ = ["PAPER"]

PAPER = Paper(
    id="2602.01148",
    name="Capabilities and Fundamental Limits of Latent Chain-of-Thought",
    key="latent_cot",
    claims=(
        Claim(id="lcot-exploration", text="latent CoT excels at exploration (ProsQA)",
              paper_value="97.0% (Coconut, GPT-2)"),
        Claim(id="lcot-tradeoff", text="an exploration-execution trade-off governed by the Symbolic Index",
              paper_value="qualitative"),
        Claim(id="lcot-curriculum", text="curriculum learning is necessary", paper_value="qualitative"),
    ),
)
