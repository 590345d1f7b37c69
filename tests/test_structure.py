"""The import structure of ``src/paperlab``: layers point down, and no modules form an import cycle.

Every import statement is read from the source (module level and inside functions alike, so an import
deferred into a function cannot hide an edge). Library modules (everything but ``experiments``, ``report``
and ``cli``) must not import the study layer; ``report`` sits on top and only ``cli`` imports it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
STUDY = ("paperlab.experiments", "paperlab.report", "paperlab.cli")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _known(name: str) -> str | None:
    """The innermost paperlab module that ``name`` refers to (``a.b.func`` -> ``a.b``), or None."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        # ``from pkg import name``: an edge to the submodule ``pkg.name`` if there is one, else to ``pkg``
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    for target in dict.fromkeys(filter(None, map(_known, names))):
        if target != module:
            yield target


def import_graph() -> dict[str, set[str]]:
    """Module -> the paperlab modules it imports anywhere in its source."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                graph[module].update(_targets(module, node))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_graph_sees_imports_inside_functions(tmp_path):
    tree = ast.parse("def f():\n    from paperlab.report import write_report\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert list(_targets("paperlab.train", node)) == ["paperlab.report"]


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_library_does_not_import_the_study_layer():
    graph = import_graph()
    bad = sorted(f"{m} -> {t}" for m, targets in graph.items() if not any(_within(m, s) for s in STUDY)
                 for t in targets if any(_within(t, s) for s in STUDY))
    assert not bad, "library modules import experiments/report/cli:\n" + "\n".join(bad)


def test_only_the_cli_imports_report():
    graph = import_graph()
    bad = sorted(m for m, targets in graph.items() if "paperlab.report" in targets and not _within(m, "paperlab.cli"))
    assert not bad, f"modules importing paperlab.report (only cli may): {bad}"


def test_experiments_do_not_import_the_cli():
    graph = import_graph()
    bad = sorted(f"{m} -> {t}" for m, targets in graph.items() if _within(m, "paperlab.experiments")
                 for t in targets if _within(t, "paperlab.cli"))
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("module", ["paperlab.tables", "paperlab.io"])
def test_presentation_helpers_sit_low(module):
    deps = import_graph()[module]
    assert deps <= {"paperlab", "paperlab.io"}, f"{module} imports {sorted(deps)}"
