"""``tamesu generate``: draft tests from the agent's description; a thin layer over tamesu.generation."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from tamesu.commands import EXIT_CONFIG, EXIT_OK, print_config_errors, split_list
from tamesu.untrusted import paint

__all__ = ["add_arguments", "run"]


def _count(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 50:
        raise argparse.ArgumentTypeError("must be between 1 and 50")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        nargs="?",
        metavar="SUITE",
        help="the suite whose target and models to use (default: the one in .)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--describe", metavar="TEXT", help="what the agent is and must never do")
    source.add_argument("--describe-file", metavar="PATH", help="read the description from a file")
    parser.add_argument(
        "--target",
        metavar="NAME",
        help="the target the tests talk to (default: red_team.target, else the only one)",
    )
    parser.add_argument("--count", type=_count, default=5, metavar="N", help="tests to draft (default 5)")
    parser.add_argument("--tags", action="append", metavar="TAGS", help="tags added to every drafted test")
    parser.add_argument(
        "--out", metavar="PATH", help="the file to write (default SUITE.generated.yaml); never overwritten"
    )
    parser.add_argument(
        "--probe", action="store_true", help="first ask the target what it does, and tell the model"
    )
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the model call (default 0)")


def run(args: argparse.Namespace) -> int:
    from tamesu.config.loader import validate_paths
    from tamesu.environment import MACHINE_CHECKS
    from tamesu.errors import UsageError
    from tamesu.generation import generate

    color = bool(getattr(args, "use_color", False))
    report = validate_paths([args.path or "."], checks=MACHINE_CHECKS)
    if report.errors:
        print_config_errors(report.errors, color=color)
        return EXIT_CONFIG
    if len(report.suites) != 1:
        raise UsageError(f"tamesu generate works from one suite; {len(report.suites)} found: name one")
    describe = args.describe
    if args.describe_file:
        try:
            describe = Path(args.describe_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--describe-file: cannot read {args.describe_file}: {exc}") from None
    result = asyncio.run(
        generate(
            report.suites[0],
            describe=describe,
            target=args.target,
            count=args.count,
            tags=split_list(args.tags),
            out=args.out,
            probe_target=args.probe,
            seed=args.seed,
        )
    )
    for line in result.dropped:
        print(paint(f"dropped (still invalid after one repair): {line}", "yellow", color))
    for name in result.repaired:
        print(paint(f"repaired: {name}", "dim", color))
    n = len(result.tests)
    print(f"wrote {n} test{'s' * (n != 1)} to {result.path}")
    return EXIT_OK
