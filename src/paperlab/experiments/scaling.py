"""Effective Frontiers (arXiv 2602.02593): scaling laws from Zipfian coverage; claims and experiments."""

from __future__ import annotations

from paperlab.experiments.base import Claim, Paper

__all__ = ["PAPER"]

PAPER = Paper(
    id="2602.02593",
    name="Effective Frontiers: a unification of neural scaling laws",
    key="scaling",
    claims=(
        Claim(id="ef-exponents", text="precise scaling laws for N, D and C from capacity, coverage and "
              "optimization bottlenecks", paper_value="no numbers available"),
        Claim(id="ef-equilibria", text="Kaplan and Chinchilla are equilibria of one constrained problem under "
              "different active bottlenecks", paper_value="qualitative"),
    ),
)
