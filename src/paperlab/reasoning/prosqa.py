"""ProsQA (Coconut, Hao et al. arXiv 2412.06769): loader, seeded generator, invariants and statistics.

A ProsQA record is a random DAG of made-up concepts stated as sentences ("Every X is a Y.", "Name is a X."),
a question "Is Name a A or B?" whose answer is the concept reachable from the person (``target``) and not the
distractor (``neg_target``), and the gold reasoning ``steps`` along a shortest root->target path.

The validation (300) and test (500) files are in the data registry (checksummed); the training file is public too
(facebookresearch/coconut ``data/prosqa_train.json``) and :func:`load_prosqa` reads it from a path the user
gives. ``generate_prosqa`` makes training data in the same schema, with difficulty knobs (graph size, path
length, branching). Generated graphs follow our reading of the
released files (persons are sources, answers are sinks, edges only go to the next BFS layer or sideways within
a layer, a few edges from the distractor part into the reachable part); they are not the official generator.
"""

from __future__ import annotations

import json
import random
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperlab._validate import check_choice, check_int, check_positive
from paperlab.data.registry import path as data_path

__all__ = [
    "CONCEPTS",
    "NAMES",
    "PRESETS",
    "GeneratorConfig",
    "ProsQAExample",
    "bfs_distances",
    "check_example",
    "generate_prosqa",
    "load_prosqa",
]

PRESETS = ("small", "tiny", "easy", "real_like")  # GeneratorConfig.preset names

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


def _fact(sym: Sequence[str], a: int, b: int) -> str:
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
        nxt = [b for b in range(n) if (node, b) in edge_set and _fact(sym, node, b) == step]
        if not nxt:
            raise ValueError(f"step {i} {step!r} is not a fact leaving {sym[node]!r}")
        node = nxt[0]
    if node != ex.target:
        raise ValueError(f"steps end at {sym[node]!r}, not the target {sym[ex.target]!r}")
    sentences = [s + "." for s in ex.question.split(". ")[:-1]]
    if Counter(sentences) != Counter(_fact(sym, a, b) for a, b in ex.edges):
        raise ValueError("question facts do not match the edges one to one")
    if sorted(ex.options) != sorted((sym[ex.target], sym[ex.neg_target])):
        raise ValueError(f"options {ex.options} are not target/neg_target")
    if ex.answer != f"{sym[ex.root]} is a {sym[ex.target]}.":
        raise ValueError(f"answer {ex.answer!r} does not name the target {sym[ex.target]!r}")


