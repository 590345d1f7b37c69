"""Experiment registry: a plain dict from paper id to its :class:`Paper` (claims + experiments)."""

from __future__ import annotations

from paperlab.experiments import frele, kla, latent_cot, nora, scaling, smi
from paperlab.experiments.base import Claim, Experiment, Figure, Paper, Result, Verdict

__all__ = ["PAPERS", "Claim", "Experiment", "Figure", "Paper", "Result", "Verdict", "get_paper"]

PAPERS: dict[str, Paper] = {
    m.PAPER.id: m.PAPER for m in (kla, nora, smi, latent_cot, scaling, frele)
}


def get_paper(name: str) -> Paper:
    """Look a paper up by arXiv id or short key (``kla``, ``nora``, ...)."""
    for paper in PAPERS.values():
        if name in (paper.id, paper.key):
            return paper
    valid = [f"{p.id} ({p.key})" for p in PAPERS.values()]
    raise ValueError(f"unknown paper {name!r}; valid: {valid}")
