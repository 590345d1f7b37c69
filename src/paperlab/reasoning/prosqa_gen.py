"""Seeded generator of ProsQA-style examples (Coconut, Hao et al. arXiv 2412.06769).

``generate_prosqa`` makes training data in the schema of :class:`~paperlab.reasoning.prosqa.ProsQAExample`,
with difficulty knobs (graph size, path length, branching) in :class:`GeneratorConfig`. Generated graphs follow our
reading of the released files (persons are sources, answers are sinks, edges only go to the next BFS layer or
sideways within a layer, a few edges from the distractor part into the reachable part); they are not the official
generator.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

from paperlab._validate import check_choice, check_int, check_positive
from paperlab.reasoning.prosqa import CONCEPTS, NAMES, ProsQAExample, fact_sentence

__all__ = ["PRESETS", "GeneratorConfig", "generate_prosqa"]

PRESETS = ("small", "tiny", "easy", "real_like")  # GeneratorConfig.preset names


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
    facts = [fact_sentence(sym, a, b) for a, b in e]
    rng.shuffle(facts)
    a, b = (tgt, ngt) if rng.random() < 0.5 else (ngt, tgt)
    question = " ".join(facts) + f" Is {sym[root]} a {sym[a]} or {sym[b]}?"
    return ProsQAExample(question=question, answer=f"{sym[root]} is a {sym[tgt]}.",
                         steps=tuple(fact_sentence(sym, u, v) for u, v in zip(path[:-1], path[1:], strict=True)),
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