@dataclass(frozen=True, kw_only=True)
class GeneratorConfig:
    """Difficulty knobs of ``generate_prosqa`` (ranges are inclusive).

    ``n_nodes``: symbols per graph (persons + concepts); ``depth``: shortest root->target path length (= number
    of steps), drawn with ``depth_weights`` if given; ``branching``: mean number of extra (non-spanning) children
    per node; ``n_persons``: persons per graph (the root and distractor persons); ``reachable_frac``: share of
    concepts reachable from the root; ``cross_edges``: mean number of edges from the distractor part into the
    reachable part (they never change what the root reaches; at most 8); ``persons_weights``: one weight per
    person count in ``n_persons`` (None: uniform); ``target_in_keep``: the chance that each in-edge of the target
    other than its spanning one is kept (1: all; fewer in-edges give the answer fewer parents, as in the real
    files); ``sink_prob``: the chance that a concept gets no children at all (more leaves; each layer keeps one
    parent for the next). The defaults draw nothing extra, so they reproduce earlier datasets bit for bit.
    """

    n_nodes: tuple[int, int] = (10, 14)
    depth: tuple[int, int] = (2, 4)
    depth_weights: tuple[float, ...] | None = None
    branching: float = 0.6
    n_persons: tuple[int, int] = (2, 3)
    reachable_frac: float = 0.6
    cross_edges: float = 1.0
    persons_weights: tuple[float, ...] | None = None
    target_in_keep: float = 1.0
    sink_prob: float = 0.0

    def __post_init__(self) -> None:
        for name in ("n_nodes", "depth", "n_persons"):
            pair = getattr(self, name)
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(f"{name} must be a (low, high) pair of ints, got {pair!r}")
            lo, hi = pair
            check_int(f"{name}[0]", lo, minimum=1)
            check_int(f"{name}[1]", hi)
            if hi < lo:
                raise ValueError(f"{name} must be an increasing (low, high) pair, got {(lo, hi)}")
        if self.n_persons[0] < 2:
            raise ValueError(f"n_persons must start at >= 2 (root + a distractor person), got {self.n_persons}")
        for name, weights, span in (("depth_weights", self.depth_weights, self.depth),
                                    ("persons_weights", self.persons_weights, self.n_persons)):
            if weights is not None and len(weights) != span[1] - span[0] + 1:
                raise ValueError(f"{name} needs one weight per value in {span}, got {weights}")
            for i, w in enumerate(weights or ()):
                check_positive(f"{name}[{i}]", w, allow_zero=True)
            if weights is not None and not sum(weights) > 0:
                raise ValueError(f"{name} must not all be 0, got {weights}")
        for name in ("target_in_keep", "sink_prob"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 <= value <= 1):
                raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
        if self.sink_prob == 1:
            raise ValueError("sink_prob must be below 1 (some concept must parent the next layer)")
        check_positive("branching", self.branching, allow_zero=True)
        check_positive("cross_edges", self.cross_edges, allow_zero=True)
        if self.cross_edges > 8:
            raise ValueError(f"cross_edges must be <= 8 (8 Bernoulli draws), got {self.cross_edges}")
        if not 0 < self.reachable_frac < 1:
            raise ValueError(f"reachable_frac must lie in (0, 1), got {self.reachable_frac}")
        if self.n_persons[1] > len(NAMES) or self.n_nodes[1] - self.n_persons[0] > len(CONCEPTS):
            raise ValueError(f"n_nodes={self.n_nodes}, n_persons={self.n_persons} exceed the closed vocabulary "
                             f"({len(NAMES)} names, {len(CONCEPTS)} concepts)")
        min_nodes = self.n_persons[1] + self.depth[1] + 2  # root path + distractor
        if self.n_nodes[0] < min_nodes:
            raise ValueError(f"n_nodes[0]={self.n_nodes[0]} too small for depth {self.depth[1]} and "
                             f"{self.n_persons[1]} persons; need >= {min_nodes}")

    @classmethod
    def preset(cls, name: str) -> GeneratorConfig:
        """The named preset: one of :data:`PRESETS`."""
        check_choice("preset", name, PRESETS)
        return getattr(cls, name)()

    @classmethod
    def small(cls) -> GeneratorConfig:
        """Our small training config: 10-14 nodes, depth 2-4 (about 100 tokens per question)."""
        return cls()

    @classmethod
    def tiny(cls) -> GeneratorConfig:
        """For quick runs and tests: 7-9 nodes, depth 2-3 (about 60 tokens)."""
        return cls(n_nodes=(7, 9), depth=(2, 3), branching=0.4, n_persons=(2, 2), cross_edges=0.5)

    @classmethod
    def easy(cls) -> GeneratorConfig:
        """For CPU-minute experiments: 6-7 nodes, depth 1-2, no cross edges (about 45 tokens); ``easy().harder(1)``
        is close to ``tiny``."""
        return cls(n_nodes=(6, 7), depth=(1, 2), branching=0.2, n_persons=(2, 2), cross_edges=0.0)

    @classmethod
    def real_like(cls) -> GeneratorConfig:
        """Matches the real validation and test files' statistics (17-28 nodes, ~36 edges, 3-6 steps, 2-6 persons
        in the files' proportions, the answer's ~1.5 parents, ~7.3 leaves; tests/reasoning checks each)."""
        return cls(n_nodes=(17, 28), depth=(3, 6), depth_weights=(0.41, 0.44, 0.12, 0.03), branching=1.1,
                   n_persons=(2, 6), persons_weights=(0.576, 0.316, 0.085, 0.02, 0.003), reachable_frac=0.62,
                   cross_edges=1.9, target_in_keep=0.45, sink_prob=0.2)

    def harder(self, extra_depth: int) -> GeneratorConfig:
        """Same graph style, longer paths and proportionally more nodes (a difficulty ladder)."""
        check_int("extra_depth", extra_depth, minimum=0)
        lo, hi = self.n_nodes
        return GeneratorConfig(n_nodes=(lo + 2 * extra_depth, hi + 2 * extra_depth),
                               depth=(self.depth[0] + extra_depth, self.depth[1] + extra_depth),
                               branching=self.branching, n_persons=self.n_persons,
                               reachable_frac=self.reachable_frac, cross_edges=self.cross_edges)


