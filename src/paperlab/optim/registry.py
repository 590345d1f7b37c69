"""The optimizer registry: name -> class, defaults, per-parameter update, presets and routing rule.

:data:`OPTIMIZERS` is the one list of optimizer names in the library: :func:`~paperlab.optim.make_optimizer`,
:class:`~paperlab.optim.RoutedOptimizer` (a group's ``"kind"``), the Nora experiments and the step benchmark
all read it. Routing: an entry with ``routes="matrices"`` takes the hidden matrices (``ndim >= 2``, not
embeddings or the output head) and :data:`FALLBACK` (AdamW) the rest; ``row_wise`` says whether its update
treats each row on its own (Nora, RMNP) or the whole matrix (Muon).

Adding an optimizer is its update function, its class and one entry here. For a
:class:`~paperlab.optim.KindOptimizer` subclass, ``OptimizerEntry.of(Cls)`` reads the defaults from the
constructor's signature and the update, check and presets from the class, so each is written once::

    class Lion(KindOptimizer):
        _kind = "lion"
        update_param = staticmethod(lion_param_update)   # (param, grad, state, group) -> None
        def __init__(self, params, lr: float = 1e-4, weight_decay: float = 0.0) -> None: ...

and ``"lion": OptimizerEntry.of(Lion)`` in the dict below. A class from elsewhere (``torch.optim.AdamW``)
gets an explicit ``OptimizerEntry(cls=..., defaults=..., update=...)``.
"""

from __future__ import annotations

import torch

from paperlab.optim._base import OptimizerEntry
from paperlab.optim._kinds import adamw_param_update, check_adamw_group
from paperlab.optim.muon import Muon
from paperlab.optim.nora import Nora
from paperlab.optim.rmnp import RMNP

__all__ = ["FALLBACK", "OPTIMIZERS", "OptimizerEntry"]

FALLBACK = "adamw"  # takes what a matrix optimizer does not (vectors, norms, embeddings, the head)

OPTIMIZERS: dict[str, OptimizerEntry] = {
    # torch's class standalone; the routed path steps the same rule with weight decay 0 unless a group sets it
    # (master_weights: routed groups only, see KindOptimizer; torch's AdamW has no master copy)
    "adamw": OptimizerEntry(cls=torch.optim.AdamW, defaults={"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                                                             "weight_decay": 0.0, "master_weights": False},
                            update=adamw_param_update, check=check_adamw_group, routes="all"),
    "nora": OptimizerEntry.of(Nora, row_wise=True),
    "rmnp": OptimizerEntry.of(RMNP, row_wise=True),
    "muon": OptimizerEntry.of(Muon),
}
