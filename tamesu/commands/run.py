"""``tamesu run``: run suites against their targets; a thin layer over ``tamesu.run()``."""

from __future__ import annotations

import argparse
import sys

from tamesu.commands import (
    add_local_run_arguments,
    add_selection_arguments,
    integer,
    positive_int,
    split_list,
)

__all__ = ["add_arguments", "run"]


def _duration(text: str) -> float:
    from tamesu.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)
    parser.add_argument(
        "-j",
        "--concurrency",
        type=positive_int,
        metavar="N",
        help="runs in flight at once (default: tamesu.yaml, else 4)",
    )
    parser.add_argument(
        "--per-target",
        type=positive_int,
        metavar="N",
        help="runs in flight against one target (default: --concurrency)",
    )
    parser.add_argument(
        "--repeat", type=positive_int, metavar="N", help="run every test N times (overrides repeat)"
    )
    parser.add_argument(
        "--timeout", type=_duration, metavar="DURATION", help="time limit of every run (e.g. 90s)"
    )
    parser.add_argument(
        "--seed", type=integer, metavar="N", help="seed the simulated users and {{faker.*}} values"
    )
    parser.add_argument("--ray", action="store_true", help="run on an embedded local Ray")
    parser.add_argument("--address", metavar="ADDR", help="run on the Ray cluster at ADDR (implies --ray)")
    add_local_run_arguments(parser, "tests")
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        metavar="DIR",
        help="continue an interrupted invocation (default: the latest run directory of these suites)",
    )
    parser.add_argument(
        "--output", metavar="DIR", help="where run directories go (default: tamesu.yaml output)"
    )
    parser.add_argument("--junit", metavar="PATH", help="also write JUnit XML to PATH")
    parser.add_argument("--json", metavar="PATH", help="also write the whole invocation as JSON to PATH")
    parser.add_argument(
        "--no-html",
        action="store_true",
        help="write no report.html into the run directory (default: tamesu.yaml html_report, on)",
    )
    parser.add_argument(
        "--sarif", metavar="PATH", help="also write the red-team findings as SARIF 2.1.0 to PATH"
    )
    parser.add_argument(
        "--update-golden", action="store_true", help="write golden files instead of comparing"
    )
    parser.add_argument(
        "--cache", action="store_true", help="replay model answers from the response cache, and fill it"
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="the response cache folder (default .tamesu-cache/models; implies --cache)",
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="run every audio test once per cell of a grid over line_quality, background_noise (NOISE@SNR_DB), "
        "voice, language, interrupt_probability; repeat for more keys",
    )
    parser.add_argument("--fail-fast", action="store_true", help="start no new run after the first failure")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="a skipped check makes its run an error (exit 3), an inconclusive judge a failure",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only problems and the totals")
    parser.add_argument(
        "--failed-only", action="store_true", help="leave passed runs and tests out of the console output"
    )


def run(args: argparse.Namespace) -> int:
    from tamesu import run as run_suites
    from tamesu.commands.serve import loopback_livekit
    from tamesu.reports.console import ConsoleReporter
    from tamesu.secrets import Redactor

    redactor = Redactor()
    color = getattr(args, "use_color", None)
    reporter = ConsoleReporter(
        color=color if isinstance(color, bool) else getattr(args, "color", "auto"),
        quiet=args.quiet,
        redactor=redactor,
        failed_only=args.failed_only,
    )
    resume = args.resume if args.resume in (True, False) else str(args.resume)
    if isinstance(resume, str) and resume.lower() in ("true", "1", "yes"):
        resume = True
    elif isinstance(resume, str) and resume.lower() in ("false", "0", "no", ""):
        resume = False
    try:
        result = run_suites(
            args.paths,
            reporter=reporter,
            redactor=redactor,
            argv=["tamesu", *sys.argv[1:]],
            livekit_server=loopback_livekit,
            concurrency=args.concurrency,
            per_target=args.per_target,
            tags=split_list(args.tags),
            exclude_tags=split_list(args.exclude_tags),
            filter=args.filter,
            repeat=args.repeat,
            timeout=args.timeout,
            seed=args.seed,
            ray=args.ray,
            address=args.address,
            processes=args.processes,
            stt_engine=args.stt_engine,
            resume=resume,
            output=args.output,
            junit=args.junit,
            json=args.json,
            sarif=args.sarif,
            html=False if args.no_html else None,
            update_golden=args.update_golden,
            fail_fast=args.fail_fast,
            strict=args.strict,
            cache=args.cache_dir or args.cache,
            grid=list(args.grid or []),
        )
    finally:
        reporter.close()
    reporter.summary(result)
    return result.exit_code
