"""Parameter routing (hidden matrices vs everything else) and the optimizer object that steps both.

Rule (by module type and shape, not by name): a trainable parameter goes to the matrix optimizer iff it
has ``ndim >= 2`` and is not owned by an ``nn.Embedding``/``nn.EmbeddingBag``, not tied to one (tied
weights are counted once), not the output head, and not listed in ``exclude``. The head is
``model.get_output_embeddings()`` when the model defines it, any module passed as ``head``, or an
``nn.Linear`` that is a direct child of the model and whose ``out_features`` equals an embedding's
``num_embeddings`` (a vocabulary projection). Modules whose 2-D weight is ``[in, out]`` (HF ``Conv1D``)
must be listed in ``transposed`` (they are then updated with ``row_dim=1``); otherwise ValueError.
Norm gains, biases, scalars, embeddings and the head go to AdamW.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from paperlab._validate import check_choice, check_positive
from paperlab.optim._base import RENAMED_KEYS, KindOptimizer, OptimizerEntry, _check_lr
from paperlab.optim.registry import FALLBACK, OPTIMIZERS

__all__ = ["ParamSplit", "RoutedOptimizer", "make_optimizer", "split_params"]

# set by make_optimizer itself: its lr/weight_decay/master_weights arguments and the routing (transposed= -> row_dim=1)
_SET_BY_MAKE = ("lr", "weight_decay", "row_dim", "master_weights")
_EMBEDDINGS = (nn.Embedding, nn.EmbeddingBag)


@dataclass
class ParamSplit:
    """Parameters by destination; ``*_names`` are their qualified names (first name for tied weights)."""

    matrix: list[nn.Parameter] = field(default_factory=list)
    transposed: list[nn.Parameter] = field(default_factory=list)
    other: list[nn.Parameter] = field(default_factory=list)
    matrix_names: list[str] = field(default_factory=list)
    transposed_names: list[str] = field(default_factory=list)
    other_names: list[str] = field(default_factory=list)


def _param_ids(items: Iterable[nn.Module | nn.Parameter]) -> set[int]:
    ids: set[int] = set()
    for item in items:
        if isinstance(item, nn.Module):
            ids.update(id(p) for p in item.parameters())
        elif isinstance(item, torch.Tensor):
            ids.add(id(item))
        else:
            raise TypeError(f"expected nn.Module or nn.Parameter, got {type(item).__name__}")
    return ids


def _routing_items(name: str, items: Any) -> list[Any]:
    """The routing override ``name`` (head, exclude, transposed) as a list of modules/parameters."""
    rule = f"{name} must be an iterable of nn.Module or nn.Parameter (e.g. (model.lm_head,))"
    if isinstance(items, (str, bytes, nn.Module, torch.Tensor)) or not isinstance(items, Iterable):
        raise TypeError(f"{rule}, got {type(items).__name__}")
    items = list(items)
    for item in items:
        if not isinstance(item, (nn.Module, torch.Tensor)):
            raise TypeError(f"{rule}, got an item of type {type(item).__name__}: {item!r}"[:300])
    return items


def _head_modules(model: nn.Module, head: Iterable[nn.Module | nn.Parameter]) -> list[Any]:
    found: list[Any] = list(head)
    getter = getattr(model, "get_output_embeddings", None)
    if callable(getter):
        out = getter()
        if isinstance(out, nn.Module):
            found.append(out)
    vocab = {m.num_embeddings for m in model.modules() if isinstance(m, _EMBEDDINGS)}
    found += [m for m in model.children() if isinstance(m, nn.Linear) and m.out_features in vocab]
    return found


def split_params(
    model: nn.Module,
    *,
    head: Iterable[nn.Module | nn.Parameter] = (),
    exclude: Iterable[nn.Module | nn.Parameter] = (),
    transposed: Iterable[nn.Module | nn.Parameter] = (),
) -> ParamSplit:
    """Split ``model``'s trainable parameters into hidden matrices and the rest (see the module docstring).

    Args:
        model: any ``nn.Module``.
        head: extra output-head modules/parameters (sent to AdamW).
        exclude: modules/parameters sent to AdamW whatever their shape (e.g. a positional table).
        transposed: modules/parameters whose 2-D weights are ``[in, out]`` (matrix optimizer, ``row_dim=1``).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    head, exclude, transposed = (_routing_items(n, v) for n, v in (("head", head), ("exclude", exclude),
                                                                   ("transposed", transposed)))
    to_other = _param_ids(m for m in model.modules() if isinstance(m, _EMBEDDINGS))
    to_other |= _param_ids(_head_modules(model, head)) | _param_ids(exclude)
    flipped = _param_ids(transposed)
    split, seen = ParamSplit(), set()
    for mod_name, module in model.named_modules():
        for p_name, p in module.named_parameters(recurse=False):
            if id(p) in seen or not p.requires_grad:
                continue
            seen.add(id(p))
            name = f"{mod_name}.{p_name}" if mod_name else p_name
            if id(p) in to_other or p.ndim < 2:
                split.other.append(p)
                split.other_names.append(name)
            elif id(p) in flipped:
                split.transposed.append(p)
                split.transposed_names.append(name)
            elif type(module).__name__ == "Conv1D":
                raise ValueError(
                    f"parameter {name!r} of shape {tuple(p.shape)} belongs to a Conv1D module, whose weight is "
                    "[in, out]; pass transposed=(module,) so its rows are the columns (row_dim=1), or exclude it")
            else:
                split.matrix.append(p)
                split.matrix_names.append(name)
    return split