def _layered_part(rng: random.Random, edges: set[tuple[int, int]], sources: list[int],
                  layers: list[list[int]], branching: float, sinks: set[int],
                  sink_prob: float = 0.0) -> set[tuple[int, int]]:
    """Wire ``layers`` (layer 1, 2, ...) under ``sources`` (layer 0): one spanning parent per node from the
    previous layer (so layer = BFS distance from the sources), then extra edges to the next layer or sideways
    to a later node of the same layer, each with probability ``branching / #candidates``. ``sinks`` get none;
    with ``sink_prob`` each other concept joins them by chance (each layer keeps one parent for the next).
    Returns the spanning edges."""
    full = [list(sources), *layers]
    if sink_prob > 0:  # drawn only when asked, so the default streams stay as they were
        sinks = set(sinks)
        for k in range(1, len(full)):
            free = [u for u in full[k] if u not in sinks and rng.random() >= sink_prob]
            keep = [u for u in full[k] if u not in sinks]
            if k + 1 < len(full) and not free and keep:
                free = [rng.choice(keep)]  # the next layer needs a parent here
            sinks |= set(keep) - set(free)
    spanning = set()
    for k in range(1, len(full)):
        parents = [u for u in full[k - 1] if u not in sinks]
        for v in full[k]:
            spanning.add((rng.choice(parents), v))
    edges |= spanning
    for k, layer in enumerate(full):
        for i, u in enumerate(layer):
            if u in sinks:
                continue
            cands = (full[k + 1] if k + 1 < len(full) else []) + (layer[i + 1:] if k > 0 else [])
            cands = [v for v in cands if (u, v) not in edges]
            if cands:
                p = min(1.0, branching / len(cands))
                edges.update((u, v) for v in cands if rng.random() < p)
    return spanning


def _split_layers(rng: random.Random, nodes: list[int], depth: int) -> list[list[int]]:
    """At least one node per layer 1..depth; the rest spread uniformly over layers 1..depth+1."""
    sizes = [1] * depth + [0]
    for _ in range(len(nodes) - depth):
        sizes[rng.randrange(depth + 1)] += 1
    it = iter(nodes)
    return [[next(it) for _ in range(size)] for size in sizes if size]


