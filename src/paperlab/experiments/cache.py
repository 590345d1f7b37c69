"""The one experiment cache: result rows as JSON files, trained models as checkpoints, both checked on read.

An entry's key hashes the whole frozen config (every field, recursively, by type name), the parts that select
one run (mode, seed, ...), ``paperlab.__version__`` and a code-version string that its caller bumps when the
computation changes. A field added to a config therefore changes every key: no entry computed without it is
reused. A caller may leave fields out only by naming them in ``exclude`` (for fields that cannot change the
value, e.g. evaluation-only settings); a name that is not a field raises, so a renamed field cannot hide.
Callers name entry files by ``CacheKey.short``, so an entry of another config or version is never even read.

Each entry file records its key, the config and run parts it was computed from, both versions and a sha256
of its payload. On load, a parse error, a missing field, another key, config or version, or a payload whose
hash differs (a hand-edited verdict, a changed weight) gives a ``CacheWarning`` naming the file and the
reason; the entry is then recomputed and overwritten atomically (``paperlab.io``), so a crash never leaves a
partial entry. ``load_or_compute(..., memo=True)`` also keeps the value in this process under the same key
(least recently used first out beyond ``MEMO_LIMIT``); ``clear()`` forgets them all.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from paperlab import __version__
from paperlab.checkpoint import CheckpointError, restore_checkpoint, save_checkpoint
from paperlab.io import atomic_write_text

__all__ = ["JSON", "MEMO_LIMIT", "CacheKey", "CacheWarning", "Codec", "cache_key", "checkpoint_codec", "clear",
           "config_hash", "json_codec", "load_or_compute", "usable"]

MEMO_LIMIT = 64  # values kept in memory per process: a full run of one paper holds fewer models than this
_MEMO: collections.OrderedDict[str, Any] = collections.OrderedDict()
_META = ("key", "type", "config", "extra", "code", "paperlab", "sha256")


class CacheWarning(UserWarning):
    """A cache entry was damaged, stale or tampered with; the message names the file; it is recomputed."""


class _Unusable(Exception):
    """Internal: why an entry file cannot be used (turned into a ``CacheWarning``)."""


@dataclass(frozen=True, kw_only=True)
class CacheKey:
    """What an entry is computed from. ``digest``: sha256 hex of the rest; ``short``: its first 16 digits,
    for file names (the full digest is checked inside the file)."""

    digest: str
    type: str
    config: dict[str, Any]
    extra: list[Any]
    code: str
    paperlab: str

    @property
    def short(self) -> str:
        return self.digest[:16]

    def meta(self) -> dict[str, Any]:
        return {"key": self.digest, "type": self.type, "config": self.config, "extra": self.extra,
                "code": self.code, "paperlab": self.paperlab}


def _plain(value: Any, where: str) -> Any:
    """``value`` as JSON data (tuples become lists); anything else raises TypeError naming ``where``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise TypeError(f"{where} has non-string keys {bad[:3]}; cache keys need JSON data")
        return {k: _plain(v, f"{where}.{k}") for k, v in value.items()}
    raise TypeError(f"{where} is a {type(value).__name__} ({value!r}); cache keys need JSON data "
                    "(None, bool, int, float, str, lists/tuples, dicts with str keys, nested dataclasses)")


def _config_dict(config: Any, exclude: Iterable[str] = ()) -> dict[str, Any]:
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"config must be a dataclass instance, got {type(config).__name__}")
    names, left_out = [f.name for f in dataclasses.fields(config)], set(exclude)
    unknown = sorted(left_out - set(names))
    if unknown:
        raise ValueError(f"exclude={unknown} names no field of {type(config).__name__}; fields: {names}")
    data = {k: v for k, v in dataclasses.asdict(config).items() if k not in left_out}
    return _plain(data, type(config).__name__)


def _sha(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def config_hash(config: Any) -> str:
    """A short stable hash of a dataclass config's fields (names the runner's output folders; entries inside
    are checked against their full ``cache_key``)."""
    data = _config_dict(config) if dataclasses.is_dataclass(config) else _plain(config, "config")
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]


