"""Benchmark helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from paperlab.bench import environment, format_table, time_fn, time_interleaved, write_results


def test_time_fn_counts_calls_and_orders_stats() -> None:
    calls = []
    t = time_fn(lambda: calls.append(1), warmup=2, repeats=5)
    assert len(calls) == 7 and t.repeats == 5
    assert 0 <= t.min <= t.median and t.iqr >= 0
    with pytest.raises(ValueError, match="repeats"):
        time_fn(lambda: None, repeats=0)


def test_write_results_and_table(tmp_path: Path) -> None:
    @dataclass(frozen=True)
    class Cfg:
        size: int = 3

    rows = [{"op": "a", "ms": 1.5}, {"op": "bb", "ms": 10.25, "x": 1}]
    text = write_results(tmp_path / "r.json", Cfg(), rows)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc == json.loads(text) and doc["config"] == {"size": 3} and doc["rows"] == rows
    assert set(environment()) <= set(doc["environment"])
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["op", "ms", "x"] and lines[3].split() == ["bb", "10.25", "1"]


def test_time_interleaved_calls_peers_in_turn() -> None:
    order: list[str] = []
    out = time_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, warmup=1, repeats=3)
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b"]  # a warm-up round, then timed rounds in rotating order
    for wall, cpu in out.values():
        assert wall.repeats == cpu.repeats == 3 and wall.min <= wall.median and cpu.min >= 0
    order.clear()
    time_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, warmup=0, repeats=1, rewarm=2)
    assert order == ["a", "a", "a", "b", "b", "b"]  # two untimed calls right before each timed one
    with pytest.raises(ValueError, match="at least one"):
        time_interleaved({})
