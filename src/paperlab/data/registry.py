"""Named public datasets: where they live, their checksums, and where to download them.

Resolution order for ``path(name)``: an explicit ``root`` argument, then ``$PAPERLAB_DATA``, then the user
cache (``$XDG_CACHE_HOME/paperlab`` or ``~/.cache/paperlab``). Files are never committed to the project.

``path`` checks the file it found against its registered sha256 (a truncated or edited file raises
``ChecksumError``). A file that passed is recorded with its size and mtime in ``<user cache>/verified.json``,
so later loads of the unchanged file skip the hash.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperlab.io import atomic_write_json

__all__ = ["DATASETS", "VERIFIED_FILE", "ChecksumError", "DataFile", "Dataset", "DatasetNotFoundError", "cache_dir",
           "path", "present_files", "sha256_of", "verify_file"]

VERIFIED_FILE = "verified.json"


class DatasetNotFoundError(FileNotFoundError):
    """A registered dataset file is not present in any searched location."""


class ChecksumError(ValueError):
    """A data file's content (downloaded or on disk) does not match its registered sha256."""


@dataclass(frozen=True)
class DataFile:
    """One file: path relative to the data root, sha256 and canonical URL.

    For ``gzip=True`` files the sha256 is of the *decompressed* content: the canonical source serves the plain
    file, which the downloader stores gzip-compressed (gzip headers carry timestamps, so their bytes differ).
    """

    relpath: str
    sha256: str
    url: str
    gzip: bool = False


@dataclass(frozen=True)
class Dataset:
    """A named dataset made of one or more files keyed by role (e.g. ``valid``/``test``)."""

    name: str
    description: str
    files: dict[str, DataFile]


_GH = "https://raw.githubusercontent.com"
_ETT = f"{_GH}/zhouhaoyi/ETDataset/main/ETT-small"
_SSCF = f"{_GH}/junwoopark92/Self-Supervised-Contrastive-Forecsating/main/dataset"
_HICR = f"{_GH}/ljnvs/HiCR-Mamba/main/datasets"


def _one(name: str, description: str, relpath: str, sha: str, url: str, *, gz: bool = False) -> Dataset:
    return Dataset(name, description, {"file": DataFile(relpath, sha, url, gz)})


