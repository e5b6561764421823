"""``tamesu history``: the invocations the project's history recorded, newest first."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tamesu.commands import EXIT_CONFIG, EXIT_OK, positive_int, split_list
from tamesu.untrusted import table

if TYPE_CHECKING:
    from tamesu.history import HistoryDB, Invocation

__all__ = ["add_arguments", "open_history", "print_skipped", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--limit", type=positive_int, default=20, metavar="N", help="how many invocations (default 20)"
    )
    parser.add_argument("--suite", action="append", metavar="NAME", help="only invocations of these suites")
    parser.add_argument("--test", metavar="TEST_ID", help="one test's verdicts over the invocations instead")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--db",
        metavar="PATH|URL",
        help="the history file or postgresql:// URL (default: tamesu.yaml history)",
    )


def open_history(db: str | None) -> tuple[HistoryDB, int]:
    """The history named on the command line, else the project's, and its flaky window."""
    from tamesu.config.loader import load_project
    from tamesu.errors import UsageError
    from tamesu.history import HistoryDB, HistoryError, history_location

    found = load_project(Path.cwd())
    project, project_dir = found if found else (None, None)
    window = project.history.flaky_window if project is not None else 10
    if db:
        return HistoryDB(db), window
    try:
        location = history_location(project, project_dir)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    if location is None:
        raise UsageError(
            "history is turned off in tamesu.yaml (history.enabled: false); name a file with --db"
        )
    return HistoryDB(location), window


def run(args: argparse.Namespace) -> int:
    history, _ = open_history(args.db)
    try:
        return _listing(args, history)
    finally:
        print_skipped(history)


def print_skipped(history: HistoryDB | None) -> None:
    """Name on stderr each row the command left out because tamesu did not write it."""
    from tamesu.untrusted import printable

    for note in history.skipped if history is not None else []:
        print(f"note: {printable(note)}", file=sys.stderr)


def _listing(args: argparse.Namespace, history: HistoryDB) -> int:
    from tamesu.errors import UsageError
    from tamesu.history import HistoryError
    from tamesu.history.render import describe
    from tamesu.untrusted import printable

    try:
        invocations = history.invocations(limit=args.limit, suites=split_list(args.suite) or None)
        if args.test:
            return _test(history, args.test, invocations, as_json=args.json)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps([{**i.__dict__, "tests": None} for i in invocations], indent=2, default=str))
        return EXIT_OK
    rows = [
        [
            str(i.id),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(i.started_at)),
            printable(", ".join(i.suites)) + (" (load)" if i.kind == "load" else ""),
            printable(describe(i).split(" ")[1] if i.git_commit else "-"),
            f"{i.counts.get('passed', 0)}/{i.counts.get('failed', 0)}/{i.counts.get('error', 0)}",
            f"{i.duration:.1f}s",
            f"${i.cost_usd:.4f}",
            _per_pass(i),
            str(i.exit_code),
        ]
        for i in invocations
    ]
    header = ["id", "when", "suites", "git", "pass/fail/err", "took", "cost", "per pass", "exit"]
    color = bool(getattr(args, "use_color", False))
    print(table(rows, header=header, color=color) if rows else "no invocations recorded yet")
    return EXIT_OK


def _per_pass(inv: Invocation) -> str:
    """What one passed run cost in this invocation (``-`` when it kept no cost figures or none passed)."""
    from tamesu.reports.cost import usd

    cost = inv.summary.get("cost") if isinstance(inv.summary, dict) else None
    per_pass = cost.get("per_pass_usd") if isinstance(cost, dict) else None
    return usd(per_pass) if per_pass is not None else "-"


def _test(history: HistoryDB, test: str, invocations: list[Invocation], *, as_json: bool) -> int:
    from tamesu.untrusted import printable

    suite, _, test_id = test.rpartition(" / ")
    suites = {s for i in invocations for s in i.suites} if not suite else {suite}
    found = [
        (name, inv_id, verdict, passed, runs)
        for name in sorted(suites)
        for inv_id, verdict, passed, runs in history.verdicts(name, test_id, limit=len(invocations) or 20)
    ]
    if as_json:
        keys = ("suite", "invocation", "verdict", "passed", "runs")
        print(json.dumps([dict(zip(keys, row)) for row in found], indent=2))
        return EXIT_OK
    if not found:
        print(f"no verdicts recorded for {printable(test)}", file=sys.stderr)
        return EXIT_CONFIG
    lines = [
        [str(inv_id), printable(name), verdict, f"{passed}/{runs}"]
        for name, inv_id, verdict, passed, runs in found
    ]
    print(table(lines, header=["id", "suite", "verdict", "passes"]))
    return EXIT_OK
