"""The import structure of ``src/paperlab``: layers point down, and no modules form an import cycle.

Every import statement is read from the source (module level and inside functions alike, so an import
deferred into a function cannot hide an edge). Library modules (everything but ``experiments``, ``report``
and ``cli``) must not import the study layer; ``report`` sits on top and only ``cli`` imports it.

Imports sit at module level, where a cycle or a missing dependency fails at import time. An import inside a
function needs one of the reasons below (``deferral_reason``): an optional package, matplotlib, or the
start-up boundary (command handlers and paper run wrappers, so that ``paperlab --help``, ``paperlab reproduce
--list`` and ``import paperlab.experiments`` load no torch). Lazily exporting packages (``paperlab.audit``,
``paperlab.reasoning``) use PEP 562 ``__getattr__`` with ``importlib``, not import statements.
"""

from __future__ import annotations

import ast
import sys
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


# Why an import may sit inside a function. Optional packages (extras, or absent on CPU machines): imported where
# they are used, with an install hint on ImportError.
OPTIONAL = {
    "fla": "flash-linear-attention GPU kernels (extra [gpu]); the delta-rule chunk falls back to torch",
    "triton": "fla's kernel compiler (extra [gpu])",
    "tokenizers": "the BPE tokenizer (extra [bpe])",
    "transformers": "peer models in comparisons (never a dependency)",
    "neuralforecast": "the FreLE loss adapter for neuralforecast users",
    "darts": "the FreLE loss adapter for darts users",
    "threadpoolctl": "one BLAS thread for the law fitter: a speed-up when installed",
}
PLOTTING = {"matplotlib": "slow to import, and the backend is chosen where a figure is made (matplotlib.use)"}
# The start-up boundary: modules whose functions may defer imports of paperlab and third-party modules (not of
# the standard library: it is cheap to import), so the CLI and the paper registry start fast and without torch
# (tests/experiments/test_base.py, tests/cli/test_cli.py).
START_UP = {
    "paperlab.cli.*": "command handlers: `paperlab --help` and `paperlab reproduce --list` load no torch",
    "paperlab.experiments.<paper>": "a paper's run wrappers: `import paperlab.experiments` loads no torch",
    "paperlab.experiments.<paper>.configs": "a paper's configs, read by the registry: same reason",
    "paperlab.audit.registry": "the auditor registry the SMI configs read: a factory imports its class when "
                               "called (tests/audit/test_registries.py checks its import loads no torch)",
}
PAPERS = {m for m in MODULES if m.startswith("paperlab.experiments.") and m.count(".") == 2
          and MODULES[m].name == "__init__.py"}


def _at_start_up(module: str) -> bool:
    return (_within(module, "paperlab.cli") or module in PAPERS or module == "paperlab.audit.registry"
            or (module.endswith(".configs") and module.rpartition(".")[0] in PAPERS))


def _top_name(node: ast.Import | ast.ImportFrom) -> str:
    if isinstance(node, ast.ImportFrom):
        return "paperlab" if node.level else (node.module or "").partition(".")[0]
    return node.names[0].name.partition(".")[0]


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in ("ImportError", "ModuleNotFoundError") for t in caught)


def deferral_reason(module: str, node: ast.Import | ast.ImportFrom, *, guarded: bool) -> str | None:
    """Why this function-level import of ``module`` may stay in its function, or None if it belongs at the top.

    ``guarded``: the import sits in the body of a ``try`` that catches ImportError (an optional dependency).
    """
    top = _top_name(node)
    if top in OPTIONAL:
        return "optional"
    if guarded:
        return "optional (try/except ImportError)"
    if top in PLOTTING:
        return "matplotlib"
    if _at_start_up(module) and top not in sys.stdlib_module_names:
        return "start-up boundary"
    return None


def function_level_imports(module: str, source: str) -> Iterator[tuple[int, str, str | None]]:
    """``(line, import text, reason or None)`` for every import statement inside a function of ``source``."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        chain, guarded, in_function = node, False, False
        while chain in parents:
            parent = parents[chain]
            if isinstance(parent, ast.Try) and chain in parent.body:
                guarded = guarded or any(_catches_import_error(h) for h in parent.handlers)
            in_function = in_function or isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef)
            chain = parent
        if in_function:
            yield node.lineno, ast.unparse(node), deferral_reason(module, node, guarded=guarded)


def test_the_deferral_rule_flags_a_planted_import():
    source = ("def fit():\n    from paperlab.train import train\n"
              "def plot():\n    import matplotlib.pyplot as plt\n"
              "def kernel():\n    try:\n        import sklearn\n    except ImportError:\n        raise\n"
              "def tokens():\n    import tokenizers\n"
              "def stdlib():\n    import json\n")
    library = {text: reason for _, text, reason in function_level_imports("paperlab.scaling.fit", source)}
    assert library == {"from paperlab.train import train": None, "import matplotlib.pyplot as plt": "matplotlib",
                       "import sklearn": "optional (try/except ImportError)", "import tokenizers": "optional",
                       "import json": None}
    cli = {text: reason for _, text, reason in function_level_imports("paperlab.cli.lm", source)}
    assert cli["from paperlab.train import train"] == "start-up boundary" and cli["import json"] is None
    assert [r for _, _, r in function_level_imports("paperlab.train", "import torch\nif 1:\n    import json\n")] == []


def test_imports_inside_functions_have_a_reason():
    bad = [f"{path.relative_to(SRC)}:{line}: {text}" for module, path in MODULES.items()
           for line, text, reason in function_level_imports(module, path.read_text(encoding="utf-8"))
           if reason is None]
    assert not bad, ("imports inside functions without a reason (move them to the top of the module, or see "
                     "OPTIONAL, PLOTTING and START_UP):\n" + "\n".join(bad))
