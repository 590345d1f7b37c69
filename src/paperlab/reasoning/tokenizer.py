"""A word-level tokenizer for the closed ProsQA language (names, nonce concepts, a few function words).

Words and the punctuation ``.``/``?`` are separate tokens; ``\\n`` and the special markers (``<bot>``,
``<eot>``, ``<thought>``, ``<pause>``, ``###``, ``<eos>``, ``<pad>``) are single tokens. ``decode(encode(s))``
returns ``s`` for every sentence of the language (single spaces, no space before punctuation).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from paperlab.data.tokenizers import token_ids
from paperlab.reasoning.prosqa import CONCEPTS, NAMES

__all__ = ["SPECIALS", "WordTokenizer", "prosqa_tokenizer"]

SPECIALS: tuple[str, ...] = ("<pad>", "<eos>", "<bot>", "<eot>", "<thought>", "<pause>", "###", "\n")
_FUNCTION_WORDS = ("Every", "is", "a", "Is", "or", ".", "?")
_TOKEN_RE = re.compile(r"<[a-z]+>|###|\n|[.?]|[^\s.?]+")


class WordTokenizer:
    """Maps words to ids and back over a fixed vocabulary; unknown words raise ValueError.

    Args:
        words: the vocabulary in id order (must start with ``SPECIALS`` so the marker ids are stable).
    """

    def __init__(self, words: Sequence[str]) -> None:
        if isinstance(words, str) or not isinstance(words, Iterable):
            raise TypeError(f"words must be a sequence of str (the vocabulary in id order), got "
                            f"{type(words).__name__} {str(words)[:40]!r}")
        words = list(words)
        if not all(isinstance(w, str) for w in words):
            raise TypeError(f"words must all be str (the vocabulary in id order), got "
                            f"{sorted({type(w).__name__ for w in words if not isinstance(w, str)})}")
        if tuple(words[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"vocabulary must start with the special tokens {SPECIALS}")
        if len(set(words)) != len(words):
            dup = sorted({w for w in words if words.count(w) > 1})
            raise ValueError(f"vocabulary has duplicate words {dup}")
        self.words: tuple[str, ...] = tuple(words)
        self.index: dict[str, int] = {w: i for i, w in enumerate(words)}

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def id(self, word: str) -> int:
        """The id of one token (e.g. ``tok.id("<bot>")``)."""
        if word not in self.index:
            raise ValueError(f"unknown token {word!r}; the vocabulary has {len(self)} words")
        return self.index[word]

    @property
    def pad_id(self) -> int:
        return self.index["<pad>"]

    @property
    def eos_id(self) -> int:
        return self.index["<eos>"]

    def split(self, text: str) -> list[str]:
        """Text -> token strings (words, punctuation, markers)."""
        return _TOKEN_RE.findall(text)

    def encode(self, text: str) -> list[int]:
        """Text -> ids; a word outside the vocabulary raises ValueError naming it."""
        return [self.id(w) for w in self.split(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """Ids -> text: single spaces between words, none before ``.``/``?`` or around ``\\n``."""
        out = ""
        for i in token_ids("ids", ids):
            if not 0 <= i < len(self.words):
                raise ValueError(f"token id {i} outside the vocabulary [0, {len(self.words)})")
            w = self.words[i]
            if not out or w in (".", "?", "\n") or out.endswith("\n"):
                out += w
            else:
                out += " " + w
        return out


def prosqa_tokenizer() -> WordTokenizer:
    """The tokenizer of the ProsQA language: specials, function words, 17 names, 38 concepts (70 tokens)."""
    return WordTokenizer([*SPECIALS, *_FUNCTION_WORDS, *NAMES, *CONCEPTS])
