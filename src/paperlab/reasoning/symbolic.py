"""ProsQA graphs in a symbolic format: one token per node, edges as node pairs, query and answer markers.

The English format spends 5-6 word tokens on every fact ("Every wumpus is a yumpus."), so a small model reads
long sequences and a reasoning step is several tokens. Here (after the from-scratch setting of "reasoning by
superposition", Zhu et al. 2025) a graph is ``a b , c d , ... query r options x y``: every node is one
token ``n<k>`` (a seeded random renaming per example, so a token carries no meaning across examples), each edge
``a -> b`` is the pair ``a b``, and ``query`` / ``options`` mark the question. A reasoning step is one node (the
path after the root) and the answer is the target node. :func:`to_symbolic` converts any
:class:`~paperlab.reasoning.prosqa.ProsQAExample` (generated or the real valid/test records, which carry their
edges, root, target and distractor), and :attr:`SymbolicExample.frontier` gives the BFS frontier at every
distance from the root, the set a thought at that step may legitimately hold.

A :class:`SymbolicExample` has the ``question`` / ``steps`` / ``answer`` strings that
:func:`paperlab.reasoning.coconut.encode_example` reads, so every method trains on it with
:func:`symbolic_tokenizer`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from paperlab._validate import check_int
from paperlab.reasoning.prosqa import ProsQAExample
from paperlab.reasoning.tokenizer import SPECIALS, WordTokenizer

__all__ = ["MARKERS", "SymbolicExample", "node_token", "symbolic_tokenizer", "to_symbolic"]

MARKERS: tuple[str, ...] = (",", "query", "options")
_N_SYMBOLS = 64  # node tokens n0..n63: more than any ProsQA graph's nodes (the real files have at most 30)


def node_token(k: int) -> str:
    """The ``k``-th node token, ``n<k>``."""
    return f"n{k}"


@dataclass(frozen=True, kw_only=True)
class SymbolicExample:
    """One ProsQA question in the symbolic format.

    Attributes:
        question: ``"a b , c d , ... query r options x y"`` (edges in the source's order, then the root and the
            two options in the order the source question states them).
        steps: the nodes of a shortest root -> target path after the root, one token each.
        answer: the target's token.
        names: node index of the source -> its token.
        frontier: ``frontier[k - 1]`` holds the tokens at BFS distance k from the root, k = 1 .. len(steps).
        source: the record this was converted from.
    """

    question: str
    steps: tuple[str, ...]
    answer: str
    names: tuple[str, ...]
    frontier: tuple[tuple[str, ...], ...]
    source: ProsQAExample

    # the graph fields the probes and accuracy read, in the symbolic names (as ProsQAExample has them)
    @property
    def idx_to_symbol(self) -> tuple[str, ...]:
        return self.names

    @property
    def root(self) -> int:
        return self.source.root

    @property
    def target(self) -> int:
        return self.source.target

    @property
    def neg_target(self) -> int:
        return self.source.neg_target

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        return self.source.edges

    def children(self) -> dict[int, list[int]]:
        """Adjacency of the source graph: node index -> child indices."""
        return self.source.children()

    @property
    def answer_token(self) -> str:
        """The answer's token that names the target node (the whole answer here)."""
        return self.answer

    @property
    def step_options(self) -> tuple[tuple[str, ...], ...]:
        """``step_options[k - 1]``: the tokens step k may reach (the children of the node before it)."""
        index = {s: i for i, s in enumerate(self.source.idx_to_symbol)}
        return tuple(tuple(self.names[index[o]] for o in opts) for opts in self.source.step_options)


def to_symbolic(ex: ProsQAExample, *, seed: int, n_symbols: int = _N_SYMBOLS) -> SymbolicExample:
    """Convert ``ex``; node tokens are a random injection of its nodes into ``n0 .. n<n_symbols - 1>`` and the
    edges are listed in a random order, both drawn from ``seed`` (the same seed gives the same question).
    Raises ValueError when the graph has more nodes than ``n_symbols``."""
    check_int("seed", seed)
    check_int("n_symbols", n_symbols, minimum=2)
    n = len(ex.idx_to_symbol)
    if n > n_symbols:
        raise ValueError(f"the graph has {n} nodes but n_symbols={n_symbols}: raise n_symbols to at least {n}")
    rng = random.Random(seed)
    names = tuple(node_token(k) for k in rng.sample(range(n_symbols), n))
    # edges in random order: in generated graphs the root's component comes first, so the option that appears
    # first would name the answer (100% of generated, 40% of real records); English facts are shuffled too
    order = list(ex.edges)
    rng.shuffle(order)
    edges = " , ".join(f"{names[a]} {names[b]}" for a, b in order)
    options = " ".join(names[ex.idx_to_symbol.index(o)] for o in ex.options)
    index = {sym: i for i, sym in enumerate(ex.idx_to_symbol)}
    frontier = tuple(tuple(sorted(names[index[o]] for o in layer)) for layer in ex.frontier)
    return SymbolicExample(question=f"{edges} , query {names[ex.root]} options {options}",
                           steps=tuple(names[v] for v in ex.path), answer=names[ex.target], names=names,
                           frontier=frontier, source=ex)


def symbolic_tokenizer(n_symbols: int = _N_SYMBOLS) -> WordTokenizer:
    """Specials, the markers ``,`` / ``query`` / ``options`` and ``n_symbols`` node tokens."""
    check_int("n_symbols", n_symbols, minimum=2)
    return WordTokenizer([*SPECIALS, *MARKERS, *(node_token(k) for k in range(n_symbols))])
