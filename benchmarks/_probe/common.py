"""What every case table shares: :class:`Case`, the result checks and the generic variant builders.

A :class:`Case` is a thunk plus what a right answer is: ``check=None`` (``RAISE``) means the input must be refused;
otherwise returning is legitimate and ``check(result)`` says whether the result is right. ``names`` is the regex a
clear error message must match (the offending argument or file). Files are written into the current folder, which
``probe_inputs.py`` makes a scratch folder.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

Check = Callable[[Any], bool] | None


@dataclass
class Case:
    entry: str
    klass: str
    desc: str
    fn: Callable[[], Any]
    names: str
    check: Check = None
    note: str = ""

    @property
    def id(self) -> str:
        return f"{self.entry}: {self.desc}"


CASES: list[Case] = []


def add(entry: str, klass: str, desc: str, fn: Callable[[], Any], names: str, check: Check = None,
        note: str = "") -> None:
    CASES.append(Case(entry, klass, desc, fn, names, check, note))


# ------------------------------------------------------------------------------------------------ result checks
def _leaves(x: Any, depth: int = 0):
    if depth > 4:
        return
    if isinstance(x, (torch.Tensor, np.ndarray, float, np.floating)):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v, depth + 1)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves(v, depth + 1)
    elif hasattr(x, "__dataclass_fields__"):
        for name in x.__dataclass_fields__:
            yield from _leaves(getattr(x, name), depth + 1)


def finite(x: Any) -> bool:
    """Every float in ``x`` (tensors, arrays, floats, containers, dataclasses) is finite."""
    for leaf in _leaves(x):
        if isinstance(leaf, torch.Tensor):
            if (leaf.is_floating_point() or leaf.is_complex()) and not bool(torch.isfinite(leaf).all()):
                return False
        elif isinstance(leaf, np.ndarray):
            if leaf.dtype.kind in "fc" and not np.isfinite(leaf).all():
                return False
        elif not math.isfinite(leaf):
            return False
    return True


def visible(x: Any) -> bool:
    """A non-finite input shows up in the output (propagated, not swallowed)."""
    return not finite(x)


def _main(x: Any) -> Any:
    return x[0] if isinstance(x, (tuple, list)) else x


def shape_is(*shape: int) -> Callable[[Any], bool]:
    return lambda r: tuple(_main(r).shape) == shape and finite(_main(r))


def always(_: Any) -> bool:
    return True


RAISE = None  # the "check" of a case that must be refused


# ------------------------------------------------------------------------------------------- generic variants
def _cast(t: Any, kind: str) -> Any:
    if isinstance(t, np.ndarray):
        return {"int": t.astype(np.int64), "bool": t > 0, "complex": t.astype(np.complex128)}[kind]
    return {"int": t.long(), "bool": t > 0, "complex": t.to(torch.complex64)}[kind]


def poke(t: Any, value: float) -> Any:
    t = t.copy() if isinstance(t, np.ndarray) else t.clone()
    t.reshape(-1)[0] = value
    return t


TENSOR_VARIANTS: tuple[tuple[str, str, Callable[[Any], Any], str], ...] = (
    ("type", "None", lambda t: None, "raise"),
    ("type", "str", lambda t: "abc", "raise"),
    ("type", "nested list", lambda t: t.tolist(), "list"),
    ("shape", "extra leading dim", lambda t: t[None], "raise"),
    ("shape", "leading dim dropped", lambda t: t[0], "raise"),
    ("dtype", "int64", lambda t: _cast(t, "int"), "int"),
    ("dtype", "bool", lambda t: _cast(t, "bool"), "bool"),
    ("dtype", "complex", lambda t: _cast(t, "complex"), "complex"),
    ("nonfinite", "one nan", lambda t: poke(t, math.nan), "nonfinite"),
    ("nonfinite", "one +inf", lambda t: poke(t, math.inf), "nonfinite"),
    ("nonfinite", "one -inf", lambda t: poke(t, -math.inf), "nonfinite"),
    ("magnitude", "x1e20", lambda t: t * 1e20, "magnitude"),
    ("magnitude", "x1e-40", lambda t: t * 1e-40, "magnitude"),
)
TENSOR_POLICY: dict[str, Check | str] = {"raise": "raise", "list": "raise", "int": "raise", "bool": "raise",
                                         "complex": "raise", "nonfinite": visible, "magnitude": finite}


def tensor_cases(entry: str, call: Callable[..., Any], base: dict[str, Any], *, args: tuple[str, ...] | None = None,
                 policy: dict[str, Check | str] | None = None,
                 overrides: dict[tuple[str, str], tuple[Check | str, str]] | None = None,
                 baseline: Check | str = finite) -> None:
    """The baseline ``call(**base)`` (unless ``baseline="skip"``) and the ``TENSOR_VARIANTS`` of each tensor/array
    argument in ``args``."""
    if baseline != "skip":
        add(entry, "baseline", "valid call", lambda: call(**base), "", baseline)
    pol = {**TENSOR_POLICY, **(policy or {})}
    for name in args or tuple(base):
        for klass, label, transform, key in TENSOR_VARIANTS:
            expect, note = (overrides or {}).get((name, label), (pol[key], ""))
            check = RAISE if expect == "raise" else expect
            add(entry, klass, f"{name} {label}",
                lambda name=name, transform=transform: call(**{**base, name: transform(base[name])}),
                rf"\b{name}\b", check, note)


def hp_cases(entry: str, call: Callable[..., Any], name: str, bad: tuple[Any, ...] = (),
             ok: tuple[Any, ...] = (), check: Check = finite, names: str | None = None,
             note: str | dict[str, str] = "") -> None:
    """``call(**{name: value})`` for values that must be refused (``bad``) and values that must work (``ok``);
    ``note`` is one note for all, or notes by ``short(value)``."""
    for value, expect in [(v, RAISE) for v in bad] + [(v, check) for v in ok]:
        if value is None or isinstance(value, (str, list, dict)):
            klass = "type"
        elif isinstance(value, float) and value != 0 and math.isfinite(value) and not 1e-30 < abs(value) < 1e15:
            klass = "magnitude"
        else:
            klass = "hyperparam"
        add(entry, klass, f"{name}={short(value)}", lambda value=value: call(**{name: value}),
            names or rf"\b{re_name(name)}\b", expect, note if isinstance(note, str) else note.get(short(value), ""))


def short(value: Any) -> str:
    """``repr`` for case names: ``10**400`` and ``2**64`` instead of their digits, shapes instead of tensors."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**6:
        for base in (10, 2):
            exp = round(math.log(abs(value), base))
            if value == base**exp:
                return f"{base}**{exp}"
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return f"{type(value).__name__}{tuple(value.shape)}"
    return repr(value)


def re_name(name: str) -> str:
    return name.replace("[", r"\[").replace("]", r"\]")


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def write(name: str, content: bytes | str) -> Path:
    """Write a scratch file (folders created) in the current folder and return its path."""
    path = Path("files") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return path
