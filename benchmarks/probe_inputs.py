"""Probe the public entry points with bad and edge inputs and count how each one is handled.

Run: ``python benchmarks/probe_inputs.py [--only SUBSTRING] [--timeout SECONDS] [--out PATH]``. Every case is a
tiny call (tensors of a few elements) made from a valid baseline by changing one thing. Cases run one by one
under a time limit (SIGALRM), in a scratch folder, with ``XDG_CACHE_HOME`` pointed there and ``PAPERLAB_DATA``
unset. Writes ``benchmarks/results/probe_inputs.json`` (``{"counts": ..., "cases": [...]}``). The case tables
live in the ``_probe`` package beside this file (one module per area).

Outcomes:
- ``clear``: raised ValueError, TypeError, OSError (FileNotFoundError, IsADirectoryError, ...), ImportError,
  FloatingPointError or a paperlab exception, or any type from a ``raise`` statement in paperlab's own code
  (not an ``assert``), and the message names the offending argument or file: the case's ``names`` regex
  matches it (case-insensitive) once ``name=(shape)`` listings are removed, so a "shapes seen: q=(1, 4), ..."
  suffix does not name every argument.
- ``unclear``: one of those types, but the message does not name it (numpy's "could not convert string to
  float", json's "Expecting value", torch's "argument 'input' must be Tensor").
- ``crash``: any other exception (IndexError, KeyError, AttributeError, ZeroDivisionError, AssertionError,
  OverflowError, StopIteration, RecursionError, a torch RuntimeError, ...) or the time limit.
- ``silent``: returned although the case must be refused (``check`` is None), or returned a result that its
  check rejects (a non-finite value from finite inputs, a wrong shape, a swallowed NaN).
- ``ok``: returned a result its check accepts, where returning is legitimate (raising clearly is then ``clear``).

Where both returning and raising are defensible the case's ``note`` says so. The shared rules: NaN/inf in the
data of a tensor op (ops, layers, losses, LM) may propagate, as torch does, if it stays visible (a finite
result from a NaN input is silent), while fits, audits and probes must refuse non-finite data; empty batches
may return an empty result of the right shape; finite extremes (1e20, 1e-40) must give finite results or a
clear refusal. Baselines (the unchanged valid calls) are run too and reported apart from the counts.
"""

from __future__ import annotations

import argparse
import json
import linecache
import os
import re
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import paperlab  # noqa: E402
from _probe import Case, build_cases  # noqa: E402  (the case tables, in _probe/ beside this file)

OUT = Path(__file__).resolve().parent / "results" / "probe_inputs.json"
OUTCOMES = ("clear", "unclear", "crash", "silent", "ok")
EXPECTED = (ValueError, TypeError, OSError, ImportError, FloatingPointError)
PAPERLAB_DIR = str(Path(paperlab.__file__).resolve().parent)
_SHAPE_LISTING = re.compile(r"\b\w+=\((?:\d+(?:, )?)*,?\)")


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so that ``except Exception`` in the library cannot swallow it."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _origin(exc: BaseException) -> tuple[str, bool]:
    """(module of the innermost frame, whether that frame is a ``raise`` statement in paperlab's code)."""
    tb = exc.__traceback__
    if tb is None:
        return "?", False
    while tb.tb_next is not None:
        tb = tb.tb_next
    file = tb.tb_frame.f_code.co_filename
    ours = str(Path(file).resolve()).startswith(PAPERLAB_DIR)
    line = linecache.getline(file, tb.tb_lineno).strip()
    module = tb.tb_frame.f_globals.get("__name__", "?")
    return module, ours and line.startswith("raise")


def classify_error(exc: BaseException, names: str) -> tuple[str, str]:
    """``(outcome, origin)`` of an exception raised by a case whose ``names`` regex a clear message matches."""
    if isinstance(exc, _Timeout):
        return "crash", "timeout"
    module, deliberate = _origin(exc)
    if isinstance(exc, AssertionError) or not (isinstance(exc, EXPECTED) or deliberate
                                               or type(exc).__module__.startswith("paperlab")):
        return "crash", module
    message = _SHAPE_LISTING.sub("", str(exc))
    return ("clear" if names and re.search(names, message, re.IGNORECASE) else "unclear"), module


