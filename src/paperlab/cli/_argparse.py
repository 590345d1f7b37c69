"""The argparse subclass every ``paperlab`` (sub)command uses."""

from __future__ import annotations

import argparse

__all__ = ["ArgumentParser"]


class ArgumentParser(argparse.ArgumentParser):
    """argparse that lists the valid options when it rejects an unknown one."""

    def error(self, message: str) -> None:  # type: ignore[override]
        if "unrecognized arguments" in message:
            valid = sorted(o for a in self._actions for o in a.option_strings)
            message += f"\nvalid options for '{self.prog}': {', '.join(valid)}"
        super().error(message)
