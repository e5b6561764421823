"""``tamesu validate``: load and check suites and tamesu.yaml, run nothing, report every problem.

Every file goes through the models and the checks (``tamesu.config.loader.validate_paths``); what this
environment cannot run of a valid suite is a warning (exit 0), an error with ``--strict``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tamesu.commands import EXIT_CONFIG, EXIT_OK, print_config_errors
from tamesu.untrusted import paint

if TYPE_CHECKING:
    from tamesu.errors import ConfigError

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="suite files or folders (folders: the project's suites globs, else YAML files with a suite: key)",
    )
    parser.add_argument("--json", action="store_true", help="print the errors as a JSON list")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="treat what this environment cannot run (unset variables, missing extras...) as errors",
    )


def run(args: argparse.Namespace) -> int:
    from tamesu.cycle_collector import paused

    with paused():
        return _validate(args)


def _validate(args: argparse.Namespace) -> int:
    from tamesu.config.loader import validate_paths
    from tamesu.environment import MACHINE_CHECKS

    color = bool(getattr(args, "use_color", False))
    strict = bool(getattr(args, "strict", False))
    report = validate_paths(args.paths or ["."], checks=MACHINE_CHECKS)
    errors: list[ConfigError] = report.errors
    warnings = _unique(report.warnings)
    suites, tests = len(report.suites), report.tests
    if strict:
        errors, warnings = [*errors, *warnings], []
    if args.json:
        import json

        items = [_as_dict(e, "error") for e in errors] + [_as_dict(w, "warning") for w in warnings]
        json.dump(items, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_CONFIG if errors else EXIT_OK
    for w in warnings:
        print(paint(f"warning: {w}", "yellow", color))
    if errors:
        print_config_errors(errors, color=color)
        files = len({e.file for e in errors})
        n = len(errors)
        print(paint(f"{n} error{'s' * (n != 1)} in {files} file{'s' * (files != 1)}", "red", color))
        return EXIT_CONFIG
    line = f"ok: {suites} suite{'s' * (suites != 1)}, {tests} test{'s' * (tests != 1)}"
    if warnings:
        n = len(warnings)
        line += f"; {n} warning{'s' * (n != 1)}: tamesu run reports the tests they name as errors"
    print(paint(line, "green", color))
    return EXIT_OK


def _unique(problems: Sequence[ConfigError]) -> list[ConfigError]:
    """Each problem once (a tamesu.yaml problem is found again with each of its suites)."""
    return list({str(p): p for p in problems}.values())


def _as_dict(error: ConfigError, severity: str) -> dict[str, object]:
    return {**error.to_dict(), "severity": severity}
