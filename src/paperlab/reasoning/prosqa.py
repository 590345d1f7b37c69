"""ProsQA (Coconut, Hao et al. arXiv 2412.06769): the record type, loader, invariants and graph helpers.

A ProsQA record is a random DAG of made-up concepts stated as sentences ("Every X is a Y.", "Name is a X."),
a question "Is Name a A or B?" whose answer is the concept reachable from the person (``target``) and not the
distractor (``neg_target``), and the gold reasoning ``steps`` along a shortest root->target path.

The validation (300) and test (500) files are in the data registry (checksummed); the training file is public too
(facebookresearch/coconut ``data/prosqa_train.json``) and :func:`load_prosqa` reads it from a path the user
gives. :mod:`paperlab.reasoning.prosqa_gen` generates training data in the same schema.
"""
from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperlab._validate import check_choice, check_int
from paperlab.data.registry import path as data_path

__all__ = [
    "CONCEPTS",
    "NAMES",
    "ProsQAExample",
    "bfs_distances",
    "check_example",
    "fact_sentence",
    "load_prosqa",
]

NAMES: tuple[str, ...] = (
    "Alex", "Bob", "Carol", "Davis", "Eva", "Fae", "Gabriel", "Jack", "Max", "Oliver", "Polly", "Rex", "Sally",
    "Sam", "Stella", "Tom", "Wren")
CONCEPTS: tuple[str, ...] = (
    "bompus", "boompus", "brimpus", "chorpus", "dumpus", "felpus", "fompus", "gerpus", "gorpus", "grimpus",
    "gwompus", "hilpus", "impus", "jelpus", "jompus", "kerpus", "lempus", "lorpus", "numpus", "quimpus", "rempus",
    "rompus", "rorpus", "scrompus", "shumpus", "sterpus", "storpus", "terpus", "timpus", "tumpus", "vumpus",
    "worpus", "wumpus", "yerpus", "yimpus", "yumpus", "zhorpus", "zumpus")

_KEYS = ("question", "answer", "steps", "idx_to_symbol", "edges", "root", "target", "neg_target")


def _is_int(value: Any) -> bool:
    """A JSON integer (``3``, or a whole float such as ``3.0``), not a bool or a string."""
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float)
                                                                        and value.is_integer())


@dataclass(frozen=True, kw_only=True)
class ProsQAExample:
    """One ProsQA record (the JSON schema of the released files, as immutable fields)."""

    question: str
    answer: str
    steps: tuple[str, ...]
    idx_to_symbol: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]
    root: int
    target: int
    neg_target: int

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> ProsQAExample:
        """Parse one JSON record; a record that is not an object, lacks keys, or holds a malformed field
        (``edges`` not [a, b] integer pairs, a non-integer ``root`` ...) raises ValueError naming it."""
        if not isinstance(record, dict):
            raise ValueError(f"ProsQA record must be a JSON object with keys {list(_KEYS)}, got "
                             f"{type(record).__name__} {str(record)[:40]!r}")
        missing = [k for k in _KEYS if k not in record]
        if missing:
            raise ValueError(f"ProsQA record lacks keys {missing}; has {sorted(record)}")
        for key in ("steps", "idx_to_symbol", "edges"):
            if not isinstance(record[key], list):
                raise ValueError(f"ProsQA record field {key!r} must be a list, got {type(record[key]).__name__}")
        for edge in record["edges"]:
            if not (isinstance(edge, list) and len(edge) == 2 and all(_is_int(v) for v in edge)):
                raise ValueError(f"ProsQA record field 'edges' must hold [a, b] pairs of node indices, got {edge!r}")
        for key in ("root", "target", "neg_target"):
            if not _is_int(record[key]):
                raise ValueError(f"ProsQA record field {key!r} must be a node index (an int), got {record[key]!r}")
        return cls(question=str(record["question"]), answer=str(record["answer"]),
                   steps=tuple(str(s) for s in record["steps"]),
                   idx_to_symbol=tuple(str(s) for s in record["idx_to_symbol"]),
                   edges=tuple((int(a), int(b)) for a, b in record["edges"]),
                   root=int(record["root"]), target=int(record["target"]), neg_target=int(record["neg_target"]))

    def to_dict(self) -> dict[str, Any]:
        """The JSON record (lists, not tuples), inverse of ``from_dict``."""
        return {"question": self.question, "answer": self.answer, "steps": list(self.steps),
                "idx_to_symbol": list(self.idx_to_symbol), "edges": [list(e) for e in self.edges],
                "root": self.root, "target": self.target, "neg_target": self.neg_target}

    @property
    def options(self) -> tuple[str, str]:
        """The two answer options in the order the question states them."""
        tail = self.question.rsplit("Is ", 1)[-1].rstrip("?")
        a, b = tail.split(" a ", 1)[1].split(" or ")
        return a, b

    def children(self) -> dict[int, list[int]]:
        """Adjacency: node index -> child indices in edge order."""
        ch: dict[int, list[int]] = {i: [] for i in range(len(self.idx_to_symbol))}
        for a, b in self.edges:
            ch[a].append(b)
        return ch

    @property
    def frontier(self) -> tuple[tuple[str, ...], ...]:
        """``frontier[k - 1]``: the names of the nodes at BFS distance k from the root, k = 1 .. len(steps)."""
        dist = bfs_distances(self.children(), self.root)
        return tuple(tuple(sorted(self.idx_to_symbol[v] for v, d in dist.items() if d == k))
                     for k in range(1, len(self.steps) + 1))

    @property
    def answer_token(self) -> str:
        """The answer's word that names the target node."""
        return self.idx_to_symbol[self.target]

    @property
    def path(self) -> tuple[int, ...]:
        """Node indices the gold steps reach, in order (each step's last word names its node)."""
        index = {s: i for i, s in enumerate(self.idx_to_symbol)}
        return tuple(index[step.rstrip(".").split()[-1]] for step in self.steps)

    @property
    def step_options(self) -> tuple[tuple[str, ...], ...]:
        """``step_options[k - 1]``: the names step k may reach, the children of the node before it (the root
        for k = 1), once each; the gold step names one of them."""
        ch, before = self.children(), (self.root, *self.path[:-1])
        return tuple(tuple(dict.fromkeys(self.idx_to_symbol[c] for c in ch[v])) for v in before)


