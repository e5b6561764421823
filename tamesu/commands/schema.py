"""``tamesu schema``: the JSON Schema editors use for completion and inline errors."""

from __future__ import annotations

import argparse
import sys

from tamesu.commands import EXIT_OK

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", action="store_true", help="the schema of tamesu.yaml instead of suites")


def run(args: argparse.Namespace) -> int:
    from tamesu.config.schema import dump_schema

    text = dump_schema("project" if args.project else "suite")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK
