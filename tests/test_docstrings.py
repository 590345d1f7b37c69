"""Prose in ``src/paperlab`` cites papers, never the project's internal spec or notes files.

Those files do not ship with the package, so a user reading the code cannot follow such a reference: a
docstring cites the paper (arXiv id, section or equation where known) and says "reconstruction" or "our
plan" where that is what it is.

The rule, checked on every comment and every string literal (docstrings, help texts, report notes; the
literal parts of f-strings) of every ``.py`` file under ``src/paperlab``:

- the word ``spec`` or ``specs`` (any case, also ``spec's``) is forbidden as a whole word, so "spectral",
  "specific" and identifiers such as ``ClaimSpec`` pass;
- so are the paths ``notes/`` and ``papers/``.

Allowed: text inside double backticks (code, e.g. a variable named ``spec``), and an ``Args:`` entry that
documents a parameter named ``spec`` (a line ``spec: ...``). Code itself (names, f-string expressions) is
never checked.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "paperlab"
FORBIDDEN = re.compile(r"\bspecs?\b|notes/|papers/", re.IGNORECASE)
CODE_SPAN = re.compile(r"``[^`]*``")
ARG_ENTRY = re.compile(r"^\s*specs?\s*:\s", re.IGNORECASE)


def _prose(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every comment and string literal of ``source``, one entry per line of text."""
    pieces: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            pieces += [(node.lineno + i, line) for i, line in enumerate(node.value.splitlines())]
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            pieces.append((tok.start[0], tok.string))
    return pieces


def violations(source: str) -> list[tuple[int, str]]:
    """Lines of ``source``'s prose that mention a spec document, as ``(line, text)``."""
    return [(line, text.strip()) for line, text in _prose(source)
            if not ARG_ENTRY.match(text) and FORBIDDEN.search(CODE_SPAN.sub("", text))]


FILES = sorted(SRC.rglob("*.py"))


def test_files_found() -> None:
    assert len(FILES) > 50, f"expected the package sources under {SRC}, found {len(FILES)} files"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_spec_references(path: Path) -> None:
    found = violations(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(SRC)} mentions a spec document (cite the paper instead): {found}"


@pytest.mark.parametrize("text", [
    '"""Step size (KLA spec, section 1)."""',
    '"""The spec\'s small-scale plan."""',
    "x = 1  # as in the Spec",
    '"""See notes/contracts.md."""',
    '"""Marked [R] (papers/scaling_frontier.md)."""',
    'help = f"the specs of {name}"',
])
def test_rule_flags(text: str) -> None:
    assert violations(text)


@pytest.mark.parametrize("text", [
    '"""Spectral bias on specific bins (arXiv 2510.25800, Table 1)."""',
    'def f(spec):\n    """Parse ``spec``.\n\n    Args:\n        spec: the column spec string.\n    """\n'
    '    return f"bad {spec!r}"',
    "class ClaimSpec:\n    pass",
])
def test_rule_allows(text: str) -> None:
    assert not violations(text)