def cache_key(config: Any, *extra: Any, code: str, exclude: Iterable[str] = ()) -> CacheKey:
    """The key of the entry computed from ``config`` (a dataclass; every field except ``exclude``) and the run
    parts ``extra`` (JSON values such as a mode and a seed), by computation version ``code``."""
    if not isinstance(code, str) or not code:
        raise ValueError(f"code must be a non-empty version string, got {code!r}")
    described = {"type": type(config).__qualname__, "config": _config_dict(config, exclude),
                 "extra": _plain(list(extra), "extra"), "code": code, "paperlab": __version__}
    return CacheKey(digest=_sha(described), **described)


@dataclass(frozen=True, kw_only=True)
class Codec:
    """How one kind of entry is stored: ``save(path, value, meta)`` writes ``value`` with ``meta`` (the key's
    fields plus ``sha256``, the payload hash ``digest(value)``) atomically; ``load(path) -> (value, meta,
    sha256 of the payload as read)`` reads it back, raising ``_Unusable`` on a damaged file."""

    save: Callable[[Path, Any, dict[str, Any]], None]
    load: Callable[[Path], tuple[Any, dict[str, Any], str]]
    digest: Callable[[Any], str]


def _to_json(value: Any, encode: Callable[[Any], Any]) -> Any:
    # the payload as it reads back from disk (numpy values and paths made plain, as paperlab.io writes them)
    def default(obj: Any) -> Any:
        if hasattr(obj, "tolist"):
            return obj.tolist()
        if isinstance(obj, Path):
            return str(obj)
        raise TypeError(f"cannot store a {type(obj).__name__} in a JSON cache entry")

    return json.loads(json.dumps(encode(value), default=default))


def json_codec(*, encode: Callable[[Any], Any] = lambda v: v, decode: Callable[[Any], Any] = lambda p: p) -> Codec:
    """JSON entries ``{key fields..., "sha256", "payload"}``; ``encode`` turns the value into JSON data,
    ``decode`` the stored data back (a decode error counts as damage)."""

    def save(path: Path, value: Any, meta: dict[str, Any]) -> None:
        atomic_write_text(path, json.dumps({**meta, "payload": _to_json(value, encode)}, indent=2) + "\n")

    def load(path: Path) -> tuple[Any, dict[str, Any], str]:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _Unusable(f"not valid JSON ({exc})") from exc
        if not isinstance(entry, dict) or "payload" not in entry:
            raise _Unusable("missing fields ['payload']")
        try:
            return decode(entry["payload"]), entry, _sha(entry["payload"])
        except (TypeError, ValueError, KeyError) as exc:
            raise _Unusable(f"payload does not decode ({exc!r})") from exc

    return Codec(save=save, load=load, digest=lambda value: _sha(_to_json(value, encode)))


JSON = json_codec()


