"""Scaling laws (arXiv 2602.02593, Effective Frontiers): laws, fitters, isoFLOP, allocation, Zipf simulator.

Most theory formulas here are **reconstructions** (marked "reconstruction"): the paper's body was unavailable,
so they are the standard derivation its abstract's ingredients imply. Import is light (numpy/scipy only); the
torch learning experiment is in ``memorization``.
"""

from __future__ import annotations

from paperlab.scaling.fit import FIT_LAWS, FitResult, LawFitter, fit_law
from paperlab.scaling.laws import LAWS, ChinchillaLaw, FrontierLaw, KaplanLaw, PowerLaw

__all__ = ["FIT_LAWS", "LAWS", "ChinchillaLaw", "FitResult", "FrontierLaw", "KaplanLaw", "LawFitter", "PowerLaw",
           "fit_law"]
