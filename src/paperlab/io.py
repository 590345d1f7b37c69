"""Atomic file writes: a crash or a failed check never leaves a partial file at the final path.

A write goes to ``.NAME.PID.RANDOM.tmp`` beside ``NAME`` and is renamed over it. A writer killed mid-write
leaves its temp file behind; the next successful write of the same target removes those whose process is gone
(and, for names without a pid, those untouched for ``STALE_TMP_SECONDS``).
"""

from __future__ import annotations

import contextlib
import glob
import json
import math
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["STALE_TMP_SECONDS", "as_path", "atomic_open", "atomic_write_bytes", "atomic_write_json",
           "atomic_write_text"]

STALE_TMP_SECONDS = 3600.0


def as_path(value: Any, name: str = "path") -> Path:
    """``Path(value)`` for a str or ``os.PathLike``; otherwise TypeError naming the argument ``name``."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or os.PathLike (a file path), got {type(value).__name__} "
                        f"{value!r}"[:300])
    return Path(value)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temp file beside ``path``; on success fsync and rename it over ``path``.

    The rename is atomic on POSIX, so readers see either the old file or the complete new one.
    On any exception the temp file is removed and ``path`` is untouched.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = as_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    # mkstemp creates 0600 files; give the final file the permissions a plain open() would (0666 & ~umask).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _remove_stale_temps(path)


def _remove_stale_temps(path: Path) -> None:
    """Delete temp files of ``path`` left by writers that died: their pid is no longer running (a live pid,
    ours included, may be writing now), or, without a pid in the name, untouched for ``STALE_TMP_SECONDS``."""
    prefix = f".{path.name}."
    for tmp in path.parent.glob(glob.escape(prefix) + "*.tmp"):
        pid, sep, _random = tmp.name[len(prefix) : -len(".tmp")].partition(".")
        try:
            if sep and pid.isdigit():
                stale = not _running(int(pid))
            else:
                stale = time.time() - tmp.stat().st_mtime > STALE_TMP_SECONDS
            if stale:
                tmp.unlink()
        except OSError:  # removed meanwhile, or not ours to remove: leave it
            continue


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process, or not a pid at all: keep its file
        return True
    return True


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` (bytes or any bytes-like buffer) to ``path`` atomically; return the path."""
    given: object = data  # callers may pass anything; any buffer (bytearray, memoryview, ...) is written as is
    try:
        memoryview(given)  # type: ignore[arg-type]
    except TypeError:
        hint = " (encode text first, or use atomic_write_text)" if isinstance(given, str) else ""
        raise TypeError(f"data must be bytes (or bytes-like: bytearray, memoryview), got {type(given).__name__}"
                        f"{hint}") from None
    with atomic_open(path, "wb") as f:
        f.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically; return the path."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}"
                        + (" (use atomic_write_bytes for bytes)" if isinstance(text, (bytes, bytearray)) else ""))
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented, valid JSON atomically; return the path.

    JSON has no NaN or infinity, so non-finite floats (also inside numpy scalars and arrays) are written as
    ``null`` and read back as None. Tuples become lists; numpy values and paths become plain JSON values.
    A container that holds itself raises ValueError.
    """
    return atomic_write_text(path, json.dumps(_finite(obj), indent=2, allow_nan=False) + "\n")


def _finite(obj: Any, _inside: frozenset[int] = frozenset()) -> Any:
    """``obj`` with every non-finite float replaced by None, converted to plain JSON types; ``_inside``: the ids
    of the containers around ``obj`` (one seen again is a cycle, which would recurse forever)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (dict, list, tuple)):
        if id(obj) in _inside:
            raise ValueError(f"cannot write JSON: a {type(obj).__name__} holds itself (a circular reference)")
        inside = _inside | {id(obj)}
        if isinstance(obj, dict):
            return {k: _finite(v, inside) for k, v in obj.items()}
        return [_finite(v, inside) for v in obj]
    if obj is None or isinstance(obj, (str, int)):
        return obj
    return _finite(_json_default(obj), _inside)


def _json_default(obj: Any) -> Any:
    # numpy scalars/arrays and paths show up in result rows; keep JSON writing total.
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialize {type(obj).__name__} to JSON")
