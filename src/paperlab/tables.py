"""Markdown tables and PNG figures: the presentation helpers every layer may use (imports nothing of paperlab
but ``paperlab.io``)."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paperlab.io import atomic_write_bytes

__all__ = ["markdown_table", "save_figure"]


def markdown_table(rows: Sequence[dict[str, Any]], *, digits: int = 4) -> str:
    """Render a list of dicts as a GitHub Markdown table (columns in first-seen order)."""
    if not rows:
        return "_(no rows)_\n"
    cols: list[str] = []
    for row in rows:
        cols.extend(k for k in row if k not in cols)
    lines = ["| " + " | ".join(_cell(c, digits) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c, ""), digits) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def _cell(value: Any, digits: int) -> str:
    if value is None:  # a measurement that does not apply to this row (JSON null)
        return "n/a"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.{digits}g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def save_figure(fig: Any, out_dir: Path, name: str) -> str:
    """Save a matplotlib figure as ``out_dir/name.png`` (atomically) and close it; return the file name."""
    import matplotlib.pyplot as plt  # lazily: importing pyplot is slow, and the backend is chosen at use

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    file = f"{name}.png"
    atomic_write_bytes(Path(out_dir) / file, buf.getvalue())
    return file
