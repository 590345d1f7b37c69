"""Kaczmarz Linear Attention (arXiv 2605.08587): claims and small-scale experiments."""

from __future__ import annotations

from paperlab.experiments.base import Claim, Paper

__all__ = ["PAPER"]

PAPER = Paper(
    id="2605.08587",
    name="Kaczmarz Linear Attention",
    key="kla",
    claims=(
        Claim(id="kla-ppl", text="lowest validation perplexity among evaluated linear-time baselines",
              paper_value="8.09 vs 8.50 (GDN), 0.4B params, 1B tokens"),
        Claim(id="kla-extrapolation", text="stable up to 65K context",
              paper_value="PPL x1.090 from 4K to 64K (GDN x1.085)"),
        Claim(id="kla-sniah", text="100% on single-needle retrieval",
              paper_value="100% (GDN 98.0-98.9%)"),
        Claim(id="kla-mqar-8x", text="better MQAR recall at 8x the training length",
              paper_value="+7.03 points (73.84 vs 66.81)"),
        Claim(id="kla-decode", text="higher decode throughput at 32K",
              paper_value="2.1x (3.544 vs 1.651 tok/s, full recompute)"),
    ),
)
