"""``tamesu diff [A] [B]``: what changed between two invocations (ids in the history, or run
directories): regressions, fixes, new and removed tests, latency and cost, flaky tests.

Without arguments: the latest invocation against the one before it of the same suites and kind
(a load test is compared with the load test before it, call latencies and costs included). With one:
that baseline against the latest. ``--against-branch main`` takes the latest invocation of the same
suites recorded on that branch as the baseline.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tamesu.commands import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from tamesu.history import HistoryDB, Invocation

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", nargs="?", metavar="A", help="the baseline: an invocation id or a run directory")
    parser.add_argument("b", nargs="?", metavar="B", help="the run compared with it (default: the latest)")
    parser.add_argument("--against-branch", metavar="BRANCH", help="baseline: the latest run on BRANCH")
    parser.add_argument("--markdown", action="store_true", help="print Markdown (for a pull request comment)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--fail-on-regression", action="store_true", help="exit 1 when a test regressed")
    parser.add_argument(
        "--db",
        metavar="PATH|URL",
        help="the history file or postgresql:// URL (default: tamesu.yaml history)",
    )


def _is_run_dir(value: str) -> bool:
    return (Path(value) / "settings.json").is_file()


def _side(value: str, history: HistoryDB | None) -> Invocation:
    from tamesu.errors import UsageError
    from tamesu.history import invocation_of_run_dir
    from tamesu.reports.rundir import RunDirectory, resolve_run_dir

    text = value.lstrip("#")
    if text.isdigit() and not _is_run_dir(value):
        if history is None:
            raise UsageError(f"{value}: history is turned off, so only run directories can be compared")
        return history.invocation(int(text))
    try:
        return invocation_of_run_dir(RunDirectory.open(resolve_run_dir(value)))
    except UsageError:
        raise UsageError(f"{value} is neither an invocation id of the history nor a run directory") from None


def _pick(args: argparse.Namespace, history: HistoryDB | None) -> tuple[Invocation, Invocation]:
    from tamesu.errors import UsageError
    from tamesu.history import invocation_of_run_dir
    from tamesu.reports.rundir import RunDirectory, resolve_run_dir

    if args.b is not None:
        b = _side(args.b, history)
    elif args.a is not None and _is_run_dir(args.a):
        b = invocation_of_run_dir(RunDirectory.open(resolve_run_dir(None)))
    elif history is None:
        raise UsageError("history is turned off: name two run directories to compare")
    else:
        latest = history.invocations(limit=1)
        if not latest:
            raise UsageError("no invocation recorded yet: run tamesu run first")
        b = history.invocation(latest[0].id or 0)
    if args.a is not None:
        return _side(args.a, history), b
    assert history is not None
    earlier = [
        i
        for i in history.invocations(suites=b.suites, kind=b.kind)
        if i.id != b.id
        and (b.id is None or (i.id or 0) < b.id)
        and (args.against_branch is None or i.git_branch == args.against_branch)
    ]
    if not earlier:
        where = f" on branch {args.against_branch}" if args.against_branch else ""
        raise UsageError(f"no earlier invocation of {', '.join(b.suites)}{where} to compare with")
    return history.invocation(earlier[0].id or 0), b


def run(args: argparse.Namespace) -> int:
    from tamesu.commands.history import open_history, print_skipped
    from tamesu.errors import UsageError

    try:
        history, window = open_history(args.db)
    except UsageError:
        if not (args.a and _is_run_dir(args.a) and (args.b is None or _is_run_dir(args.b))):
            raise
        history, window = None, 10  # two run directories need no history
    try:
        return _compared(args, history, window)
    finally:
        print_skipped(history)


def _compared(args: argparse.Namespace, history: HistoryDB | None, window: int) -> int:
    from tamesu.errors import UsageError
    from tamesu.history import HistoryError, compare
    from tamesu.history.render import comparison_json, comparison_markdown, comparison_text

    try:
        a, b = _pick(args, history)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    found = history if history is not None and history.exists() else None
    comparison = compare(a, b, history=found, flaky_window=window)
    if args.json:
        print(json.dumps(comparison_json(comparison), indent=2))
    elif args.markdown:
        sys.stdout.write(comparison_markdown(comparison))
    else:
        sys.stdout.write(comparison_text(comparison))
    return EXIT_FAILED if args.fail_on_regression and comparison.regressed else EXIT_OK