def load_prosqa(split: str, *, root: str | Path | None = None, limit: int | None = None,
                path: str | Path | None = None) -> list[ProsQAExample]:
    """Load a real ProsQA file: ``valid`` (300) or ``test`` (500) via ``paperlab.data.path`` (checksummed), or
    any split, ``train`` included, from ``path``.

    The training file is public too (facebookresearch/coconut ``data/prosqa_train.json``) but is not in the
    data registry (no checksum is on record here), so it is read only from a path the user gives.

    Args:
        split: "valid", "test" or, with ``path``, "train".
        root: optional data root (else ``$PAPERLAB_DATA`` / cache); ignored with ``path``.
        limit: keep only the first ``limit`` records.
        path: a ProsQA JSON file to read instead of the registry's.
    """
    check_choice("split", split, ("train", "valid", "test") if path is not None else ("valid", "test"))
    source = Path(path) if path is not None else data_path("prosqa", split, root=root)
    try:
        with open(source, encoding="utf-8") as f:
            records = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"ProsQA {split} file {source} is not valid UTF-8 JSON ({err}); an empty, truncated or "
                         "damaged file?") from err
    if not isinstance(records, list):
        raise ValueError(f"ProsQA {split} file {source} must hold a JSON list, got {type(records).__name__}")
    if limit is not None:
        check_int("limit", limit, minimum=1)
        records = records[:limit]
    out = []
    for i, record in enumerate(records):
        try:
            out.append(ProsQAExample.from_dict(record))
        except ValueError as err:
            raise ValueError(f"ProsQA {split} file {source}, record {i}: {err}") from err
    return out


def bfs_distances(children: dict[int, list[int]], source: int) -> dict[int, int]:
    """Shortest edge counts from ``source`` to every reachable node."""
    dist, queue = {source: 0}, deque([source])
    while queue:
        u = queue.popleft()
        for v in children[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def fact_sentence(sym: Sequence[str], a: int, b: int) -> str:
    """The sentence stating edge ``a -> b`` over symbols ``sym``: "Name is a X." from a person, else "Every X is a
    Y."."""
    return f"{sym[a]} is a {sym[b]}." if sym[a][0].isupper() else f"Every {sym[a]} is a {sym[b]}."


def check_example(ex: ProsQAExample) -> None:
    """Raise ValueError unless ``ex`` satisfies the ProsQA invariants.

    Target reachable from root, ``neg_target`` not; steps are the facts of a shortest root->target path; the
    question states exactly one fact per edge, then asks about the two options; the answer names the target.
    """
    sym, n = ex.idx_to_symbol, len(ex.idx_to_symbol)
    for a, b in ex.edges:
        if not (0 <= a < n and 0 <= b < n):
            raise ValueError(f"edge {(a, b)} out of range for {n} symbols")
    dist = bfs_distances(ex.children(), ex.root)
    if ex.target not in dist:
        raise ValueError(f"target {sym[ex.target]!r} is not reachable from root {sym[ex.root]!r}")
    if ex.neg_target in dist:
        raise ValueError(f"neg_target {sym[ex.neg_target]!r} is reachable from root {sym[ex.root]!r}")
    if len(ex.steps) != dist[ex.target]:
        raise ValueError(f"{len(ex.steps)} steps but the shortest path has {dist[ex.target]} edges")
    edge_set, node = set(ex.edges), ex.root
    for i, step in enumerate(ex.steps):
        nxt = [b for b in range(n) if (node, b) in edge_set and fact_sentence(sym, node, b) == step]
        if not nxt:
            raise ValueError(f"step {i} {step!r} is not a fact leaving {sym[node]!r}")
        node = nxt[0]
    if node != ex.target:
        raise ValueError(f"steps end at {sym[node]!r}, not the target {sym[ex.target]!r}")
    sentences = [s + "." for s in ex.question.split(". ")[:-1]]
    if Counter(sentences) != Counter(fact_sentence(sym, a, b) for a, b in ex.edges):
        raise ValueError("question facts do not match the edges one to one")
    if sorted(ex.options) != sorted((sym[ex.target], sym[ex.neg_target])):
        raise ValueError(f"options {ex.options} are not target/neg_target")
    if ex.answer != f"{sym[ex.root]} is a {sym[ex.target]}.":
        raise ValueError(f"answer {ex.answer!r} does not name the target {sym[ex.target]!r}")
