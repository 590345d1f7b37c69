"""Checkpoints: model, optimizer, scheduler, step and RNG state in one file, written atomically.

Loading uses ``torch.load(weights_only=True)`` so a checkpoint can never run arbitrary code. Each checkpoint
stores a sha256 of its content (every tensor's bytes, dtype and shape, and every other value, in order), checked
on load: torch's zip reader does not verify its CRCs, so a flipped byte in a tensor would otherwise load silently.
"""

from __future__ import annotations

import collections
import hashlib
import io
import numbers
import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from paperlab.io import as_path, atomic_write_bytes

__all__ = ["CheckpointError", "load_checkpoint", "restore_checkpoint", "save_checkpoint"]

FORMAT_VERSION = 2  # 2 adds "checksum"; version-1 files (written before it) load without the check
_READABLE_VERSIONS = (1, FORMAT_VERSION)
_KEYS = ("step", "model", "optimizer", "scheduler", "rng_cpu", "extra")  # written by every version
# What torch.load(weights_only=True) reads back in ``extra`` (by exact type: subclasses such as defaultdict or a
# namedtuple are refused by its unpickler), besides tensors and the types registered with add_safe_globals.
_EXTRA_LEAVES = (type(None), bool, int, float, complex, str, bytes, bytearray, torch.dtype, torch.device)
_EXTRA_CONTAINERS = (dict, collections.OrderedDict, collections.Counter, list, tuple, set, torch.Size)


class CheckpointError(ValueError):
    """A checkpoint file is corrupt or does not match the objects it is loaded into."""