def _sample_graph(rng: random.Random, cfg: GeneratorConfig) -> tuple[int, int, int, int, int, set]:
    """Nodes 0..P-1 are persons (0 is the root), P..n-1 concepts. Returns n, P, depth, target, neg, edges."""
    depths = list(range(cfg.depth[0], cfg.depth[1] + 1))
    depth = rng.choices(depths, weights=cfg.depth_weights)[0] if cfg.depth_weights else rng.choice(depths)
    counts = list(range(cfg.n_persons[0], cfg.n_persons[1] + 1))
    n_persons = rng.choices(counts, weights=cfg.persons_weights)[0] if cfg.persons_weights else \
        rng.randint(*cfg.n_persons)
    n = max(rng.randint(*cfg.n_nodes), n_persons + depth + 2)
    concepts = list(range(n_persons, n))
    n_reach = min(len(concepts) - 1, max(depth, round(cfg.reachable_frac * len(concepts))))
    reach, dis = concepts[:n_reach], concepts[n_reach:]
    edges: set[tuple[int, int]] = set()
    layers = _split_layers(rng, reach, depth)
    target = rng.choice(layers[depth - 1])
    if len(layers) > depth and len(layers[depth - 1]) == 1:  # the target alone cannot parent a deeper layer
        layers[depth - 1] += layers.pop()
    spanning = _layered_part(rng, edges, [0], layers, cfg.branching, sinks={target}, sink_prob=cfg.sink_prob)
    d_layers = _split_layers(rng, dis, max(1, min(len(dis), rng.choice((1, 2, 2, 3)))))
    neg = rng.choice(d_layers[-1])  # the deepest distractor layer, so the distractor is a sink
    _layered_part(rng, edges, list(range(1, n_persons)), d_layers, cfg.branching, sinks={neg},
                  sink_prob=cfg.sink_prob)
    senders = [u for u in [*range(1, n_persons), *dis] if u != neg]
    n_cross = sum(rng.random() < cfg.cross_edges / 8 for _ in range(8))
    for _ in range(n_cross):
        edges.add((rng.choice(senders), rng.choice(reach)))
    if cfg.target_in_keep < 1:  # thin the target's other parents: its depth (spanning parent) is unchanged
        extra = sorted(e for e in edges if e[1] == target and e not in spanning)
        edges -= {e for e in extra if rng.random() >= cfg.target_in_keep}
    return n, n_persons, depth, target, neg, edges


def _render(rng: random.Random, n: int, n_persons: int, target: int, neg: int,
            edges: set[tuple[int, int]]) -> ProsQAExample:
    """Relabel (persons first, random names) and write the sentences, question, answer and steps."""
    persons = list(range(n_persons))
    rng.shuffle(persons)
    order = persons + list(range(n_persons, n))  # new index -> old node
    new = {old: i for i, old in enumerate(order)}
    sym = tuple(rng.sample(NAMES, n_persons) + rng.sample(CONCEPTS, n - n_persons))
    e = sorted(((new[a], new[b]) for a, b in edges), key=lambda ab: (ab[1], ab[0]))
    root, tgt, ngt = new[0], new[target], new[neg]
    children: dict[int, list[int]] = {i: [] for i in range(n)}
    for a, b in e:
        children[a].append(b)
    parent, queue = {root: root}, deque([root])  # BFS parents give one shortest path
    while queue:
        u = queue.popleft()
        for v in children[u]:
            if v not in parent:
                parent[v] = u
                queue.append(v)
    path = [tgt]
    while path[-1] != root:
        path.append(parent[path[-1]])
    path.reverse()
    facts = [_fact(sym, a, b) for a, b in e]
    rng.shuffle(facts)
    a, b = (tgt, ngt) if rng.random() < 0.5 else (ngt, tgt)
    question = " ".join(facts) + f" Is {sym[root]} a {sym[a]} or {sym[b]}?"
    return ProsQAExample(question=question, answer=f"{sym[root]} is a {sym[tgt]}.",
                         steps=tuple(_fact(sym, u, v) for u, v in zip(path[:-1], path[1:], strict=True)),
                         idx_to_symbol=sym,
                         edges=tuple(e), root=root, target=tgt, neg_target=ngt)


def generate_prosqa(n: int, *, config: GeneratorConfig | None = None, seed: int) -> list[ProsQAExample]:
    """``n`` ProsQA-style examples; the same seed gives the same examples.

    Args:
        n: number of examples.
        config: difficulty knobs (default ``GeneratorConfig.small()``).
        seed: seed of the private ``random.Random`` (no global state is touched).
    """
    check_int("n", n, minimum=0)
    check_int("seed", seed)
    given: object = config  # a preset name or a dict is a common slip
    if given is not None and not isinstance(given, GeneratorConfig):
        hint = f"; for a preset use GeneratorConfig.preset({given!r})" if isinstance(given, str) else ""
        raise TypeError(f"config must be a GeneratorConfig or None, got {type(given).__name__} {given!r}{hint}")
    cfg = config or GeneratorConfig.small()
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        nodes, n_persons, _depth, target, neg, edges = _sample_graph(rng, cfg)
        out.append(_render(rng, nodes, n_persons, target, neg, edges))
    return out
