"""The one step loop shared by :class:`Nora`, :class:`RMNP`, :class:`Muon` and :class:`RoutedOptimizer`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from paperlab.optim._kinds import KIND_DEFAULTS, step_param, validate_group

__all__ = ["KindOptimizer"]


class KindOptimizer(torch.optim.Optimizer):
    """An optimizer whose param groups each carry a ``"kind"`` key selecting their update rule.

    Subclasses with a fixed ``_kind`` accept only groups of that kind; ``_kind = None`` accepts any kind
    (each group must then name one). Missing hyperparameters come from the constructor's ``defaults`` and
    then from the kind's defaults, which also back-fill old state dicts (``__setstate__``).
    """

    _kind: str | None = None

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        kind = param_group.get("kind", self.defaults.get("kind", self._kind))
        if kind is None:
            raise ValueError(f"{type(self).__name__} needs a 'kind' in every param group; "
                             f"valid: {sorted(KIND_DEFAULTS)}")
        if self._kind is not None and kind != self._kind:
            raise ValueError(f"{type(self).__name__} only steps kind={self._kind!r} groups, got kind={kind!r}; "
                             "use paperlab.optim.RoutedOptimizer to mix kinds")
        if kind not in KIND_DEFAULTS:
            raise ValueError(f"kind={kind!r} is not valid; choose one of {sorted(KIND_DEFAULTS)}")
        group = dict(param_group)
        group["kind"] = kind
        if self.defaults.get("kind", kind) == kind:
            for key, value in self.defaults.items():
                group.setdefault(key, value)
        for key, value in KIND_DEFAULTS[kind].items():
            group.setdefault(key, value)
        super().add_param_group(group)
        try:
            validate_group(kind, self.param_groups[-1], index=len(self.param_groups) - 1,
                           owner=type(self).__name__)
        except (TypeError, ValueError):
            self.param_groups.pop()
            raise

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("kind", self._kind)
            for key, value in KIND_DEFAULTS.get(group["kind"], {}).items():
                group.setdefault(key, value)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; ``closure`` re-evaluates the loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    step_param(group["kind"], p, self.state[p], group)
        return loss
