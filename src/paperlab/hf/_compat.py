"""Whether the Hugging Face extra is installed, and stand-ins for its classes when it is not.

Every module of ``paperlab.hf`` imports without ``transformers`` (the packaged wheel is checked by importing all
of its modules), so the classes are defined on stand-in bases when the extra is missing; instantiating any of them
then raises ``ImportError`` naming the install command, ``pip install 'paperlab[hf]'``.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["AVAILABLE", "INSTALL_HINT", "missing_base", "require_transformers"]

INSTALL_HINT = "pip install 'paperlab[hf]'"

try:
    import transformers  # noqa: F401  (pip install 'paperlab[hf]')
except ImportError:
    AVAILABLE = False
else:
    AVAILABLE = True


def require_transformers(what: str = "paperlab.hf") -> None:
    """Raise ``ImportError`` naming the extra when ``transformers`` is not installed."""
    if not AVAILABLE:
        _raise(what)


def _raise(what: str) -> NoReturn:
    raise ImportError(f"{what} needs the Hugging Face extra (transformers >= 5 and safetensors): {INSTALL_HINT}")


class _Missing:
    """Base of the stand-ins: any instantiation (of a subclass too) raises the install hint."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        _raise(cls.__name__)

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> Any:
        _raise(cls.__name__)


def missing_base(name: str) -> Any:
    """A stand-in class named ``name`` for a ``transformers`` base class that is not installed."""
    return type(name, (_Missing,), {"__doc__": f"Stand-in for transformers.{name} ({INSTALL_HINT})."})
