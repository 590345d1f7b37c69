"""``arith_chain``: the execution task beside ProsQA's exploration task (a GSM8K stand-in for arXiv 2602.01148).

A question is a chain of small-integer operations evaluated left to right modulo ``modulus``:
``query 23 + 7 * 3 - 4`` has the steps ``30 90 86`` (one token per intermediate value) and the answer ``86``.
Every step has exactly one valid value, so a reasoner must execute precisely instead of keeping options open:
the paper's trade-off predicts latent thoughts (low Symbolic Index) to do worse here than explicit CoT, the
reverse of the graph task. The format matches :mod:`paperlab.reasoning.symbolic` (one token per step, the
same ``question`` / ``steps`` / ``answer`` / ``frontier`` fields), so every method trains on it unchanged; the
frontier of step k is the single correct value.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable
from dataclasses import dataclass

from paperlab._validate import check_int
from paperlab.reasoning.tokenizer import SPECIALS, WordTokenizer

__all__ = ["OPS", "ArithConfig", "ArithExample", "arith_tokenizer", "generate_arith"]

OPS: dict[str, Callable[[int, int], int]] = {"+": operator.add, "-": operator.sub, "*": operator.mul}


@dataclass(frozen=True, kw_only=True)
class ArithConfig:
    """Chains of ``min_steps`` .. ``max_steps`` operations (uniform); a start value in [0, modulus) and
    operands in [1, max_operand]; operators drawn uniformly from ``ops``."""

    min_steps: int = 3
    max_steps: int = 6
    modulus: int = 100
    max_operand: int = 9
    ops: tuple[str, ...] = ("+", "-", "*")

    def __post_init__(self) -> None:
        check_int("min_steps", self.min_steps, minimum=1)
        check_int("max_steps", self.max_steps, minimum=self.min_steps)
        check_int("modulus", self.modulus, minimum=2)
        check_int("max_operand", self.max_operand, minimum=1)
        bad = [o for o in self.ops if o not in OPS]
        if not self.ops or bad:
            raise ValueError(f"ops must be a non-empty tuple drawn from {list(OPS)}, got {self.ops!r}")


@dataclass(frozen=True, kw_only=True)
class ArithExample:
    """One chain. ``question``: ``"query x op a op b ..."``; ``steps``: the intermediate values after each
    operation; ``answer``: the last of them; ``frontier[k - 1]`` and ``step_options[k - 1]``: the one valid
    value of step k."""

    question: str
    steps: tuple[str, ...]
    answer: str

    @property
    def frontier(self) -> tuple[tuple[str, ...], ...]:
        return tuple((s,) for s in self.steps)

    @property
    def answer_token(self) -> str:
        return self.answer

    @property
    def step_options(self) -> tuple[tuple[str, ...], ...]:
        return self.frontier


def _chain(rng: random.Random, cfg: ArithConfig) -> ArithExample:
    value = rng.randrange(cfg.modulus)
    words, steps = ["query", str(value)], []
    for _ in range(rng.randint(cfg.min_steps, cfg.max_steps)):
        op, operand = rng.choice(cfg.ops), rng.randint(1, cfg.max_operand)
        value = OPS[op](value, operand) % cfg.modulus
        words += [op, str(operand)]
        steps.append(str(value))
    return ArithExample(question=" ".join(words), steps=tuple(steps), answer=steps[-1])


def generate_arith(n: int, *, config: ArithConfig | None = None, seed: int) -> list[ArithExample]:
    """``n`` chains drawn from ``seed`` (the same seed gives the same chains)."""
    check_int("n", n, minimum=0)
    check_int("seed", seed)
    rng = random.Random(seed)
    cfg = config or ArithConfig()
    return [_chain(rng, cfg) for _ in range(n)]


def arith_tokenizer(config: ArithConfig | None = None) -> WordTokenizer:
    """Specials, ``query``, the operators and the values ``0 .. modulus - 1`` (operands are values too)."""
    cfg = config or ArithConfig()
    return WordTokenizer([*SPECIALS, "query", *OPS, *(str(v) for v in range(max(cfg.modulus,
                                                                              cfg.max_operand + 1)))])
