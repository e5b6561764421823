"""``tamesu load``: a load test of suites (many simultaneous calls, each graded), with gates.

The profile comes from tamesu.yaml's ``load:`` with these options on top; the calls run locally or
on Ray (``--ray``, ``--address``); results are durable as they arrive and ``--resume`` continues an
interrupted test. Exit codes: 0 every gate held, 1 a gate was crossed, 2 usage or config error,
3 no call could be graded (every one an infrastructure error), 4 budget exceeded, 130 interrupted.
With ``--find-capacity`` (``tamesu.load.capacity``): 0 a capacity was found, 1 even the first step
broke, 3 no call could be graded or tamesu's own CPU was the limit.
"""

from __future__ import annotations

import argparse
import sys

from tamesu.commands import (
    add_local_run_arguments,
    add_selection_arguments,
    fraction,
    integer,
    positive_int,
    positive_number,
    split_list,
)

__all__ = ["add_arguments", "run"]


def _duration(text: str) -> str:
    from tamesu.durations import parse_duration

    try:
        parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _slo(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = None
    if not sep or not name.strip() or number is None:
        raise argparse.ArgumentTypeError(f"expected NAME=MAX such as turn_latency_ms_p95=2500, got {text!r}")
    return name.strip(), number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)
    size = parser.add_argument_group("load profile (tamesu.yaml load: is the default)")
    size.add_argument("--calls", type=positive_int, metavar="N", help="calls to start in all")
    size.add_argument("--duration", type=_duration, metavar="DURATION", help="how long calls keep arriving")
    pace = size.add_mutually_exclusive_group()
    pace.add_argument(
        "--rate", type=positive_number, metavar="PER_S", help="arrivals per second (open model)"
    )
    pace.add_argument(
        "-j", "--concurrency", type=positive_int, metavar="N", help="calls kept in flight (closed model)"
    )
    size.add_argument(
        "--ramp-up", type=_duration, metavar="DURATION", help="grow from zero to full load over this long"
    )
    size.add_argument("--shape", choices=("steady", "ramp", "spike", "soak"), help="the load over time")
    size.add_argument("--spike-at", type=_duration, metavar="DURATION", help="spike: when it starts")
    size.add_argument("--spike-duration", type=_duration, metavar="DURATION", help="spike: how long it lasts")
    size.add_argument(
        "--spike-multiplier", type=positive_number, metavar="X", help="spike: load multiple (default 3)"
    )
    size.add_argument(
        "--arrivals", choices=("poisson", "uniform"), help="with --rate: random or evenly spaced"
    )
    size.add_argument(
        "--max-in-flight", type=positive_int, metavar="N", help="with --rate: shed arrivals beyond N calls"
    )
    size.add_argument(
        "--window", type=_duration, metavar="DURATION", help="report percentiles per window (10s)"
    )
    size.add_argument("--workers", type=positive_int, metavar="N", help="Ray workers (default: one per CPU)")
    search = parser.add_argument_group(
        "capacity search (exit 0 when a capacity was found, 1 when even the first step broke)"
    )
    search.add_argument(
        "--find-capacity",
        action="store_true",
        help="raise the calls in flight in steps until a gate breaks, then bisect: the capacity",
    )
    search.add_argument(
        "--start-concurrency", type=positive_int, metavar="N", help="calls in flight of the first step (1)"
    )
    search.add_argument(
        "--max-concurrency", type=positive_int, metavar="N", help="never more calls in flight than N (256)"
    )
    search.add_argument(
        "--max-duration", type=_duration, metavar="DURATION", help="the search stops within this long (10m)"
    )
    search.add_argument(
        "--step-calls",
        type=positive_int,
        metavar="N",
        help="least calls one step makes before it is judged (20)",
    )
    search.add_argument(
        "--step-seconds", type=_duration, metavar="DURATION", help="least time one step holds its level (10s)"
    )
    search.add_argument(
        "--cool-down", type=_duration, metavar="DURATION", help="the agent is left idle between steps (5s)"
    )
    gates = parser.add_argument_group("gates (exit 1 when one is crossed)")
    gates.add_argument("--min-pass-rate", type=fraction, metavar="F", help="least share of calls that pass")
    gates.add_argument("--max-error-rate", type=fraction, metavar="F", help="most share of calls that error")
    gates.add_argument(
        "--slo", type=_slo, action="append", metavar="NAME=MAX", help="e.g. turn_latency_ms_p95=2500"
    )
    gates.add_argument(
        "--max-cost-per-pass",
        type=positive_number,
        metavar="USD",
        help="most US dollars per passed call (model calls, speech, call minutes)",
    )
    gates.add_argument(
        "--max-drift",
        type=positive_number,
        metavar="X",
        help="soak: last window p95 at most X times the first",
    )
    parser.add_argument("--timeout", type=_duration, metavar="DURATION", help="time limit of every call")
    parser.add_argument(
        "--seed", type=integer, metavar="N", help="seed arrivals, simulated users and {{faker.*}}"
    )
    parser.add_argument("--ray", action="store_true", help="run the calls on an embedded local Ray")
    parser.add_argument("--address", metavar="ADDR", help="run on the Ray cluster at ADDR (implies --ray)")
    add_local_run_arguments(parser, "calls")
    parser.add_argument(
        "--resume", nargs="?", const=True, default=False, metavar="DIR",
        help="continue an interrupted load test (default: the latest one of these suites)",
    )  # fmt: skip
    parser.add_argument(
        "--output", metavar="DIR", help="where run directories go (default: tamesu.yaml output)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the load report as JSON to PATH")
    parser.add_argument(
        "--transcripts",
        choices=("all", "failed", "none"),
        default="all",
        help="which calls keep a transcript",
    )
    parser.add_argument(
        "--no-live", action="store_true", help="plain progress lines instead of the live table"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no live view; only the report")


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    spike = {
        k: v
        for k, v in (
            ("at", args.spike_at),
            ("duration", args.spike_duration),
            ("multiplier", args.spike_multiplier),
        )
        if v is not None
    }
    given = [
        (key, flag, value)
        for key, flag, value in (
            ("start", "--start-concurrency", args.start_concurrency),
            ("max_concurrency", "--max-concurrency", args.max_concurrency),
            ("max_duration", "--max-duration", args.max_duration),
            ("step_calls", "--step-calls", args.step_calls),
            ("step_seconds", "--step-seconds", args.step_seconds),
            ("cool_down", "--cool-down", args.cool_down),
        )
        if value is not None
    ]
    if given and not args.find_capacity:
        from tamesu.errors import UsageError

        raise UsageError(f"{given[0][1]} needs --find-capacity")
    capacity = {key: value for key, _, value in given}
    return {
        "capacity": capacity if args.find_capacity else None,
        "calls": args.calls,
        "duration": args.duration,
        "rate": args.rate,
        "concurrency": None if args.rate is not None else args.concurrency,
        "ramp_up": args.ramp_up,
        "shape": args.shape,
        "spike": spike or None,
        "arrivals": args.arrivals,
        "max_in_flight": args.max_in_flight,
        "window": args.window,
        "workers": args.workers,
        "gates": {
            "pass_rate": args.min_pass_rate,
            "error_rate": args.max_error_rate,
            "slo": dict(args.slo or []),
            "drift": args.max_drift,
            "cost_per_pass": args.max_cost_per_pass,
        },
    }


def _resume(value: object) -> bool | str:
    if isinstance(value, str):
        low = value.lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no", ""):
            return False
        return value
    return bool(value)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from tamesu.load.load_test import LoadRequest, run_load

    color = getattr(args, "use_color", False)
    request = LoadRequest(
        paths=list(args.paths),
        overrides=_overrides(args),
        tags=split_list(args.tags),
        exclude_tags=split_list(args.exclude_tags),
        filter=args.filter,
        timeout=args.timeout,
        seed=args.seed,
        ray=bool(args.ray or args.address),
        address=args.address,
        processes=args.processes,
        stt_engine=args.stt_engine,
        resume=_resume(args.resume),
        output=args.output,
        json=args.json,
        transcripts=args.transcripts,
        live=False if args.no_live else None,
        quiet=args.quiet,
        color=bool(color),
        argv=["tamesu", *sys.argv[1:]],
    )
    return asyncio.run(run_load(request)).exit_code
