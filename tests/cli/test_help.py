"""Every ``paperlab`` option has help text, and every meaningful default is shown in ``--help``."""

from __future__ import annotations

import argparse

import pytest

import paperlab
from paperlab.cli import build_parser, main


def _parsers(parser: argparse.ArgumentParser, path: str = "paperlab"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


PARSERS = dict(_parsers(build_parser()))


@pytest.mark.parametrize("path", sorted(PARSERS))
def test_every_option_has_help_and_shows_its_default(path):
    parser = PARSERS[path]
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        assert action.help, f"{path}: {action.option_strings[0]} has no help text"
        if action.default not in (None, False, argparse.SUPPRESS, []):
            expanded = formatter._expand_help(action)
            assert str(action.default) in expanded or "default" in action.help, \
                f"{path}: {action.option_strings[0]} default {action.default!r} not shown in --help"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"paperlab {paperlab.__version__}"