def _tensor_sha(state: dict[str, Any], info: Any) -> str:
    h = hashlib.sha256(json.dumps(info, sort_keys=True).encode())
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous().reshape(-1)
        h.update(f"{name}:{t.dtype}:{tuple(state[name].shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes())  # the raw bytes of any dtype (bf16 too)
    return h.hexdigest()


def checkpoint_codec(build: Callable[[], Any], *, step: int = 0) -> Codec:
    """Entries holding ``(model, info)``: a ``paperlab.checkpoint`` file with the key fields and ``info`` (JSON
    data, e.g. training info) in ``extra``; ``build()`` makes the fresh model a load restores into. The payload
    hash covers every tensor of the state dict (name, dtype, shape, bytes) and ``info``; ``step`` is recorded."""

    def save(path: Path, value: Any, meta: dict[str, Any]) -> None:
        model, info = value
        save_checkpoint(path, model=model, step=step, extra={"cache": meta, "info": _to_json(info, lambda v: v)})

    def load(path: Path) -> tuple[Any, dict[str, Any], str]:
        model = build()
        try:
            extra = restore_checkpoint(path, model=model, restore_rng=False)["extra"]
        except (CheckpointError, KeyError) as exc:  # KeyError: a readable file without the checkpoint's fields
            raise _Unusable(str(exc)) from exc
        if not isinstance(extra, dict) or not isinstance(extra.get("cache"), dict) or "info" not in extra:
            raise _Unusable("missing fields ['cache', 'info'] in the checkpoint's extra")
        return (model, extra["info"]), extra["cache"], digest((model, extra["info"]))

    def digest(value: Any) -> str:
        model, info = value
        return _tensor_sha(model.state_dict(), _to_json(info, lambda v: v))

    return Codec(save=save, load=load, digest=digest)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def _check(meta: dict[str, Any], key: CacheKey) -> None:
    missing = [f for f in _META if f not in meta]
    if missing:
        raise _Unusable(f"missing fields {missing}")
    if meta["paperlab"] != key.paperlab or meta["code"] != key.code:
        raise _Unusable(f"stale: written by paperlab {meta['paperlab']} code {meta['code']!r}, this is paperlab "
                        f"{key.paperlab} code {key.code!r}")
    if meta["config"] != key.config:
        saved = meta["config"] if isinstance(meta["config"], dict) else {}
        differ = sorted(k for k in set(saved) | set(key.config) if k not in saved or k not in key.config
                        or saved[k] != key.config[k])
        raise _Unusable(f"computed from another config (fields {differ} differ)")
    if meta["type"] != key.type:
        raise _Unusable(f"computed from another type: {meta['type']!r}, expected {key.type!r}")
    if meta["extra"] != key.extra:
        parts: list[Any] = meta["extra"] if isinstance(meta["extra"], list) else [meta["extra"]]
        changed = [i for i in range(max(len(parts), len(key.extra)))
                  if i >= len(parts) or i >= len(key.extra) or parts[i] != key.extra[i]]
        shown = "; ".join(f"part {i}: {_short(parts[i] if i < len(parts) else None)} -> "
                          f"{_short(key.extra[i] if i < len(key.extra) else None)}" for i in changed)
        raise _Unusable(f"computed from other run parts ({shown})")
    if meta["key"] != key.digest:
        raise _Unusable(f"recorded key {meta['key']!r} is not {key.digest!r}")


def _load(path: Path, key: CacheKey, codec: Codec) -> tuple[bool, Any]:
    """``(True, value)`` from a usable entry at ``path``; ``(False, None)`` if absent, or damaged (warned)."""
    if not path.is_file():
        return False, None
    try:
        value, meta, sha = codec.load(path)
        _check(meta, key)
        if sha != meta["sha256"]:
            raise _Unusable("the payload's sha256 differs from the recorded one (edited by hand?)")
    except _Unusable as exc:
        warnings.warn(f"cache entry {path} is unusable: {exc}; recomputing it", CacheWarning, stacklevel=3)
        return False, None
    return True, value


def usable(path: Path, key: CacheKey, *, codec: Codec = JSON) -> bool:
    """Whether ``load_or_compute`` would load the entry at ``path`` for ``key`` (quietly: no warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        return _load(Path(path), key, codec)[0]


def load_or_compute(path: Path | None, key: CacheKey, compute: Callable[[], Any], *, codec: Codec = JSON,
                    memo: bool = False, reuse: bool = True) -> Any:
    """The value of ``key``: from this process's memo (``memo``), else from the entry at ``path`` when it is
    usable (``reuse``; a damaged one warns with ``CacheWarning``), else ``compute()``, then saved to ``path``
    atomically (nothing is written if ``compute`` raises). ``path=None``: no file is read or written."""
    if memo and key.digest in _MEMO:
        _MEMO.move_to_end(key.digest)
        return _MEMO[key.digest]
    found, value = _load(Path(path), key, codec) if path is not None and reuse else (False, None)
    if not found:
        value = compute()
        if path is not None:
            codec.save(Path(path), value, {**key.meta(), "sha256": codec.digest(value)})
    if memo:
        _MEMO[key.digest] = value
        while len(_MEMO) > MEMO_LIMIT:
            _MEMO.popitem(last=False)
    return value


def clear() -> None:
    """Forget every value memoised in this process (files stay)."""
    _MEMO.clear()
