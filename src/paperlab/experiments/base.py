"""Claims, experiments and verdicts: the vocabulary every paper module uses.

A paper module declares ``PAPER = Paper(...)`` with its claims (words from the abstract, the paper's number)
and its experiments. An experiment has ``quick()`` and ``full()`` configs (frozen dataclasses) and
``run(config, out_dir=...) -> Result``. Verdicts are computed from measured values by the rules below,
never typed by hand.
"""

from __future__ import annotations

import contextvars
import dataclasses
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

__all__ = [
    "INCONCLUSIVE",
    "NOT_IMPLEMENTED",
    "NOT_REPRODUCED",
    "REPRODUCED",
    "Claim",
    "Experiment",
    "Figure",
    "Paper",
    "Result",
    "Verdict",
    "mean_std",
    "progress",
    "shared_dir",
]

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive at this scale"
NOT_IMPLEMENTED = "not implemented yet"

# Set by the runner for the duration of a run: whether experiments show progress bars over their training runs.
SHOW_PROGRESS: contextvars.ContextVar[bool] = contextvars.ContextVar("paperlab_show_progress", default=False)


def progress(items: Sequence[Any], *, desc: str) -> Any:
    """Iterate ``items`` with a progress bar when the runner shows progress (``paperlab reproduce`` without
    ``--no-progress``); plain iteration otherwise (tests, library calls)."""
    if not SHOW_PROGRESS.get():
        return iter(items)
    return tqdm(items, desc=desc, leave=False, dynamic_ncols=True)


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One headline claim: ``text`` quotes or closely paraphrases the abstract; ``paper_value`` is its number."""

    id: str
    text: str
    paper_value: str
    experiment: str | None = None  # the experiment whose run gives this claim's verdict


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """A claim's verdict, the measured value with spread, the rule that decided, and the scale caveat."""

    claim: str
    verdict: str
    ours: str
    rule: str
    scale_note: str = ""
    n_run: int | None = None  # seeds run and kept (set by the evidence protocol; None where no seeds apply)
    n_kept: int | None = None


@dataclass(frozen=True, kw_only=True)
class Figure:
    """A PNG written into the run's output folder; ``file`` is relative to it."""

    file: str
    caption: str


@dataclass(kw_only=True)
class Result:
    """What an experiment's ``run`` returns.

    ``rows`` are the raw measurements (one dict per seed/setting); ``tables`` are named lists of dicts
    rendered as Markdown tables; ``verdicts`` one per claim the experiment tests.
    """

    experiment: str
    config: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Inverse of :meth:`to_dict` (a JSON round trip keeps every field; tuples come back as lists)."""
        data = dict(data)
        data["figures"] = [Figure(**f) for f in data.get("figures", [])]
        data["verdicts"] = [Verdict(**v) for v in data.get("verdicts", [])]
        return cls(**data)


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """A runnable experiment: ``run(config, out_dir=Path) -> Result``.

    ``version`` joins the key of its saved ``result.json``: bump it when what ``run`` computes from an unchanged
    config changes (a verdict rule, a measure), so ``reproduce --resume`` recomputes the result instead of
    reusing one the old code wrote (the models it caches keep their own keys)."""

    name: str
    title: str
    quick: Callable[[], Any]
    full: Callable[[], Any]
    run: Callable[..., Result]
    version: int = 1


@dataclass(frozen=True, kw_only=True)
class Paper:
    """One paper: its id, claims and experiments (empty until its issue lands)."""

    id: str
    name: str
    key: str
    claims: tuple[Claim, ...]
    experiments: tuple[Experiment, ...] = ()
    scale_note: str = ""
    # optional: ``prepare(configs, *, out, workers, progress)`` trains the runs its experiments share in ``workers``
    # processes before they run (``reproduce --workers N``); ``configs``: experiment name -> config of the
    # experiments about to compute (those with a reusable result.json left out)
    prepare: Callable[..., None] | None = None
    # optional: ``review(results)`` amends the verdicts of a run's results in place once all of them are in, for a
    # rule that spans experiments (latent CoT: a verdict is decided only where its arms' lrs were found tuned)
    review: Callable[[list[Result]], None] | None = None

    def experiment(self, name: str) -> Experiment:
        for exp in self.experiments:
            if exp.name == name:
                return exp
        raise ValueError(f"paper {self.id} has no experiment {name!r}; valid: {[e.name for e in self.experiments]}")


def shared_dir(out_dir: Path, *, experiments: tuple[str, ...], name: str) -> Path:
    """``<out>/<paper>/<name>`` when ``out_dir`` has the runner's ``<out>/<paper>/<experiment>/<config hash>``
    layout for one of ``experiments`` (so they share cached runs, across processes too), else
    ``out_dir/<name>``. Cached files are ``paperlab.experiments.cache`` entries, named and checked by the key
    of what determines them, so sharing is safe."""
    out_dir = Path(out_dir)
    if out_dir.parent.name in experiments:
        return out_dir.parent.parent / name
    return out_dir / name


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("mean_std needs at least one value")
    return statistics.fmean(vals), (statistics.stdev(vals) if len(vals) > 1 else 0.0)
