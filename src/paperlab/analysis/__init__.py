"""Analysis helpers behind the paper experiments (tables, plots); import the submodules directly."""

from __future__ import annotations

__all__: list[str] = []
