"""``tamesu validate``: load and check suites and tamesu.yaml, run nothing, report every problem.

Valid files are vouched for by the fast path (``tamesu.config.fastcheck``, no pydantic models);
whenever it is not sure, the models load every file and report every error as they always do.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

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
        return _ok(fast.suites, fast.tests, fast.warnings, as_json=args.json, color=color)
    from tamesu.config.load import validate_paths

    report = validate_paths(args.paths or ["."])
    if not report.errors:
        return _ok(len(report.suites), report.tests, list(report.warnings), as_json=args.json, color=color)
    if args.json:
        import json

        json.dump([_as_dict(e) for e in [*report.errors, *report.warnings]], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_CONFIG
    if report.errors:
        print_config_errors(report.errors, color=color)
        files = len({e.file for e in report.errors})
        n = len(report.errors)
        print(paint(f"{n} error{'s' * (n != 1)} in {files} file{'s' * (files != 1)}", "red", color))
        return EXIT_CONFIG
    return _ok(len(report.suites), report.tests, report.warnings, as_json=False, color=color)


def _as_dict(error: object) -> dict[str, object]:
    from tamesu.errors import ModelUnavailable

    out = error.to_dict()  # type: ignore[attr-defined]
    out["severity"] = "warning" if isinstance(error, ModelUnavailable) else "error"
    return dict(out)


def _ok(suites: int, tests: int, warnings: Sequence[object], *, as_json: bool, color: bool) -> int:
    """Valid. Warnings name tests that need a model nothing configures: ``tamesu run`` reports them as
    errors without running them, and runs the rest."""
    if as_json:
        import json

        json.dump([_as_dict(w) for w in warnings], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    for w in warnings:
        print(paint(f"warning: {w}", "yellow", color))
    line = f"ok: {suites} suite{'s' * (suites != 1)}, {tests} test{'s' * (tests != 1)}"
    if warnings:
        line += f"; {len(warnings)} check{'s' * (len(warnings) != 1)} need{'s' * (len(warnings) == 1)} a model (see the warnings)"
    print(paint(line, "green", color))
    return EXIT_OK
