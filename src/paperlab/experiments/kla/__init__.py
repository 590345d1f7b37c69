"""Kaczmarz Linear Attention (arXiv 2605.08587): claims and small-scale experiments.

Import-light: configs live in ``configs`` (no torch); the run functions import the heavy modules
(``tasks``, ``lm``, ``decode``) when called. Experiments follow our small-scale plan:
E1 MQAR length generalisation, E2 S-NIAH proxy, E3 perplexity and length extrapolation, E4 decode, E5 ablations.
"""

from __future__ import annotations

from pathlib import Path

from paperlab.experiments.base import Claim, Experiment, Paper, Result
from paperlab.experiments.kla.configs import (
    AblationConfig,
    DecodeConfig,
    ExtrapolationConfig,
    MQARConfig,
    NIAHConfig,
    PerplexityConfig,
)

__all__ = ["PAPER", "run_ablations", "run_decode", "run_extrapolation", "run_mqar", "run_niah", "run_perplexity"]


def run_mqar(config: MQARConfig, *, out_dir: Path) -> Result:
    """E1: MQAR trained at one length, evaluated at 1x-8x with the same number of pairs."""
    from paperlab._runtime import torch_threads
    from paperlab.experiments.kla import tasks as kla_tasks

    with torch_threads(1):
        return kla_tasks.run_mqar(config, out_dir=out_dir)


def run_ablations(config: AblationConfig, *, out_dir: Path) -> Result:
    """E5: normalisation / step-size ablations on MQAR, and the NoNorm collapse grid."""
    from paperlab._runtime import torch_threads
    from paperlab.experiments.kla import ablations as kla_ablations

    with torch_threads(1):
        return kla_ablations.run_ablations(config, out_dir=out_dir)


def run_niah(config: NIAHConfig, *, out_dir: Path) -> Result:
    """E2: single-needle retrieval vs haystack length and needle depth."""
    from paperlab._runtime import torch_threads
    from paperlab.experiments.kla import tasks as kla_tasks

    with torch_threads(1):
        return kla_tasks.run_niah(config, out_dir=out_dir)


def run_perplexity(config: PerplexityConfig, *, out_dir: Path) -> Result:
    """E3: byte-level perplexity of KLA, GDN, attention (and DeltaNet/Longhorn-style modes)."""
    from paperlab._runtime import torch_threads
    from paperlab.experiments.kla import lm as kla_lm

    with torch_threads(1):
        return kla_lm.run_perplexity(config, out_dir=out_dir)


def run_extrapolation(config: ExtrapolationConfig, *, out_dir: Path) -> Result:
    """E3 curve: perplexity from 1x to 16x (and beyond) the training context."""
    from paperlab._runtime import torch_threads
    from paperlab.experiments.kla import lm as kla_lm

    with torch_threads(1):
        return kla_lm.run_extrapolation(config, out_dir=out_dir)


def run_decode(config: DecodeConfig, *, out_dir: Path) -> Result:
    """E4: stateful and full-recompute decode latency, state / KV-cache memory."""
    from paperlab._runtime import torch_threads
    from paperlab.experiments.kla import decode as kla_decode

    with torch_threads(1):
        return kla_decode.run_decode(config, out_dir=out_dir)


PAPER = Paper(
    id="2605.08587",
    name="Kaczmarz Linear Attention",
    key="kla",
    claims=(
        Claim(id="kla-ppl", text="lowest validation perplexity among evaluated linear-time baselines",
              paper_value="8.09 vs 8.50 (GDN), 0.4B params, 1B tokens", experiment="perplexity"),
        Claim(id="kla-extrapolation", text="stable up to 65K context",
              paper_value="PPL x1.090 from 4K to 64K (GDN x1.085)", experiment="extrapolation"),
        Claim(id="kla-sniah", text="100% on single-needle retrieval",
              paper_value="100% (GDN 98.0-98.9%)", experiment="sniah"),
        Claim(id="kla-mqar-8x", text="better MQAR recall at 8x the training length",
              paper_value="+7.03 points (73.84 vs 66.81)", experiment="mqar"),
        Claim(id="kla-decode", text="higher decode throughput at 32K",
              paper_value="2.1x (3.544 vs 1.651 tok/s, full recompute)", experiment="decode"),
        Claim(id="kla-ablation-nonorm", text="without any normalisation (NoNorm) MQAR recall collapses",
              paper_value="≈0 vs 98.39 (KLA), per the authors' ablation CSVs", experiment="ablations"),
    ),
    experiments=(
        Experiment(name="mqar", title="MQAR: KLA vs GDN at 1x-8x the training length",
                   quick=MQARConfig.quick, full=MQARConfig.full, run=run_mqar),
        Experiment(name="sniah", title="S-NIAH proxy: accuracy vs haystack length and needle depth",
                   quick=NIAHConfig.quick, full=NIAHConfig.full, run=run_niah),
        Experiment(name="perplexity", title="Byte-level perplexity: KLA vs GDN vs attention",
                   quick=PerplexityConfig.quick, full=PerplexityConfig.full, run=run_perplexity),
        Experiment(name="extrapolation", title="Length extrapolation: 1x to 16x the training context",
                   quick=ExtrapolationConfig.quick, full=ExtrapolationConfig.full, run=run_extrapolation),
        Experiment(name="decode", title="Decode throughput: stateful and full recompute",
                   quick=DecodeConfig.quick, full=DecodeConfig.full, run=run_decode),
        Experiment(name="ablations", title="Ablations: normalisation and step size (MQAR)",
                   quick=AblationConfig.quick, full=AblationConfig.full, run=run_ablations),
    ),
    scale_note=("Small CPU models (d <= 128, <= 3 layers, byte-level text) instead of the paper's 0.4B GPU runs; "
                "quick() numbers are smoke-scale (one or two seeds, hundreds of steps)."),
)
