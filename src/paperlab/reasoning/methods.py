"""The reasoning methods that ``paperlab.reasoning`` trains and evaluates (names only; imports no torch).

- ``no_cot``: question -> answer; ``cot``: the reasoning steps as language, then the answer;
- ``coconut``: Coconut's staged curriculum (arXiv 2412.06769) replacing steps by continuous thoughts;
- ``no_curriculum``: all thoughts from the first step; ``no_thought``: the curriculum without thoughts;
- ``pause``: learned pause embeddings in the thought slots (no hidden-state feedback).
"""

from __future__ import annotations

__all__ = ["LANGUAGE_METHODS", "LATENT_METHODS", "METHODS"]

METHODS = ("no_cot", "cot", "coconut", "no_curriculum", "no_thought", "pause")
LANGUAGE_METHODS = ("no_cot", "cot")
LATENT_METHODS = tuple(m for m in METHODS if m not in LANGUAGE_METHODS)
