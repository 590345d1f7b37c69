"""Latent chain-of-thought (arXiv 2602.01148): ProsQA data, a word tokenizer, the Symbolic Index probe and bounds,
and Coconut-style latent reasoning on ``paperlab.models.LM``.

Submodules: ``prosqa`` (loader, generator), ``tokenizer``, ``probe`` (I_S, margins, bounds), ``theory`` (Thm 4.3,
Thm 5.1 toys), ``coconut`` (curriculum, latent forward, training), ``eval`` (accuracy, probes, noise).
Import is light: torch models are only built when ``coconut``/``eval`` are used.
"""

from __future__ import annotations

from paperlab.reasoning.probe import (
    compounding_error_bound,
    decision_margin,
    exploration_kl_lower_bound,
    fit_noise_ratio,
    kl_extremal,
    kl_to_uniform,
    margin_lower_bound,
    noise_curve,
    symbolic_index,
)
from paperlab.reasoning.prosqa import GeneratorConfig, ProsQAExample, generate_prosqa, load_prosqa
from paperlab.reasoning.tokenizer import WordTokenizer, prosqa_tokenizer

__all__ = [
    "GeneratorConfig",
    "ProsQAExample",
    "WordTokenizer",
    "compounding_error_bound",
    "decision_margin",
    "exploration_kl_lower_bound",
    "fit_noise_ratio",
    "generate_prosqa",
    "kl_extremal",
    "kl_to_uniform",
    "load_prosqa",
    "margin_lower_bound",
    "noise_curve",
    "prosqa_tokenizer",
    "symbolic_index",
]
