"""``tamesu show RUN_ID``: print one run readably (its transcript, checks and captures)."""

from __future__ import annotations

import argparse
import shutil
import sys

from tamesu.commands import EXIT_CONFIG, EXIT_OK

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID", help="a run id (test#2), a test id, or part of one")
    parser.add_argument(
        "--run-dir", metavar="DIR", help="the run directory, or its name (default: the latest run)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the run's stored transcript as JSON (one line, as kept in transcripts.jsonl)",
    )


def run(args: argparse.Namespace) -> int:
    import json

    import msgspec

    from tamesu.reports.rundir import RunDirectory, resolve_run_dir
    from tamesu.reports.show import render_run
    from tamesu.untrusted import printable

    directory = RunDirectory.open(resolve_run_dir(args.run_dir))
    found = directory.find(args.run_id)
    if not found:
        print(f"tamesu: no run matches {args.run_id!r} in {directory.dir}", file=sys.stderr)
        return EXIT_CONFIG
    if len(found) > 1:
        print(f"tamesu: {len(found)} runs match {args.run_id!r}; name one of:", file=sys.stderr)
        for r in found:
            print(f"  {printable(r.run_id)}  ({r.outcome})", file=sys.stderr)
        return EXIT_CONFIG
    result = found[0]
    if args.json:
        transcript = directory.transcript(result)
        if transcript is None:
            print(f"tamesu: {printable(result.run_id)} has no readable transcript", file=sys.stderr)
            return EXIT_CONFIG
        # ASCII only: C1 controls and bidi overrides an agent sent stay escapes on a terminal too
        sys.stdout.write(json.dumps(msgspec.to_builtins(transcript), ensure_ascii=True) + "\n")
        return EXIT_OK
    # off a terminal nothing is wrapped: a pipe or a log reads each turn whole
    width = min(shutil.get_terminal_size((100, 24)).columns, 120) if sys.stdout.isatty() else None
    color = bool(getattr(args, "use_color", False))
    sys.stdout.write(render_run(result, directory.transcript(result), color=color, width=width))
    return EXIT_OK
