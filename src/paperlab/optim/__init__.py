"""Matrix optimizers: Nora (arXiv 2605.03769), RMNP, Muon, and routing hidden matrices vs the rest to AdamW.

:data:`OPTIMIZERS` (``paperlab.optim.registry``) maps each name to its class, defaults, update and routing rule.
"""

from paperlab.optim._base import KindOptimizer, OptimizerEntry
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
from paperlab.optim.groups import ParamSplit, RoutedOptimizer, make_optimizer, split_params
from paperlab.optim.muon import Muon
from paperlab.optim.nora import Nora
from paperlab.optim.registry import OPTIMIZERS
from paperlab.optim.rmnp import RMNP

__all__ = [
    "OPTIMIZERS",
    "RMNP",
    "KindOptimizer",
    "Muon",
    "Nora",
    "OptimizerEntry",
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
