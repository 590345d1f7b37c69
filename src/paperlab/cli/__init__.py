"""``paperlab <command>``: argparse -> config -> library call. ``--help`` works on every command."""

from __future__ import annotations

from collections.abc import Sequence

from paperlab import __version__
from paperlab.cli import data, forecast, lm, readme, reproduce, scaling
from paperlab.cli._argparse import ArgumentParser

__all__ = ["ArgumentParser", "build_parser", "main"]

# One module per command group, each with ``add_parser(subparsers)``; they import heavy code only when run.
COMMANDS = {"reproduce": reproduce, "readme": readme, "data": data, "lm": lm, "forecast": forecast,
            "scaling": scaling}


def build_parser() -> ArgumentParser:
    """The ``paperlab`` parser with every command group registered."""
    parser = ArgumentParser(prog="paperlab", description="Six ML papers as tested software; claims checked by code.")
    parser.add_argument("--version", action="version", version=f"paperlab {__version__}")
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
    return int(args.func(args) or 0)

