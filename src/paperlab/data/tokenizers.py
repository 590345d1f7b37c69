"""Text tokenizers: byte-level (default, vocab 256), character-level, and a trained BPE (optional extra).

Every tokenizer has ``vocab_size``, ``encode(text) -> list[int]``, ``decode(ids) -> str`` and ``save(dir)``;
``load_tokenizer(dir)`` reads back what ``save`` wrote (``tokenizer.json``, plus ``bpe.json`` for BPE), so a
checkpoint folder carries its tokenizer. BPE needs the ``tokenizers`` package: ``pip install paperlab[bpe]``.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from paperlab._validate import check_choice, check_int
from paperlab.io import atomic_write_json, atomic_write_text

__all__ = ["TOKENIZERS", "BPETokenizer", "ByteTokenizer", "CharTokenizer", "Tokenizer", "load_tokenizer",
           "make_tokenizer", "token_ids"]

TOKENIZER_FILE = "tokenizer.json"
BPE_FILE = "bpe.json"


def token_ids(name: str, ids: Any) -> list[int]:
    """``ids`` (an iterable of ints, numpy or 0-d torch integers, or whole floats) as a list of int. ``TypeError``
    for None, text and non-numbers, ``ValueError`` for a non-integer value (a cast would truncate 1.7 to id 1)."""
    if ids is None or isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise TypeError(f"{name} must be an iterable of integer token ids, got {type(ids).__name__} "
                        f"{str(ids)[:40]!r}")
    out = []
    for i in ids:
        try:
            out.append(operator.index(i))
            continue
        except TypeError:
            pass
        try:
            if isinstance(i, str | bytes):
                raise TypeError(f"text {i!r}")
            value = float(i)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold integer token ids, got {type(i).__name__} {i!r}") from None
        if not value.is_integer():
            raise ValueError(f"{name} must hold integer token ids, got {i!r} (not a whole number)")
        out.append(int(value))
    return out


def _check_text(text: Any) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__} {str(text)[:40]!r}")
    return text


class Tokenizer:
    """Common interface; subclasses set ``kind`` and implement encode/decode."""

    kind = ""
    vocab_size = 0

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError

    def _spec(self) -> dict[str, Any]:
        return {}

    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``tokenizer.json`` (and any model file) into ``directory``; return the json path."""
        path = Path(directory) / TOKENIZER_FILE
        atomic_write_json(path, {"kind": self.kind, "vocab_size": self.vocab_size, **self._spec()})
        return path

    def _check_ids(self, ids: Sequence[int]) -> list[int]:
        ids = token_ids("ids", ids)
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got {bad[:5]}")
        return ids

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"


class ByteTokenizer(Tokenizer):
    """UTF-8 bytes as tokens (vocab 256); invalid byte sequences decode to U+FFFD."""

    kind = "byte"
    vocab_size = 256

    def encode(self, text: str) -> list[int]:
        return list(_check_text(text).encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(self._check_ids(ids)).decode("utf-8", errors="replace")


class CharTokenizer(Tokenizer):
    """One token per distinct character of the text it was built from (sorted by code point)."""

    kind = "char"

    def __init__(self, chars: Sequence[str]) -> None:
        if not isinstance(chars, Iterable):
            raise TypeError(f"chars must be a sequence of distinct single characters (or a str), got "
                            f"{type(chars).__name__} {chars!r}")
        chars = list(chars)
        if not chars or any(not isinstance(c, str) or len(c) != 1 for c in chars) or len(set(chars)) != len(chars):
            raise ValueError("chars must be a non-empty sequence of distinct single characters")
        self.chars = chars
        self.vocab_size = len(chars)
        self._index = {c: i for i, c in enumerate(chars)}

    @classmethod
    def fit(cls, text: str) -> CharTokenizer:
        """The vocabulary of ``text`` (build it on the whole corpus so validation has no unknown chars)."""
        if not _check_text(text):
            raise ValueError("text must be non-empty to build a character vocabulary")
        return cls(sorted(set(text)))

    def encode(self, text: str) -> list[int]:
        try:
            return [self._index[c] for c in _check_text(text)]
        except KeyError as exc:
            raise ValueError(f"character {exc.args[0]!r} is not in the vocabulary of {self.vocab_size} chars"
                             ) from None

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.chars[i] for i in self._check_ids(ids))

    def _spec(self) -> dict[str, Any]:
        return {"chars": "".join(self.chars)}


def _hf_tokenizers():
    try:
        import tokenizers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the BPE tokenizer needs the 'tokenizers' package: pip install 'paperlab[bpe]'") from exc
    return tokenizers