def save_checkpoint(
    path: str | os.PathLike,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any = None,
    step: int = 0,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Serialize training state to ``path`` atomically (temp file + fsync + rename).

    ``step`` is an int >= 0. ``extra`` (a dict or None) must hold only tensors and plain Python containers
    (dict, list, tuple, set), numbers, strings, bytes, None, dtypes and devices: what ``load_checkpoint``
    (``weights_only=True``) can read back; anything else raises TypeError before a file is written.
    """
    path = as_path(path)
    _check_stateful("model", model)
    if optimizer is not None:
        _check_stateful("optimizer", optimizer)
    if scheduler is not None:
        _check_stateful("scheduler", scheduler)
    given: object = step  # callers may pass anything; numpy integers are ints too
    if isinstance(given, bool) or not isinstance(given, numbers.Integral):
        raise TypeError(f"step must be an int, got {type(given).__name__} {given!r}")
    if given < 0:
        raise ValueError(f"step must be >= 0 (optimizer steps done), got {given}")
    if extra is not None:
        if not isinstance(extra, dict):
            raise TypeError(f"extra must be a dict (or None), got {type(extra).__name__}")
        _check_loadable(extra, "extra", frozenset())
    payload = {
        "format_version": FORMAT_VERSION,
        "step": int(step),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "rng_cpu": torch.get_rng_state(),
        "extra": extra or {},
    }
    payload["checksum"] = _content_sha256(payload)
    buf = io.BytesIO()
    torch.save(payload, buf)
    return atomic_write_bytes(path, buf.getvalue())


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`; raise CheckpointError if it is unreadable or its
    content does not match its checksum (or lacks one of the entries ``save_checkpoint`` writes). The returned
    payload has no ``"checksum"`` key."""
    path = as_path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for truncated/garbled files
        raise CheckpointError(f"checkpoint {path} is corrupt or not a paperlab checkpoint: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format_version") not in _READABLE_VERSIONS:
        raise CheckpointError(f"checkpoint {path} has an unknown format (expected format_version in "
                              f"{list(_READABLE_VERSIONS)})")
    if payload["format_version"] >= 2:
        stored, actual = payload.pop("checksum", None), _content_sha256(payload)
        if stored != actual:
            raise CheckpointError(f"checkpoint {path} fails its checksum (stored sha256 {stored}, content {actual}): "
                                  "the file was damaged after it was written; use an earlier checkpoint or retrain")
    missing = [k for k in _KEYS if k not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {path} (format_version {payload['format_version']}) lacks the entries "
                              f"{missing}: it was not written by save_checkpoint")
    if not isinstance(payload["model"], dict):
        raise CheckpointError(f"checkpoint {path}: 'model' is a {type(payload['model']).__name__}, not a state dict")
    return payload


def restore_checkpoint(
    path: str | os.PathLike,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any = None,
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Load ``path`` into the given objects in place; return the payload (step, extra, ...).

    Raises CheckpointError naming the file and the keys or shapes that do not match.
    """
    _check_stateful("model", model, "load_state_dict")
    if optimizer is not None:
        _check_stateful("optimizer", optimizer, "load_state_dict")
    if scheduler is not None:
        _check_stateful("scheduler", scheduler, "load_state_dict")
    payload = load_checkpoint(path)
    _check_model_match(path, model, payload["model"])
    model.load_state_dict(payload["model"])
    if optimizer is not None:
        if payload["optimizer"] is None:
            raise CheckpointError(f"checkpoint {path} holds no optimizer state")
        try:
            optimizer.load_state_dict(payload["optimizer"])
        except (ValueError, KeyError) as exc:
            raise CheckpointError(f"checkpoint {path}: optimizer state does not match: {exc}") from exc
    if scheduler is not None and payload["scheduler"] is not None:
        scheduler.load_state_dict(payload["scheduler"])
    if restore_rng:
        torch.set_rng_state(payload["rng_cpu"])
    return payload


def _check_stateful(name: str, obj: Any, method: str = "state_dict") -> None:
    if not callable(getattr(obj, method, None)):
        kind = {"model": "an nn.Module", "optimizer": "a torch.optim.Optimizer"}.get(name, "an LR scheduler")
        raise TypeError(f"{name} must be {kind} (with {method}()), got {type(obj).__name__}")


def _check_loadable(obj: Any, where: str, inside: frozenset[int]) -> None:
    """TypeError naming the entry of ``extra`` (``where``) that ``torch.load(weights_only=True)`` cannot read."""
    if isinstance(obj, torch.Tensor) or type(obj) in _EXTRA_LEAVES:
        return
    kind = type(obj)
    if kind in _EXTRA_CONTAINERS:
        if id(obj) in inside:
            raise TypeError(f"{where} holds itself (a circular reference), which a checkpoint cannot store")
        inside = inside | {id(obj)}
        if isinstance(obj, dict):
            for key, value in obj.items():
                _check_loadable(key, f"{where} key {key!r}", inside)
                _check_loadable(value, f"{where}[{key!r}]", inside)
        else:
            for i, value in enumerate(obj):
                _check_loadable(value, f"{where}[{i}]", inside)
        return
    allowed = {g[0] if isinstance(g, tuple) else g for g in torch.serialization.get_safe_globals()}
    if kind not in allowed:
        raise TypeError(f"{where} holds a {kind.__name__} ({obj!r:.60}), which load_checkpoint (torch.load with "
                        "weights_only=True) cannot read back; extra may hold only tensors, dict/list/tuple/set, "
                        "numbers, str, bytes, None, dtypes and devices")


def _check_model_match(path: os.PathLike | str, model: nn.Module, saved: dict[str, torch.Tensor]) -> None:
    own = model.state_dict()
    missing = sorted(set(own) - set(saved))
    unexpected = sorted(set(saved) - set(own))
    shapes = {k: (tuple(saved[k].shape), tuple(own[k].shape)) for k in set(own) & set(saved)
              if tuple(saved[k].shape) != tuple(own[k].shape)}
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"missing keys {missing[:5]}")
        if unexpected:
            parts.append(f"unexpected keys {unexpected[:5]}")
        if shapes:
            parts.append("shape mismatch (saved, model) " + ", ".join(f"{k}: {v}" for k, v in list(shapes.items())[:5]))
        raise CheckpointError(f"checkpoint {path} does not match the model: " + "; ".join(parts))


def _content_sha256(payload: dict[str, Any]) -> str:
    """sha256 over a checkpoint payload's content, the same before ``torch.save`` and after ``torch.load``."""
    h = hashlib.sha256()
    _feed(h, payload)
    return h.hexdigest()


def _feed(h: Any, obj: Any) -> None:
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"tensor {t.dtype} {tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy())
    elif isinstance(obj, dict):
        h.update(f"dict {len(obj)};".encode())
        for key, value in obj.items():
            _feed(h, key)
            _feed(h, value)
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__} {len(obj)};".encode())
        for value in obj:
            _feed(h, value)
    else:  # numbers, strings, None: repr is exact for floats and tells 1 from 1.0 and "1" by the type name
        h.update(f"{type(obj).__name__} {obj!r};".encode())
