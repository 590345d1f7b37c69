"""Latent chain-of-thought (arXiv 2602.01148): ProsQA data, a word tokenizer, the Symbolic Index probe and bounds,
and Coconut-style latent reasoning on ``paperlab.models.LM``.

Submodules: ``prosqa`` (record type, loader), ``prosqa_gen`` (generator), ``prosqa_stats`` (dataset
statistics), ``symbolic`` (one token per node), ``arith`` (the arith_chain execution task), ``tokenizer``,
``probe`` (I_S, margins, bounds), ``theory`` (Thm 4.3, Thm 5.1 toys), ``coconut`` (curriculum, latent forward,
training), ``recall`` (the edge-recall warm-up a from-scratch reasoner starts from), ``train`` (one reasoner),
``eval`` (accuracy, probes, noise).
Import is light (no torch): the names below load their submodule on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paperlab._lazy import lazy_exports

if TYPE_CHECKING:  # the same names, statically visible to type checkers and the import-structure test
    from paperlab.reasoning.arith import ArithConfig, arith_tokenizer, generate_arith
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
    from paperlab.reasoning.prosqa import ProsQAExample, load_prosqa
    from paperlab.reasoning.prosqa_gen import GeneratorConfig, generate_prosqa
    from paperlab.reasoning.tokenizer import WordTokenizer, prosqa_tokenizer

_EXPORTS = {name: f"paperlab.reasoning.{module}" for name, module in {
    "ArithConfig": "arith",
    "arith_tokenizer": "arith",
    "generate_arith": "arith",
    "compounding_error_bound": "probe",
    "decision_margin": "probe",
    "exploration_kl_lower_bound": "probe",
    "fit_noise_ratio": "probe",
    "kl_extremal": "probe",
    "kl_to_uniform": "probe",
    "margin_lower_bound": "probe",
    "noise_curve": "probe",
    "symbolic_index": "probe",
    "GeneratorConfig": "prosqa_gen",
    "ProsQAExample": "prosqa",
    "generate_prosqa": "prosqa_gen",
    "load_prosqa": "prosqa",
    "WordTokenizer": "tokenizer",
    "prosqa_tokenizer": "tokenizer",
}.items()}

__all__ = [
    "ArithConfig",
    "GeneratorConfig",
    "ProsQAExample",
    "WordTokenizer",
    "arith_tokenizer",
    "compounding_error_bound",
    "decision_margin",
    "exploration_kl_lower_bound",
    "fit_noise_ratio",
    "generate_arith",
    "generate_prosqa",
    "kl_extremal",
    "kl_to_uniform",
    "load_prosqa",
    "margin_lower_bound",
    "noise_curve",
    "prosqa_tokenizer",
    "symbolic_index",
]


__getattr__, __dir__ = lazy_exports("paperlab.reasoning", _EXPORTS, globals())
