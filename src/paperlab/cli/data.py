"""``paperlab data list | download``: the dataset registry."""

from __future__ import annotations

import argparse
from pathlib import Path

from paperlab.cli._argparse import ArgumentParser

__all__ = ["add_parser"]


def _cmd_data(args: argparse.Namespace) -> int:
    from paperlab.data import DATASETS, DatasetNotFoundError, download, path
    from paperlab.data.registry import ChecksumError

    if args.data_command == "list":
        for name, ds in DATASETS.items():
            for role in ds.files:
                try:
                    where = str(path(name, role))
                except DatasetNotFoundError:
                    where = "MISSING"
                except ChecksumError:
                    where = f"DAMAGED (sha256 mismatch): {path(name, role, verify=False)}"
                print(f"{name:18s} {role:7s} {where}")
        return 0
    for name in args.names:
        for written in download(name, root=args.dir, base_url=args.base_url):
            print(f"{name}: {written}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="list or download datasets", description="Dataset registry.")
    dsub = p.add_subparsers(dest="data_command", required=True, parser_class=ArgumentParser)
    dsub.add_parser("list", help="where each dataset was found, or MISSING")
    d = dsub.add_parser("download", help="download, verify sha256, write atomically")
    d.add_argument("names", nargs="+", help="dataset names (see `paperlab data list`)")
    d.add_argument("--dir", type=Path, default=None, help="destination root (default: user cache)")
    d.add_argument("--base-url", default=None, help="mirror replacing the canonical URLs")
    d.set_defaults(_parser=d)
    p.set_defaults(func=_cmd_data)
