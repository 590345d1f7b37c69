"""Every third-party module imported under src/ is a declared dependency, or an optional extra whose absence
raises an ImportError naming the install command; nothing declared goes unused."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "paperlab"
# import name -> distribution name, where they differ
DISTRIBUTION = {"sklearn": "scikit-learn", "fla": "flash-linear-attention"}


def _imported() -> dict[str, set[str]]:
    """Top-level third-party module -> files importing it."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "paperlab":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    text = (SRC / "losses" / "adapters.py").read_text(encoding="utf-8")
    for module in re.findall(r'_require\("([a-z_]+)', text):  # imported by name through importlib
        found.setdefault(module, set()).add("src/paperlab/losses/adapters.py")
    return found


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_every_import_is_declared_and_every_dependency_imported() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = _names(project["dependencies"])
    extras = {k: _names(v) for k, v in project["optional-dependencies"].items() if k != "dev"}
    optional = set().union(*extras.values())
    imported = {DISTRIBUTION.get(m, m).lower(): files for m, files in _imported().items()}
    undeclared = {d: sorted(f) for d, f in imported.items() if d not in runtime | optional}
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
    assert runtime - set(imported) == set(), f"declared but never imported: {runtime - set(imported)}"
    assert optional - set(imported) <= {"triton"}, "triton is fla's kernel dependency; others must be imported"


def test_optional_imports_name_their_install_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = _names(project["dependencies"])
    for module, files in _imported().items():
        if DISTRIBUTION.get(module, module).lower() in runtime:
            continue
        for file in files:
            assert "pip install" in (ROOT / file).read_text(encoding="utf-8"), (
                f"{file} imports optional {module!r} without an ImportError naming `pip install`")
