"""Exceptions shared by the library's subpackages (import-light: no torch, no numpy)."""

from __future__ import annotations

__all__ = ["NotFittedError"]


class NotFittedError(ValueError, AttributeError):
    """A fit-then-query object (an auditor, a law fitter) was queried before ``fit``.

    One class for the whole library. It subclasses ``ValueError`` and ``AttributeError`` as scikit-learn's
    ``NotFittedError`` does, so callers catching either (or ``hasattr`` on a fitted property) keep working.
    """
