"""``tamesu report``: one self-contained HTML page of a run directory (default: the latest run)."""

from __future__ import annotations

import argparse
import sys

from tamesu.commands import EXIT_OK

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", nargs="?", metavar="RUN_DIR", help="a run directory, or its name (default: the latest run)"
    )
    parser.add_argument(
        "--out", metavar="FILE", help="where to write the page (default: RUN_DIR/report.html)"
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tamesu.reports.html import write_html
    from tamesu.reports.rundir import RunDirectory, resolve_run_dir

    directory = RunDirectory.open(resolve_run_dir(args.run_dir))
    path = write_html(directory, Path(args.out) if args.out else directory.dir / "report.html")
    print(f"report written to {path}", file=sys.stdout)
    if args.open:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return EXIT_OK
