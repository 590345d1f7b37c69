"""``paperlab <command>``: argparse -> config -> library call. ``--help`` works on every command.

A user error the library rejects (ValueError, TypeError, a missing or already existing file, a diverged loss:
paperlab's own errors are of these kinds) prints one line, ``paperlab: error: <message>``, to stderr and exits
with 2, as argparse does for bad options; ``paperlab --debug <command>`` re-raises it with its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from paperlab import __version__
from paperlab.cli import data, forecast, lm, readme, reproduce, scaling
from paperlab.cli._argparse import ArgumentParser

__all__ = ["ArgumentParser", "build_parser", "main"]

# What a command reports as a user error; anything else is a bug and keeps its traceback.
USER_ERRORS = (ValueError, TypeError, FileNotFoundError, FileExistsError, FloatingPointError)

# One module per command group, each with ``add_parser(subparsers)``; they import heavy code only when run.
COMMANDS = {"reproduce": reproduce, "readme": readme, "data": data, "lm": lm, "forecast": forecast,
            "scaling": scaling}


def build_parser() -> ArgumentParser:
    """The ``paperlab`` parser with every command group registered."""
    parser = ArgumentParser(prog="paperlab", description="Six ML papers as tested software; claims checked by code.")
    parser.add_argument("--version", action="version", version=f"paperlab {__version__}")
    parser.add_argument("--debug", action="store_true", help="on an error, show the Python traceback")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=ArgumentParser)
    for module in COMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return its exit code."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # report against the innermost subcommand so the message lists *its* valid options
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(args.func(args) or 0)
    except USER_ERRORS as exc:
        if args.debug:
            raise
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"paperlab: error: {message}", file=sys.stderr)
        return 2