def run_case(case: Case, limit: float) -> dict[str, Any]:
    torch.manual_seed(0)
    result: Any = None
    error: BaseException | None = None
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            result = case.fn()
        except (Exception, _Timeout) as exc:  # classifying every failure is the point
            error = exc
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    row: dict[str, Any] = {"id": case.id, "entry": case.entry, "class": case.klass, "input": case.desc,
                           "must_raise": case.check is None, "note": case.note,
                           "seconds": round(time.perf_counter() - start, 4),
                           "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught})}
    if error is not None:
        outcome, origin = classify_error(error, case.names)
        row.update(outcome=outcome, error=type(error).__name__, origin=origin,
                   message="timeout" if isinstance(error, _Timeout) else str(error)[:400])
        return row
    if case.check is None:
        row.update(outcome="silent", what=f"returned {_describe(result)} (must raise)")
        return row
    try:
        good = bool(case.check(result))
    except Exception as exc:  # a check that cannot read the result rejects it
        good, exc_text = False, f"; check failed: {type(exc).__name__}: {exc}"
    else:
        exc_text = ""
    row.update(outcome="ok" if good else "silent",
               what=f"returned {_describe(result)}" + ("" if good else " (check rejects it)") + exc_text)
    return row


def _describe(value: Any, depth: int = 0) -> str:
    """A one-line text of a returned value for the repro lines."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        kind = "tensor" if isinstance(value, torch.Tensor) else "array"
        v = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
        if v.size <= 4:
            return f"{kind}{tuple(v.shape)} {v.ravel().tolist()}"
        bad = v.dtype.kind in "fc" and not np.isfinite(v).all()
        return f"{kind}{tuple(v.shape)} {v.dtype}" + (" with non-finite values" if bad else "")
    if isinstance(value, (tuple, list)) and depth == 0:
        return "(" + ", ".join(_describe(v, 1) for v in value[:3]) + (", ..." if len(value) > 3 else "") + ")"
    if hasattr(value, "forgetting_rate"):
        return f"{type(value).__name__}(forgetting_rate={value.forgetting_rate:.3g}, identifiable={value.identifiable})"
    if hasattr(value, "params") and hasattr(value, "law"):
        return f"FitResult({ {k: float(f'{v:.4g}') for k, v in value.params.items()} })"
    if isinstance(value, (torch.nn.Module, torch.optim.Optimizer)) or (depth and not isinstance(
            value, (int, float, str, bytes, type(None), Path))):
        return type(value).__name__
    text = " ".join(repr(value).split())
    return text if len(text) <= 100 else text[:97] + "..."


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    probes = [r for r in rows if r["class"] != "baseline"]
    by_class: dict[str, Counter] = defaultdict(Counter)
    by_entry: dict[str, Counter] = defaultdict(Counter)
    for r in probes:
        by_class[r["class"]][r["outcome"]] += 1
        by_entry[r["entry"]][r["outcome"]] += 1
    baselines = [r for r in rows if r["class"] == "baseline"]
    return {
        "total": len(probes),
        "by_outcome": {o: sum(r["outcome"] == o for r in probes) for o in OUTCOMES},
        "by_class": {k: {o: v[o] for o in OUTCOMES} for k, v in sorted(by_class.items())},
        "by_entry": {k: {o: v[o] for o in OUTCOMES} for k, v in sorted(by_entry.items())},
        "baselines": {"total": len(baselines), "ok": sum(r["outcome"] == "ok" for r in baselines),
                      "failed": [r["id"] for r in baselines if r["outcome"] != "ok"]},
    }


def _table(title: str, counts: dict[str, dict[str, int]]) -> str:
    width = max([len(title)] + [len(k) for k in counts]) + 2
    lines = [title.ljust(width) + "".join(o.rjust(9) for o in (*OUTCOMES, "total"))]
    for key, c in counts.items():
        lines.append(key.ljust(width) + "".join(str(c[o]).rjust(9) for o in OUTCOMES) + str(sum(c.values())).rjust(9))
    total = {o: sum(c[o] for c in counts.values()) for o in OUTCOMES}
    lines.append("all".ljust(width) + "".join(str(total[o]).rjust(9) for o in OUTCOMES)
                 + str(sum(total.values())).rjust(9))
    return "\n".join(lines)


def report(rows: list[dict[str, Any]], counts: dict[str, Any]) -> str:
    out = [_table("input class", counts["by_class"]), "", _table("entry point", counts["by_entry"]), ""]
    for outcome in ("silent", "crash", "unclear"):
        bad = [r for r in rows if r["outcome"] == outcome and r["class"] != "baseline"]
        out.append(f"== {outcome} ({len(bad)})")
        for r in bad:
            what = r.get("what") or f"{r['error']} from {r['origin']}: {' '.join(r['message'].split())[:160]!r}"
            note = f"  [note: {r['note']}]" if r["note"] else ""
            out.append(f"- {r['id']}: {what}{note}")
        out.append("")
    failed = counts["baselines"]["failed"]
    out.append(f"baselines: {counts['baselines']['ok']}/{counts['baselines']['total']} ok"
               + (f"; FAILED: {failed}" if failed else ""))
    out.append(f"total: {counts['total']} cases: " + ", ".join(f"{o} {n}" for o, n in counts["by_outcome"].items()))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only cases whose id contains this text")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case (default 10)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"JSON output (default {OUT})")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    out_path = args.out.resolve()
    signal.signal(signal.SIGALRM, _alarm)
    old_cwd, old_env = Path.cwd(), {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "PAPERLAB_DATA")}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="probe_inputs.") as tmp:
        os.chdir(tmp)
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        os.environ.pop("PAPERLAB_DATA", None)
        try:
            cases = [c for c in build_cases() if args.only in c.id]
            ids = Counter(c.id for c in cases)
            if max(ids.values(), default=1) > 1:
                raise SystemExit(f"duplicate case ids: {[i for i, n in ids.items() if n > 1]}")
            rows = [run_case(c, args.timeout) for c in cases]
        finally:
            os.chdir(old_cwd)
            for key, value in old_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    counts = summarize(rows)
    counts["seconds"] = round(time.perf_counter() - start, 1)
    print(report(rows, counts))
    print(f"({counts['seconds']} s)")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    counts["torch"] = torch.__version__
    out_path.write_text(json.dumps({"counts": counts, "cases": rows}, indent=1, default=str) + "\n")
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
