"""``tamesu validate``: load and check suites and tamesu.yaml, run nothing, report every problem.

Valid files are vouched for by the fast path (``tamesu.config.fastcheck``, no pydantic models);
whenever it is not sure, the models load every file and report every error as they always do.
"""

from __future__ import annotations

import argparse
import sys

from tamesu.commands import EXIT_CONFIG, EXIT_OK, paint, print_config_errors

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="suite files or folders (folders: the project's suites globs, else YAML files with a suite: key)",
    )
    parser.add_argument("--json", action="store_true", help="print the errors as a JSON list")


def run(args: argparse.Namespace) -> int:
    from tamesu.config.fastcheck import validate_fast

    color = bool(getattr(args, "use_color", False))
    fast = validate_fast(args.paths or ["."])
    if fast is not None:
        return _ok(fast.suites, fast.tests, as_json=args.json, color=color)
    from tamesu.config.load import validate_paths

    report = validate_paths(args.paths or ["."])
    if args.json:
        import json

        json.dump([e.to_dict() for e in report.errors], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_CONFIG if report.errors else EXIT_OK
    if report.errors:
        print_config_errors(report.errors, color=color)
        files = len({e.file for e in report.errors})
        n = len(report.errors)
        print(paint(f"{n} error{'s' * (n != 1)} in {files} file{'s' * (files != 1)}", "red", color))
        return EXIT_CONFIG
    return _ok(len(report.suites), report.tests, as_json=False, color=color)


def _ok(suites: int, tests: int, *, as_json: bool, color: bool) -> int:
    if as_json:
        sys.stdout.write("[]\n")
        return EXIT_OK
    print(paint(f"ok: {suites} suite{'s' * (suites != 1)}, {tests} test{'s' * (tests != 1)}", "green", color))
    return EXIT_OK
