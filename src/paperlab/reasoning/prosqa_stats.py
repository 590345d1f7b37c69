"""Statistics of ProsQA datasets (Coconut, arXiv 2412.06769), to compare generated data with the real files."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from paperlab.reasoning.prosqa import ProsQAExample, bfs_distances

__all__ = ["dataset_statistics"]


def dataset_statistics(examples: Sequence[ProsQAExample]) -> dict[str, Any]:
    """Summary statistics used to compare generated data with the real files.

    Returns means of nodes, edges, persons, question words, root out-degree, reachable-node count, the
    answer's in-degree (its parents) and leaves (nodes without children), the step count and person count
    distributions (share per value), the share of questions listing the target first and the share where the
    distractor has more parents than the answer (a shortcut a model can learn from the graph's shape).
    """
    if not examples:
        raise ValueError("dataset_statistics needs at least one example")
    steps = Counter(len(ex.steps) for ex in examples)
    persons = Counter(sum(s[0].isupper() for s in ex.idx_to_symbol) for ex in examples)
    reach, root_out, in_deg, leaves, first, neg_more = [], [], [], [], 0, 0
    for ex in examples:
        ch = ex.children()
        reach.append(len(bfs_distances(ch, ex.root)))
        root_out.append(len(ch[ex.root]))
        in_deg.append(sum(b == ex.target for _, b in ex.edges))
        neg_more += sum(b == ex.neg_target for _, b in ex.edges) > in_deg[-1]
        leaves.append(sum(not kids for kids in ch.values()))
        first += ex.options[0] == ex.idx_to_symbol[ex.target]
    mean = statistics.fmean
    return {
        "n": len(examples),
        "nodes": mean(len(ex.idx_to_symbol) for ex in examples),
        "edges": mean(len(ex.edges) for ex in examples),
        "persons": mean(sum(s[0].isupper() for s in ex.idx_to_symbol) for ex in examples),
        "question_words": mean(len(ex.question.split()) for ex in examples),
        "root_out_degree": mean(root_out),
        "reachable": mean(reach),
        "answer_in_degree": mean(in_deg),
        "leaves": mean(leaves),
        "persons_share": {k: persons[k] / len(examples) for k in sorted(persons)},
        "steps": {k: steps[k] / len(examples) for k in sorted(steps)},
        "mean_steps": mean(len(ex.steps) for ex in examples),
        "target_first": first / len(examples),
        "distractor_more_parents": neg_more / len(examples),
    }
