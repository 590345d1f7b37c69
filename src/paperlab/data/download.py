"""Download registered datasets with checksum verification and atomic writes."""

from __future__ import annotations

import gzip
import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

from paperlab.data.registry import ChecksumError, DataFile, cache_dir, get_dataset
from paperlab.io import atomic_open

__all__ = ["ChecksumError", "download", "download_file"]


def download_file(entry: DataFile, dest_root: Path, *, url: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch one file into ``dest_root/entry.relpath``; verify sha256 before the final rename.

    Nothing is left at the destination if the transfer fails or the checksum does not match.
    """
    src = url or entry.url
    dest = Path(dest_root) / entry.relpath
    h = hashlib.sha256()
    try:
        with urllib.request.urlopen(src, timeout=timeout) as resp, atomic_open(dest, "wb") as raw:
            sink = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if entry.gzip else raw
            for chunk in iter(lambda: resp.read(1 << 20), b""):
                h.update(chunk)
                sink.write(chunk)
            if entry.gzip:
                sink.close()
            if h.hexdigest() != entry.sha256:
                raise ChecksumError(f"checksum mismatch for {src}: expected sha256 {entry.sha256}, "
                                    f"got {h.hexdigest()}; nothing was written to {dest}")
    except urllib.error.URLError as exc:
        raise ConnectionError(f"could not download {src}: {exc}; nothing was written to {dest}") from exc
    return dest


def download(name: str, *, root: str | os.PathLike | None = None, base_url: str | None = None,
             timeout: float = 60.0) -> list[Path]:
    """Download every file of dataset ``name`` into ``root`` (default: the user cache).

    ``base_url`` replaces each file's canonical URL by ``base_url/<relpath>`` (a mirror, or a test server).
    """
    ds = get_dataset(name)
    dest_root = Path(root) if root is not None else cache_dir()
    return [download_file(entry, dest_root, timeout=timeout,
                          url=f"{base_url.rstrip('/')}/{entry.relpath}" if base_url else None)
            for entry in ds.files.values()]
