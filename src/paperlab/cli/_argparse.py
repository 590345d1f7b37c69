"""The argparse subclass every ``paperlab`` (sub)command uses."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["ArgumentParser", "DefaultsHelpFormatter"]


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Appends ``(default: X)`` to an option's help when it has a meaningful default (not None, False or
    SUPPRESS) and the help text does not already state one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        unset = default is None or default is False or default is argparse.SUPPRESS  # identity: 0 is a default
        if action.option_strings and not unset and default != [] and "default" not in text:
            text += " (default: %(default)s)"
        return text


class ArgumentParser(argparse.ArgumentParser):
    """argparse that shows defaults in ``--help`` and lists the valid options when it rejects an unknown one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        if "unrecognized arguments" in message:
            valid = sorted(o for a in self._actions for o in a.option_strings)
            message += f"\nvalid options for '{self.prog}': {', '.join(valid)}"
        super().error(message)
