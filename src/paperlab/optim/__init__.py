"""Matrix optimizers: Nora (arXiv 2605.03769), RMNP, Muon, and routing hidden matrices vs the rest to AdamW."""

from paperlab.optim.functional import (
    adamw_update,
    apply_update,
    muon_update,
    newton_schulz,
    nora_direction,
    nora_step,
    nora_update,
    rmnp_step,
    rmnp_update,
)
from paperlab.optim.groups import OPTIMIZERS, ParamSplit, RoutedOptimizer, make_optimizer, split_params
from paperlab.optim.muon import Muon
from paperlab.optim.nora import NORA_PRESETS, Nora
from paperlab.optim.rmnp import RMNP, RMNP_PRESETS

__all__ = [
    "NORA_PRESETS",
    "OPTIMIZERS",
    "RMNP",
    "RMNP_PRESETS",
    "Muon",
    "Nora",
    "ParamSplit",
    "RoutedOptimizer",
    "adamw_update",
    "apply_update",
    "make_optimizer",
    "muon_update",
    "newton_schulz",
    "nora_direction",
    "nora_step",
    "nora_update",
    "rmnp_step",
    "rmnp_update",
    "split_params",
]