DATASETS: dict[str, Dataset] = {d.name: d for d in (
    _one("tinyshakespeare", "1.1 MB of Shakespeare (karpathy/char-rnn)", "text/tinyshakespeare.txt",
         "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
         f"{_GH}/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"),
    Dataset("wikitext2", "WikiText-2 (tokenized), validation and test splits", {
        "valid": DataFile("text/wikitext-2/valid.txt",
                          "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
                          f"{_GH}/pytorch/examples/main/word_language_model/data/wikitext-2/valid.txt"),
        "test": DataFile("text/wikitext-2/test.txt",
                         "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
                         f"{_GH}/pytorch/examples/main/word_language_model/data/wikitext-2/test.txt"),
    }),
    _one("ETTh1", "Electricity Transformer Temperature, hourly", "timeseries/ETTh1.csv",
         "f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066", f"{_ETT}/ETTh1.csv"),
    _one("ETTh2", "Electricity Transformer Temperature, hourly", "timeseries/ETTh2.csv",
         "a3dc2c597b9218c7ce1cd55eb77b283fd459a1d09d753063f944967dd6b9218b", f"{_ETT}/ETTh2.csv"),
    _one("ETTm1", "Electricity Transformer Temperature, 15 minutes", "timeseries/ETTm1.csv.gz",
         "6ce1759b1a18e3328421d5d75fadcb316c449fcd7cec32820c8dafda71986c9e", f"{_ETT}/ETTm1.csv", gz=True),
    _one("ETTm2", "Electricity Transformer Temperature, 15 minutes", "timeseries/ETTm2.csv.gz",
         "db973ca252c6410a30d0469b13d696cf919648d0f3fd588c60f03fdbdbadd1fd", f"{_ETT}/ETTm2.csv", gz=True),
    _one("weather", "Jena weather station, 10 minutes, 21 variables", "timeseries/weather.csv.gz",
         "34ee981d07313e51da2a50bb600072c8ae4a69cb4b0651f4cb93a069d7a2ba63", f"{_HICR}/weather/weather.csv",
         gz=True),
    _one("exchange_rate", "daily exchange rates of 8 countries", "timeseries/exchange_rate.csv",
         "d55e7aa2641009814a18ba3279431b13f6d413b0eab195b9ff21988d8cf94e97",
         f"{_SSCF}/exchange_rate/exchange_rate.csv"),
    _one("national_illness", "weekly influenza-like illness (ILI)", "timeseries/national_illness.csv",
         "8594cecb98c6f2f9dc014eca11c4d5d1e38ad5ce6ed0592d4abe65b146fce395", f"{_SSCF}/illness/national_illness.csv"),
    Dataset("prosqa", "ProsQA (Coconut paper), validation and test", {
        "valid": DataFile("reasoning/prosqa_valid.json",
                          "c74e0de24f1e90ec48b1a993e6458a7be4caeef3928f5104e3c2e45d689a5249",
                          f"{_GH}/facebookresearch/coconut/main/data/prosqa_valid.json"),
        "test": DataFile("reasoning/prosqa_test.json",
                         "82ddc0afe6ee30eb31bb16fa208e293e55278a20fa987098d48519cae7e12680",
                         f"{_GH}/facebookresearch/coconut/main/data/prosqa_test.json"),
    }),
    _one("chinchilla_epoch", "Epoch AI's 245 digitised Chinchilla runs", "scaling/chinchilla_epoch_svg_extracted.csv",
         "193478df4e90f040016431996c45682659306840ecdadf83cfb9cd5ca0aa1b30",
         f"{_GH}/epoch-research/analyzing-chinchilla/main/data/svg_extracted_data.csv"),
    _one("chinchilla_kyo", "234-row subset C,N,D,loss", "scaling/chinchilla_kyo_subset.csv",
         "2ed2c412c6b408cb26896b92c0721fe9afa6515726b0db78c33db37cbf2816f9",
         f"{_GH}/kyo-takano/chinchilla/master/examples/llm/df.csv"),
    Dataset("mnist_test", "MNIST test split, 10k 28x28 images (IDX, gzip)", {
        "images": DataFile("mnist/t10k-images-idx3-ubyte.gz",
                           "167310007f03058885c7e95e6c0b19c20de5c7fd3031f4cbdadc9014a523d80b",
                           "https://ossci-datasets.s3.amazonaws.com/mnist/t10k-images-idx3-ubyte.gz"),
        "labels": DataFile("mnist/t10k-labels-idx1-ubyte.gz",
                           "fc607395669ec21321ea83e4b82c0544b7e8e63ff5b34337c06bc0a17cc0da3c",
                           "https://ossci-datasets.s3.amazonaws.com/mnist/t10k-labels-idx1-ubyte.gz"),
    }),
)}


def cache_dir() -> Path:
    """The per-user download cache: ``$XDG_CACHE_HOME/paperlab`` or ``~/.cache/paperlab``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "paperlab"


def get_dataset(name: str) -> Dataset:
    """The registry entry for ``name``; unknown names list the valid ones."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; valid: {sorted(DATASETS)}")
    return DATASETS[name]


def get_file(name: str, file: str | None = None) -> DataFile:
    """One file of a dataset; ``file`` is required when the dataset has several."""
    ds = get_dataset(name)
    if file is None:
        if len(ds.files) != 1:
            raise ValueError(f"dataset {name!r} has several files; pass file= one of {sorted(ds.files)}")
        return next(iter(ds.files.values()))
    if file not in ds.files:
        raise ValueError(f"dataset {name!r} has no file {file!r}; valid: {sorted(ds.files)}")
    return ds.files[file]


