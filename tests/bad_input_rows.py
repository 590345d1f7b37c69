"""The row machinery shared by the bad-input tables (``tests/test_bad_input.py``, ``tests/test_bad_input_methods.py``).

A row is ``(id, callable, args, kwargs, exception type, regex the message must match)``; arguments that need files
are ``Res("name")`` placeholders, built once per module by a ``resources`` fixture made with ``resources_fixture``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Row = tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any], type[BaseException], str]


@dataclasses.dataclass(frozen=True)
class Res:
    """A placeholder for an argument built by the ``resources`` fixture."""

    name: str


def resources_fixture(build: Callable[[str, Path], Any], *, folder: str) -> Any:
    """A module-scoped ``resources`` fixture: ``resources(name)`` is ``build(name, tmp)``, built once."""

    @pytest.fixture(scope="module")
    def resources(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
        tmp, built = tmp_path_factory.mktemp(folder), {}

        def get(name: str) -> Any:
            if name not in built:
                built[name] = build(name, tmp)
            return built[name]

        return get

    return resources


def _resolve(value: Any, resources: Callable[[str], Any]) -> Any:
    return resources(value.name) if isinstance(value, Res) else value


def check_row(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], exc: type[BaseException],
              pattern: str, resources: Callable[[str], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Call one row in a scratch folder (rows that would write must not get that far) with a scratch user cache;
    it must raise ``exc`` with a message matching ``pattern``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    args = tuple(_resolve(a, resources) for a in args)
    kwargs = {k: _resolve(v, resources) for k, v in kwargs.items()}
    with pytest.raises(exc) as err:
        fn(*args, **kwargs)
    assert re.search(pattern, str(err.value)), f"{type(err.value).__name__}: {err.value}"