class RoutedOptimizer(KindOptimizer):
    """One optimizer over param groups of different kinds (any name in :data:`~paperlab.optim.OPTIMIZERS`).

    One ``state_dict``, one LR scheduler (each group keeps its own base lr). Every group must carry a
    ``"kind"``; missing hyperparameters take that kind's registry defaults, and its registry update steps it.

    Example::

        opt = RoutedOptimizer([{"params": split.matrix, "kind": "nora", "lr": 0.005},
                               {"params": split.other, "kind": "adamw", "lr": 1e-3}])
    """

    _kind = None

    def __init__(self, param_groups: Iterable[dict[str, Any]]) -> None:
        groups = list(param_groups)
        if not groups or not all(isinstance(g, Mapping) for g in groups):
            raise ValueError("RoutedOptimizer needs a non-empty list of param-group dicts, each with a 'kind'")
        super().__init__(groups, {})

    def _entry(self, kind: str | None) -> OptimizerEntry:
        if kind is None:
            raise ValueError(f"RoutedOptimizer needs a 'kind' in every param group; valid: {sorted(OPTIMIZERS)}")
        return OPTIMIZERS[check_choice("kind", kind, OPTIMIZERS)]


def _matrix_options(name: str, entry: OptimizerEntry, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` checked against the entry's hyperparameters, with ``"preset"`` expanded."""
    opts = dict(options or {})
    valid = [k for k in entry.defaults if k not in _SET_BY_MAKE] + (["preset"] if entry.presets else [])
    aliases = [old for old, new in RENAMED_KEYS.items() if new in valid]  # deprecated; renamed by the optimizer
    unknown = [k for k in opts if k not in valid and k not in aliases]
    if unknown:
        raise ValueError(f"options {unknown} are not options of {name!r}; valid: {sorted(valid)} (lr, "
                         "weight_decay and master_weights are arguments of make_optimizer; transposed= sets row_dim)")
    preset = opts.pop("preset", None)
    if preset is not None:
        check_choice("preset", preset, entry.presets)
        opts = {**entry.presets[preset], **opts}
    return opts


def _check_adamw_betas(betas: Any) -> None:
    rule = "adamw_betas must be a pair (beta1, beta2) of AdamW betas in [0, 1)"
    if not isinstance(betas, (tuple, list)):
        raise TypeError(f"{rule}, got {type(betas).__name__} {betas!r}"[:300])
    if len(betas) != 2:
        raise ValueError(f"{rule}, got {betas!r}"[:300])
    for b in betas:
        value = float(b) if isinstance(b, torch.Tensor) and b.numel() == 1 else b
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{rule}, got an entry of type {type(b).__name__}: {betas!r}"[:300])
        if not 0 <= value < 1:  # NaN fails too
            raise ValueError(f"{rule}, got {betas!r}")


def make_optimizer(
    model: nn.Module,
    name: str,
    *,
    lr: float,
    weight_decay: float = 0.0,
    adamw_lr: float | None = None,
    adamw_weight_decay: float = 0.0,
    adamw_betas: tuple[float, float] = (0.9, 0.95),
    master_weights: bool = False,
    options: Mapping[str, Any] | None = None,
    head: Iterable[nn.Module | nn.Parameter] = (),
    exclude: Iterable[nn.Module | nn.Parameter] = (),
    transposed: Iterable[nn.Module | nn.Parameter] = (),
) -> torch.optim.Optimizer:
    """One optimizer for ``model``: ``name`` on the hidden matrices, AdamW on everything else.

    Args:
        name: a key of :data:`~paperlab.optim.OPTIMIZERS`: ``"adamw"`` (``torch.optim.AdamW``; matrices at
            ``lr``/``weight_decay``), or a matrix optimizer (``"nora"``, ``"rmnp"``, ``"muon"``; a
            :class:`RoutedOptimizer`).
        lr, weight_decay: for the hidden matrices.
        adamw_lr: lr of the AdamW group (default: ``lr`` for ``"adamw"``, else AdamW's registry default 1e-3).
        adamw_weight_decay, adamw_betas: for the AdamW group (matrices too when ``name="adamw"``).
        master_weights: every group keeps an fp32 master copy of its fp16/bf16 parameters (see
            :class:`~paperlab.optim.Nora`); not available with ``name="adamw"`` (``torch.optim.AdamW``).
        options: other hyperparameters of the matrix optimizer (keys of its registry defaults), e.g.
            ``{"preset": "official"}`` or ``{"nesterov": True, "shape_scale": "muon"}``; an unknown key raises
            ValueError listing the valid ones.
        head, exclude, transposed: routing overrides, see :func:`split_params`.
    """
    entry = OPTIMIZERS[check_choice("name", name, OPTIMIZERS)]
    check_positive("lr", lr, allow_zero=True)
    check_positive("weight_decay", weight_decay, allow_zero=True)  # torch's AdamW checks no group's decay
    if adamw_lr is not None:
        _check_lr(adamw_lr, "adamw_lr")
    check_positive("adamw_weight_decay", adamw_weight_decay, allow_zero=True)
    _check_adamw_betas(adamw_betas)
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict of the matrix optimizer's hyperparameters, got "
                        f"{type(options).__name__} {options!r}"[:300])
    split = split_params(model, head=head, exclude=exclude, transposed=transposed)
    if adamw_lr is None:
        adamw_lr = lr if entry.routes == "all" else OPTIMIZERS[FALLBACK].defaults["lr"]
    other = {"params": split.other, "lr": adamw_lr, "weight_decay": adamw_weight_decay, "betas": adamw_betas}
    if entry.routes == "all":
        if options:
            raise ValueError(f"options are for matrix optimizers, got {dict(options)} with name={name!r}")
        if master_weights:
            raise ValueError(f"master_weights=True needs a paperlab optimizer; name={name!r} is "
                             f"{entry.cls.__name__}, which has no master copy")
        mats = {"params": split.matrix + split.transposed, "lr": lr, "weight_decay": weight_decay,
                "betas": adamw_betas}
        whole: Any = entry.cls  # routes="all" classes take AdamW's form: groups of lr, weight_decay, betas
        return whole([g for g in (mats, other) if g["params"]], lr=lr, betas=adamw_betas)
    opts = _matrix_options(name, entry, options)
    if split.transposed and "row_dim" not in entry.defaults:
        raise ValueError(f"{name!r} has no row_dim option, so it cannot update the [in, out] parameters "
                         f"{split.transposed_names} (transposed=); pass them in exclude= instead")
    mats = {"kind": name, "lr": lr, "weight_decay": weight_decay, "master_weights": master_weights, **opts}
    groups = [
        {"params": split.matrix, **mats},
        {"params": split.transposed, **mats, "row_dim": 1},
        {**other, "kind": FALLBACK, "master_weights": master_weights},
    ]
    return RoutedOptimizer([g for g in groups if g["params"]])