def search_roots(root: str | os.PathLike | None = None) -> list[Path]:
    """Where ``path`` looks, in order."""
    roots = []
    if root is not None:
        if not isinstance(root, str | os.PathLike):
            raise TypeError(f"root must be a data folder (str or os.PathLike), got {type(root).__name__} {root!r}")
        roots.append(Path(root))
    if os.environ.get("PAPERLAB_DATA"):
        roots.append(Path(os.environ["PAPERLAB_DATA"]))
    roots.append(cache_dir())
    return roots


def path(name: str, file: str | None = None, *, root: str | os.PathLike | None = None,
         verify: bool = True) -> Path:
    """Resolve a dataset file to an existing local path, checked against its sha256 (``verify_file``).

    Raises DatasetNotFoundError naming the file, the variable and the download command when it is missing,
    and ChecksumError when the first file found has other content (``verify=False`` skips the check).
    """
    entry = get_file(name, file)
    roots = search_roots(root)
    for r in roots:
        candidate = r / entry.relpath
        if candidate.is_file():
            if verify:
                verify_file(candidate, entry, name=name)
            return candidate
    searched = ", ".join(str(r) for r in roots)
    raise DatasetNotFoundError(
        f"dataset file {entry.relpath!r} ({name}) not found in: {searched}. Set PAPERLAB_DATA to a folder "
        f"holding it, or run `paperlab data download {name}`.")


def present_files(root: str | os.PathLike | None = None) -> tuple[tuple[str, int], ...]:
    """``(relpath, size)`` of every registered file found where ``path`` looks (stat only, no hashing).

    A fingerprint of which public data a run could see: experiments fall back to built-in stand-ins when a
    file is missing, so a cached result is only valid for the same set of files.
    """
    found = []
    for ds in DATASETS.values():
        for entry in ds.files.values():
            for r in search_roots(root):
                candidate = r / entry.relpath
                if candidate.is_file():
                    found.append((entry.relpath, candidate.stat().st_size))
                    break
    return tuple(sorted(found))


def sha256_of(file: str | os.PathLike, *, gzip_content: bool = False) -> str:
    """sha256 of a file's bytes (or of its decompressed content with ``gzip_content``)."""
    h = hashlib.sha256()
    opener = gzip.open if gzip_content else open
    with opener(file, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_file(file: Path, entry: DataFile, *, name: str) -> None:
    """Check ``file`` against ``entry.sha256`` (of the decompressed content for gzip entries), hashing it only
    when its (size, mtime) is not recorded as verified in ``cache_dir() / VERIFIED_FILE``.

    Raises ChecksumError naming the file, both hashes and how to download a good copy.
    """
    stat = file.stat()
    key = str(file.resolve())
    record = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": entry.sha256}
    verified = _read_verified()
    if verified.get(key) == record:
        return
    root = file.parents[len(Path(entry.relpath).parts) - 1]
    fix = (f"delete it and run `paperlab data download {name}` (with `--dir {root}` to replace it there), or point "
           "PAPERLAB_DATA at a good copy")
    try:
        actual = sha256_of(file, gzip_content=entry.gzip)
    except (OSError, EOFError) as exc:  # a damaged gzip stream (BadGzipFile is an OSError)
        raise ChecksumError(f"dataset file {file} ({name}) cannot be read: {exc}; {fix}") from exc
    if actual != entry.sha256:
        raise ChecksumError(f"dataset file {file} ({name}) is damaged or not the canonical one: expected sha256 "
                            f"{entry.sha256}, got {actual}; {fix}")
    verified[key] = record
    with contextlib.suppress(OSError):  # a read-only cache only costs a hash on the next load
        atomic_write_json(cache_dir() / VERIFIED_FILE, verified)


def _read_verified() -> dict[str, Any]:
    try:
        data = json.loads((cache_dir() / VERIFIED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable or damaged: verify again
        return {}
    return data if isinstance(data, dict) else {}
