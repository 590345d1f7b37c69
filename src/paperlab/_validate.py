"""Checks for user input that raise ValueError/TypeError naming the argument, the value and the rule."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = [
    "check_bool",
    "check_choice",
    "check_in_range",
    "check_int",
    "check_positive",
    "check_probability",
    "check_same_length",
]

_Choice = TypeVar("_Choice", str, int)


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (Python's or NumPy's); 0, 1 and strings are refused with a TypeError."""
    np = sys.modules.get("numpy")  # NumPy's bool counts, without importing NumPy here
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Return ``value`` as float if it is a finite number > 0 (>= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        rule = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {rule}, got {value!r}")
    return float(value)


def check_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    """Return ``value`` if it is an int (not bool) at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_in_range(
    name: str, value: Any, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> float:
    """Return ``value`` as float if it lies in the interval; the message spells the interval."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    lo_ok = value > low if low_open else value >= low
    hi_ok = value < high if high_open else value <= high
    if not (math.isfinite(value) and lo_ok and hi_ok):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return float(value)


def check_probability(name: str, value: Any) -> float:
    """Return ``value`` if it lies in [0, 1]."""
    return check_in_range(name, value, 0.0, 1.0)


def check_choice(name: str, value: Any, choices: Iterable[_Choice]) -> _Choice:
    """Return ``value`` if it is one of ``choices``; otherwise list the valid ones."""
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; choose one of {sorted(choices)}")
    return value


def check_same_length(**arrays: Any) -> int:
    """Require the named sequences to have one common, non-zero length; return it."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"arguments must have the same length, got {lengths}")
    n = next(iter(lengths.values()))
    if n == 0:
        raise ValueError(f"arguments must be non-empty, got lengths {lengths}")
    return n
