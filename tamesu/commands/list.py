"""``tamesu list``: the tests a run would start, after cases, languages and tag selection."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tamesu.commands import EXIT_CONFIG, EXIT_OK, add_selection_arguments, print_config_errors, split_list
from tamesu.untrusted import paint, table

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the tests as a JSON list")


def run(args: argparse.Namespace) -> int:
    from tamesu.config.loader import validate_paths
    from tamesu.environment import MACHINE_CHECKS
    from tamesu.runner.plan import plan

    color = bool(getattr(args, "use_color", False))
    report = validate_paths(args.paths or ["."], checks=MACHINE_CHECKS)
    if report.errors:
        print_config_errors(report.errors, color=color, stream=sys.stderr)
        return EXIT_CONFIG
    rows: list[dict[str, Any]] = []
    for loaded in report.suites:
        seen: dict[str, dict[str, Any]] = {}
        for spec in plan(
            loaded,
            tags=split_list(args.tags),
            exclude_tags=split_list(args.exclude_tags),
            filter=args.filter,
        ):
            if spec.test_id in seen:
                continue
            seen[spec.test_id] = {
                "suite": spec.suite,
                "file": loaded.file or str(loaded.path),
                "test": spec.test_id,
                "name": spec.test_name,
                "case": spec.case,
                "language": spec.language,
                "target": spec.target_name,
                "tags": list(spec.tags),
                "repeat": spec.repeats,
                "quarantine": spec.quarantine,
            }
        rows.extend(seen.values())
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    several = len({r["file"] for r in rows}) > 1
    header = ["SUITE"] * several + ["TEST", "TARGET", "TAGS", "RUNS"]
    lines = [
        [r["suite"]] * several
        + [
            r["test"] + (" (quarantined)" if r["quarantine"] else ""),
            r["target"],
            ",".join(r["tags"]) or "-",
            str(r["repeat"]),
        ]
        for r in rows
    ]
    if lines:
        print(table(lines, header=header, color=color))
    n = len(rows)
    print(
        paint(
            f"{n} test{'s' * (n != 1)} in {len(report.suites)} suite{'s' * (len(report.suites) != 1)}",
            "dim",
            color,
        )
    )
    return EXIT_OK