class BPETokenizer(Tokenizer):
    """Byte-level BPE trained with the ``tokenizers`` package (lossless on any text)."""

    kind = "bpe"

    def __init__(self, model: Any) -> None:
        self._model = model
        self.vocab_size = model.get_vocab_size()

    @classmethod
    def train(cls, text: str, *, vocab_size: int = 1024) -> BPETokenizer:
        """Learn merges on ``text`` until ``vocab_size`` tokens (>= 257: the 256 bytes are always kept)."""
        check_int("vocab_size", vocab_size, minimum=257)
        _check_text(text)
        tk = _hf_tokenizers()
        model = tk.Tokenizer(tk.models.BPE())
        model.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
        model.decoder = tk.decoders.ByteLevel()
        trainer = tk.trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                         initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
        model.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
        return cls(model)

    @classmethod
    def load_file(cls, path: str | os.PathLike) -> BPETokenizer:
        return cls(_hf_tokenizers().Tokenizer.from_file(str(path)))

    def encode(self, text: str) -> list[int]:
        return self._model.encode(_check_text(text)).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self._model.decode(self._check_ids(ids))

    def save(self, directory: str | os.PathLike) -> Path:
        atomic_write_text(Path(directory) / BPE_FILE, self._model.to_str())
        return super().save(directory)

    def _spec(self) -> dict[str, Any]:
        return {"file": BPE_FILE}


TOKENIZERS = ("byte", "char", "bpe")


def make_tokenizer(kind: str = "byte", *, text: str | None = None, vocab_size: int = 1024) -> Tokenizer:
    """Build a tokenizer; ``char`` and ``bpe`` are fitted on ``text`` (``vocab_size`` is BPE's)."""
    check_choice("kind", kind, TOKENIZERS)
    if kind == "byte":
        return ByteTokenizer()
    if text is None:
        raise ValueError(f"tokenizer kind={kind!r} must be fitted: pass text=")
    _check_text(text)
    return CharTokenizer.fit(text) if kind == "char" else BPETokenizer.train(text, vocab_size=vocab_size)


def load_tokenizer(directory: str | os.PathLike) -> Tokenizer:
    """Read the tokenizer that ``Tokenizer.save`` wrote into ``directory``; a BPE model file is read from that
    folder only (ValueError when ``tokenizer.json`` names a path elsewhere).

    A missing file raises ``FileNotFoundError``; a damaged one (not UTF-8 JSON, not an object, a char tokenizer
    without its ``chars`` string, an unreadable BPE model) raises ``ValueError`` naming the file.
    """
    if not isinstance(directory, str | os.PathLike):
        raise TypeError(f"directory must be a folder path (str or os.PathLike), got {type(directory).__name__} "
                        f"{directory!r}")
    path = Path(directory) / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {TOKENIZER_FILE} in {directory}")
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text ({err}); a damaged file?") from err
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON ({err}); an empty, truncated or damaged file?") from err
    if not isinstance(spec, dict):
        raise ValueError(f"{path} must hold a JSON object with a 'kind' (as Tokenizer.save writes it), got "
                         f"{type(spec).__name__}")
    kind = check_choice("tokenizer kind", spec.get("kind"), TOKENIZERS)
    if kind == "byte":
        return ByteTokenizer()
    if kind == "char":
        chars = spec.get("chars")
        if not isinstance(chars, str):
            raise ValueError(f"{path}: a char tokenizer needs 'chars', the vocabulary as one string, got "
                             f"{'nothing' if chars is None else type(chars).__name__ + ' ' + repr(chars)}")
        try:
            return CharTokenizer(list(chars))
        except ValueError as err:
            raise ValueError(f"{path}: 'chars' {chars!r}: {err}") from err
    # the model file is the folder's own (save writes a bare name): never a path that leads elsewhere on disk
    name = spec.get("file")
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise ValueError(f"{path}: 'file' must name a file inside {directory} (as Tokenizer.save writes it), "
                         f"got {name!r}")
    model_file = Path(directory) / name
    if not model_file.is_file():
        raise FileNotFoundError(f"{path} names the BPE model file {name!r}, but {model_file} does not exist")
    _hf_tokenizers()  # not installed: its ImportError, not a damaged-file error
    try:
        return BPETokenizer.load_file(model_file)
    except Exception as err:  # the tokenizers package raises bare Exception for unreadable model files
        raise ValueError(f"{model_file} is not a BPE model file the tokenizers package can read ({err})") from err
