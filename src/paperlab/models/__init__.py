"""Models built from ``paperlab.layers``: the language model with per-layer state, and its generation."""

from __future__ import annotations

from paperlab.models.generate import generate
from paperlab.models.lm import LM, LMConfig, LMState

__all__ = ["LM", "LMConfig", "LMState", "generate"]
