"""The entry type of the optimizer registry and the one step loop shared by every optimizer class here.

An :class:`OptimizerEntry` says everything the library needs to know about one optimizer: its class, the
defaults of a param group of its kind, the per-parameter update the loop calls, its group check and its
routing rule. :class:`KindOptimizer` is the loop: a fixed-kind subclass (Nora, RMNP, Muon) steps its own
entry (:meth:`OptimizerEntry.of`); :class:`~paperlab.optim.RoutedOptimizer` looks each group's ``"kind"`` up
in :data:`paperlab.optim.registry.OPTIMIZERS`.

Precision: the loop steps fp16/bf16 parameters in fp32 (an fp32 copy, or with the group option
``master_weights=True`` a persistent fp32 master copy, as the Nora authors' code keeps) and rounds the result
back, so every kind's state is fp32 for them; ``load_state_dict`` keeps it fp32 (torch would cast it to the
parameter's dtype).
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar, cast

import torch
from torch import Tensor

from paperlab._validate import check_choice, check_positive
from paperlab.optim.functional import LOW_PRECISION

__all__ = ["RENAMED_KEYS", "ROUTES", "KindOptimizer", "OptimizerEntry", "Update", "UpdateMany", "validate_group"]

Update = Callable[[Tensor, Tensor, dict[str, Any], dict[str, Any]], None]
UpdateMany = Callable[[list[Tensor], list[Tensor], list[dict[str, Any]], dict[str, Any]], None]
ROUTES = ("matrices", "all")
# deprecated group key -> its new name; accepted with a FutureWarning, renamed silently in old state dicts
RENAMED_KEYS: Mapping[str, str] = MappingProxyType({"beta": "momentum"})
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_K = TypeVar("_K", bound="KindOptimizer")


@dataclass(frozen=True, kw_only=True)
class OptimizerEntry:
    """One optimizer of the registry.

    Args:
        cls: the standalone ``torch.optim.Optimizer`` class (``cls(params, lr=..., weight_decay=...)``).
        defaults: every hyperparameter of a param group of this kind, ``lr`` and ``weight_decay`` included;
            a group's keys must come from here (``make_optimizer`` rejects others).
        update: ``update(param, grad, state, group)``, the in-place step of one parameter (the routed path).
        update_many: ``update_many(params, grads, states, group)``, the multi-tensor step of a group's
            parameters that have gradients, used when the group sets ``foreach=True``; None: none.
        check: ``check(group)`` validating the kind's own hyperparameters (``lr``/``weight_decay`` and
            matrix shapes are checked for every kind); None: nothing more to check.
        presets: named option sets, ``make_optimizer(..., options={"preset": name})``.
        routes: ``"matrices"``: takes the hidden matrices (``ndim >= 2``, not embeddings or the head, see
            :func:`~paperlab.optim.split_params`), AdamW the rest; ``"all"``: takes every parameter itself, with
            groups of ``lr``, ``weight_decay`` and ``betas`` (AdamW's form: ``make_optimizer``'s ``adamw_*``).
        row_wise: the update treats each row (output neuron) on its own (Nora, RMNP), so row-norm traces
            apply; False for whole-matrix (Muon) or elementwise (AdamW) updates.
    """

    cls: type[torch.optim.Optimizer]
    defaults: Mapping[str, Any]
    update: Update
    update_many: UpdateMany | None = None
    check: Callable[[dict[str, Any]], None] | None = None
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    routes: str = "matrices"
    row_wise: bool = False

    def __post_init__(self) -> None:
        check_choice("routes", self.routes, ROUTES)
        missing = [k for k in ("lr", "weight_decay") if k not in self.defaults]
        if missing:
            raise ValueError(f"defaults of {self.cls.__name__} must include {missing}, got {sorted(self.defaults)}")
        if not callable(self.update):
            raise TypeError(f"update must be callable, got {type(self.update).__name__}")
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))
        object.__setattr__(self, "presets", MappingProxyType({k: MappingProxyType(dict(v))
                                                              for k, v in self.presets.items()}))

    @classmethod
    def of(cls, optimizer: type[KindOptimizer], *, row_wise: bool = False) -> OptimizerEntry:
        """The entry of a :class:`KindOptimizer` subclass, read from the class itself.

        Its defaults are the constructor's keyword defaults (the one place they are written; deprecated aliases
        in :data:`RENAMED_KEYS` left out), its updates, check and presets the class attributes
        ``update_param``, ``update_many``, ``check_group`` and ``PRESETS``.
        """
        signature = inspect.signature(optimizer.__init__).parameters
        defaults = {name: p.default for name, p in signature.items()
                    if name not in ("self", "params") and name not in RENAMED_KEYS
                    and p.default is not inspect.Parameter.empty}
        many = None if optimizer.update_many is KindOptimizer.update_many else optimizer.update_many
        return cls(cls=optimizer, defaults=defaults, update=optimizer.update_param, update_many=many,
                   check=optimizer.check_group, presets=optimizer.PRESETS, routes="matrices", row_wise=row_wise)


def _check_lr(lr: Any, name: str = "lr") -> None:
    if isinstance(lr, Tensor):
        lr = float(lr)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(lr).__name__} {lr!r}")
    if not math.isfinite(lr) or lr < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {lr!r}")


def _check_matrices(group: dict[str, Any], *, index: int, owner: str) -> None:
    row_dim = group.get("row_dim", 0)
    if isinstance(row_dim, bool):  # True == 1 would pass the choice below
        raise TypeError(f"row_dim must be the int 0 or 1, got bool {row_dim!r}")
    check_choice("row_dim", row_dim, (0, 1))
    for p in group["params"]:
        if p.ndim < 2 or (row_dim == 1 and p.ndim != 2):
            need = "exactly 2 dims for row_dim=1" if row_dim == 1 else "ndim >= 2"
            raise ValueError(
                f"{owner} only updates matrices ({need}); param group {index} has a parameter of shape "
                f"{tuple(p.shape)}. Route vectors, scalars, norms, biases, embeddings and the LM head to AdamW: "
                "use paperlab.optim.make_optimizer(model, ...) or split_params(model).")
        if not p.is_floating_point():
            raise TypeError(f"{owner} needs floating-point parameters, got dtype {p.dtype} for shape "
                            f"{tuple(p.shape)}")


def validate_group(entry: OptimizerEntry, group: dict[str, Any], *, index: int, owner: str) -> None:
    """Check one param group against ``entry``; raise ValueError/TypeError naming the value and the rule."""
    _check_lr(group["lr"])
    check_positive("weight_decay", group["weight_decay"], allow_zero=True)
    if entry.check is not None:
        entry.check(group)
    if entry.routes == "matrices":
        _check_matrices(group, index=index, owner=owner)


_OWN_ENTRIES: dict[type, OptimizerEntry] = {}  # a fixed-kind class's entry, read from it once


def _renamed_warning(old: str, new: str) -> str:
    return (f"{old}= is deprecated and will be removed: the EMA coefficient is now {new}= (torch's name, which LR "
            f"schedulers with cycle_momentum=True drive); pass {new}= instead")


def _rename_keys(group: dict[str, Any], entry: OptimizerEntry, *, warn: bool) -> None:
    """Move deprecated keys (:data:`RENAMED_KEYS`) of ``group`` to their new names, if ``entry`` has them."""
    for old, new in RENAMED_KEYS.items():
        if old not in group or new not in entry.defaults:
            continue
        if new in group:
            raise ValueError(f"pass {new!r} or its deprecated alias {old!r}, not both (got {new}={group[new]!r}, "
                             f"{old}={group[old]!r})")
        if warn:
            warnings.warn(_renamed_warning(old, new), FutureWarning, stacklevel=4)
        group[new] = group.pop(old)


def _fp32_work(p: Tensor, state: dict[str, Any], *, master: bool) -> Tensor:
    """The tensor an update steps: ``p`` itself, or for fp16/bf16 an fp32 copy (``master``: kept in ``state``)."""
    if p.dtype not in LOW_PRECISION:
        return p
    if not master:
        state.pop("master_param", None)  # master_weights switched off: a stale copy must not come back later
        return p.detach().float()
    kept = state.get("master_param")
    if kept is None:
        kept = state["master_param"] = p.detach().float()
    else:
        # entries edited outside the optimizer since its last step (weights loaded into the model, an EMA swap, a
        # re-init) no longer equal the rounded master copy: those are taken from the parameter
        torch.where(kept.to(p.dtype) == p, kept, p, out=kept)
    return kept


class KindOptimizer(torch.optim.Optimizer):
    """An optimizer whose param groups each carry a ``"kind"`` key selecting their update rule.

    A subclass with a fixed ``_kind`` steps only groups of that kind, with its ``update_param``,
    ``check_group`` and constructor keyword defaults (its :meth:`OptimizerEntry.of`). Missing hyperparameters
    come from the constructor's ``defaults``, then from the kind's entry defaults, which also back-fill old
    state dicts (``__setstate__``). A subclass with ``_kind = None`` overrides :meth:`_entry`
    (:class:`~paperlab.optim.RoutedOptimizer`: the registry).

    Group options of the loop itself (False when a kind does not declare them): ``master_weights`` (fp16/bf16
    parameters keep an fp32 master copy in ``state["master_param"]``; without it they are stepped through a
    fresh fp32 copy, which loses steps below half a unit in the last place) and ``foreach`` (the kind's
    ``update_many``, if it has one).

    Set by a fixed-kind subclass (as ``staticmethod(function)``; see ``paperlab.optim._kinds``):
        update_param: ``update(param, grad, state, group)``, in place.
        update_many: ``update_many(params, grads, states, group)``, in place (default: none, no multi-tensor path).
        check_group: ``check(group)`` for the kind's own hyperparameters (default: none).
        PRESETS: named constructor-option sets for :meth:`from_preset` (and ``make_optimizer``).
    """

    _kind: ClassVar[str | None] = None
    PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = _EMPTY

    @staticmethod
    def update_param(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        """The in-place step of one parameter; a fixed-kind subclass sets its own."""
        raise NotImplementedError("a KindOptimizer subclass with a fixed _kind must set update_param")

    @staticmethod
    def update_many(params: list[Tensor], grads: list[Tensor], states: list[dict[str, Any]],
                    group: dict[str, Any]) -> None:
        """The multi-tensor step of a group; a subclass that has one sets it (this one is never called)."""
        raise NotImplementedError("this KindOptimizer subclass has no multi-tensor update")

    @staticmethod
    def check_group(group: dict[str, Any]) -> None:
        """Checks of the kind's own hyperparameters (none here); a subclass may set its own."""

    def _entry(self, kind: str | None) -> OptimizerEntry:
        """The entry that fills, checks and steps groups of ``kind`` (built once per class)."""
        if kind != self._kind:
            raise ValueError(f"{type(self).__name__} only steps kind={self._kind!r} groups, got kind={kind!r}; "
                             "use paperlab.optim.RoutedOptimizer to mix kinds")
        cls = type(self)
        if cls not in _OWN_ENTRIES:
            _OWN_ENTRIES[cls] = OptimizerEntry.of(cls)
        return _OWN_ENTRIES[cls]

    @classmethod
    def _momentum(cls, momentum: float, beta: float | None) -> float:
        """``momentum``, or the deprecated alias ``beta`` when given (FutureWarning; both given: ValueError)."""
        if beta is None:
            return momentum
        if momentum != inspect.signature(cls.__init__).parameters["momentum"].default:
            raise ValueError(f"pass momentum= or its deprecated alias beta=, not both (got momentum={momentum!r}, "
                             f"beta={beta!r})")
        warnings.warn(_renamed_warning("beta", "momentum"), FutureWarning, stacklevel=3)
        return beta

    @classmethod
    def from_preset(
        cls: type[_K], params: Iterable[Any], preset: str, *, lr: float | None = None,
        momentum: float | None = None, weight_decay: float | None = None, beta: float | None = None,
    ) -> _K:
        """``cls(params, **PRESETS[preset])``; ``lr``, ``momentum``, ``weight_decay`` left None keep their
        defaults (``beta``: the deprecated alias of ``momentum``)."""
        check_choice("preset", preset, cls.PRESETS)
        given = {k: v for k, v in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay),
                                   ("beta", beta)) if v is not None}
        # cast: the subclass constructors take these keywords; torch's base signature does not
        return cast(_K, cast(Any, cls)(params, **cls.PRESETS[preset], **given))

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        kind = param_group.get("kind", self.defaults.get("kind", self._kind))
        entry = self._entry(kind)
        group = dict(param_group)
        group["kind"] = kind
        _rename_keys(group, entry, warn=True)
        for source in (self.defaults, entry.defaults):
            for key, value in source.items():
                group.setdefault(key, value)
        super().add_param_group(group)
        try:
            validate_group(entry, self.param_groups[-1], index=len(self.param_groups) - 1, owner=type(self).__name__)
        except (TypeError, ValueError):
            self.param_groups.pop()
            raise

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("kind", self._kind)
            entry = self._entry(group["kind"])
            _rename_keys(group, entry, warn=False)  # a checkpoint from before the rename
            for key, value in entry.defaults.items():
                group.setdefault(key, value)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """As torch's, except that the floating state of fp16/bf16 parameters is kept in fp32."""
        super().load_state_dict(state_dict)
        # torch casts every floating state tensor to its parameter's dtype; restore fp32 for low-precision ones
        saved = chain.from_iterable(g["params"] for g in state_dict["param_groups"])
        params = chain.from_iterable(g["params"] for g in self.param_groups)
        for index, p in zip(saved, params, strict=True):
            if p.dtype not in LOW_PRECISION or index not in state_dict["state"]:
                continue
            for key, value in state_dict["state"][index].items():
                if isinstance(value, Tensor) and value.is_floating_point():
                    self.state[p][key] = value.to(device=p.device, dtype=torch.float32)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; ``closure`` re-evaluates the loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            self._step_group(group)
        return loss

    def _step_group(self, group: dict[str, Any]) -> None:
        kind = group["kind"]
        entry = self._entry(kind)
        params, grads = [], []
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if grad.is_sparse:
                raise RuntimeError(f"{kind} does not support sparse gradients (parameter shape {tuple(p.shape)})")
            params.append(p)
            grads.append(grad)
        states = [self.state[p] for p in params]
        master = bool(group.get("master_weights", False))
        work = [_fp32_work(p, s, master=master) for p, s in zip(params, states, strict=True)]
        grads = [g if w is p else g.float() for p, g, w in zip(params, grads, work, strict=True)]
        if group.get("foreach", False) and entry.update_many is not None and params:
            entry.update_many(work, grads, states, group)
        else:
            for w, g, s in zip(work, grads, states, strict=True):
                entry.update(w, g, s, group)
        for p, w in zip(params, work, strict=True):
            if w is not p:
                p.copy_(w)
