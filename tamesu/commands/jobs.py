"""``tamesu jobs``: the runs submitted to a Ray cluster: list them, follow their logs, fetch, stop.

tamesu jobs [list] [--all]          the cluster's tamesu jobs, newest first
tamesu jobs logs JOB [--follow]     the job's log (the results it carries are left out)
tamesu jobs fetch JOB               download a finished job's run directories
tamesu jobs stop JOB                stop a running job (its results so far stay in its log)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from tamesu.untrusted import printable

__all__ = ["add_arguments", "run"]

ACTIONS = ("list", "logs", "fetch", "stop")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", nargs="?", choices=ACTIONS, default="list", help="what to do (default: list)"
    )
    parser.add_argument("job", nargs="?", metavar="JOB", help="the job id (logs, fetch, stop)")
    parser.add_argument(
        "--address",
        metavar="URL",
        default=os.environ.get("RAY_API_SERVER_ADDRESS") or None,
        help="the cluster's dashboard, e.g. http://HEAD:8265 (also TAMESU_ADDRESS)",
    )
    parser.add_argument("--all", action="store_true", help="list every job of the cluster, not only tamesu's")
    parser.add_argument("-f", "--follow", action="store_true", help="logs: keep printing until the job ends")
    parser.add_argument(
        "--output", metavar="DIR", help="fetch: where run directories go (default: ./tamesu-runs)"
    )
    parser.add_argument("--token", metavar="TOKEN", help="the cluster's auth token (default: RAY_AUTH_TOKEN)")


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    from tamesu.durations import format_duration

    return format_duration(round(seconds))


def run(args: argparse.Namespace) -> int:
    from tamesu.commands import EXIT_INFRA
    from tamesu.errors import UsageError
    from tamesu.load.jobs import RayJobs, exit_code_of, visible
    from tamesu.untrusted import table

    from .submit import fetch_results, follow_job

    if not args.address:
        raise UsageError("tamesu jobs needs --address http://HEAD:8265 (or TAMESU_ADDRESS)")
    if args.action != "list" and not args.job:
        raise UsageError(f"tamesu jobs {args.action} needs a job id (tamesu jobs lists them)")
    jobs = RayJobs(args.address, token=args.token)
    color = bool(getattr(args, "use_color", False))
    if args.action == "list":
        rows = [
            [
                r.id,
                r.status,
                r.kind,
                r.suites,
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else "-",
                _age(r.duration),
            ]
            for r in jobs.list(every=args.all)
        ]
        if not rows:
            print("no jobs")
            return 0
        print(table(rows, header=["job", "status", "kind", "suites", "started", "took"], color=color))
        return 0
    if args.action == "logs":
        if args.follow:
            follow_job(jobs, args.job)
        else:
            sys.stdout.write(printable(visible(jobs.logs(args.job))))
        return 0
    if args.action == "stop":
        stopped = jobs.stop(args.job)
        status = jobs.wait(args.job, timeout=30.0)
        print(f"job {args.job}: {status}" + ("" if stopped else " (it was not running)"))
        return 0
    status = jobs.status(args.job)
    if status not in ("SUCCEEDED", "FAILED", "STOPPED"):
        raise UsageError(f"job {args.job} is {status}: fetch it once it has ended")
    try:
        written, code = fetch_results(jobs, args.job, Path(args.output or "tamesu-runs"))
    except ValueError as exc:
        print(f"tamesu: {exc}", file=sys.stderr)
        return EXIT_INFRA
    if not written:
        print(f"job {args.job} carried no results (exit {exit_code_of(jobs.logs(args.job))})")
    return 0 if code is not None else EXIT_INFRA
