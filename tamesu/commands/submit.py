"""``tamesu submit``: run suites on a Ray cluster as a Ray Job, follow it, and fetch the results.

The suites are validated here first (a config error costs no cluster time); the folder holding
them (the project, or ``--working-dir``) is uploaded as the job's working_dir; ``--options`` are
passed to the remote ``tamesu run`` (or ``tamesu load`` with ``--load``). The exit code is the
remote command's, so CI can gate on a cluster run as on a local one.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from tamesu.commands import positive_number
from tamesu.untrusted import printable

__all__ = ["add_arguments", "fetch_results", "follow_job", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="suite files or folders (default: .)")
    parser.add_argument(
        "--address",
        metavar="URL",
        default=os.environ.get("RAY_API_SERVER_ADDRESS") or None,
        help="the cluster's dashboard, e.g. http://HEAD:8265 (also TAMESU_ADDRESS)",
    )
    parser.add_argument(
        "--load", action="store_true", help="run tamesu load on the cluster instead of tamesu run"
    )
    parser.add_argument(
        "--options",
        default="",
        metavar="'OPTIONS'",
        help="options for the remote command, quoted: --options '--tags smoke -j 16'",
    )
    parser.add_argument(
        "--working-dir", metavar="DIR", help="folder to upload (default: the project or the suites' folder)"
    )
    parser.add_argument(
        "--output", metavar="DIR", help="where fetched run directories go (default: tamesu.yaml output)"
    )
    parser.add_argument("--job-id", metavar="ID", help="the submission id (default: tamesu-TIME-RANDOM)")
    parser.add_argument(
        "--python", default="python", metavar="EXE", help="python on the cluster (default: python)"
    )
    parser.add_argument(
        "--entrypoint-num-cpus", type=positive_number, metavar="N", help="CPUs reserved for the job's driver"
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help="the cluster's auth token (default: RAY_AUTH_TOKEN or ~/.ray/auth_token)",
    )
    parser.add_argument(
        "--no-wait", action="store_true", help="submit and return; follow later with tamesu jobs"
    )
    parser.add_argument("--no-fetch", action="store_true", help="do not download results and recordings")


def _working_dir(paths: list[Path], given: str | None) -> Path:
    from tamesu.config.loader import load_project
    from tamesu.errors import UsageError

    if given:
        root = Path(given).resolve()
    else:
        found = load_project(paths[0] if paths[0].is_dir() else paths[0].parent)
        root = (
            found[1].resolve()
            if found
            else Path(os.path.commonpath([p if p.is_dir() else p.parent for p in paths]))
        )
    for p in paths:
        if root != p and root not in p.parents:
            raise UsageError(f"{p} is not inside the working directory {root} (set --working-dir)")
    return root


def follow_job(jobs: Any, job_id: str, *, stream: Any = None) -> str:
    """Print the job's log (without the artifact lines) as it comes; returns the final status."""
    import asyncio

    from tamesu.load.jobs import ARTIFACT

    out = stream or sys.stdout

    async def tail() -> None:
        pending = ""
        async for chunk in jobs.follow(job_id):
            pending += chunk
            *lines, pending = pending.split("\n")
            for line in lines:
                if not line.startswith(ARTIFACT):
                    out.write(printable(line) + "\n")
            out.flush()
        if pending and not pending.startswith(ARTIFACT):
            out.write(printable(pending) + "\n")

    asyncio.run(tail())
    return str(jobs.wait(job_id, timeout=60.0))


def fetch_results(
    jobs: Any, job_id: str, output: Path, *, stream: Any = None
) -> tuple[list[Path], int | None]:
    """Download the job's run directories into ``output``; returns them and the remote exit code."""
    from tamesu.load.jobs import exit_code_of, unpack_artifacts
    from tamesu.runner.results import ResultsStore

    log = jobs.logs(job_id)
    written = [p for p in unpack_artifacts(log, output) if p.is_dir()]
    if written:
        ResultsStore(max(written, key=lambda p: p.name)).mark_latest()
    out = stream or sys.stdout
    for path in written:
        out.write(f"fetched {path}\n")
    return written, exit_code_of(log)


def run(args: argparse.Namespace) -> int:
    from tamesu.commands import EXIT_CONFIG, EXIT_INFRA, print_config_errors
    from tamesu.config.loader import validate_paths
    from tamesu.environment import MACHINE_CHECKS
    from tamesu.errors import UsageError
    from tamesu.load.jobs import RayJobs
    from tamesu.runner.results import output_dir

    if not args.address:
        raise UsageError("tamesu submit needs --address http://HEAD:8265 (or TAMESU_ADDRESS)")
    paths = [Path(p).resolve() for p in (args.paths or ["."])]
    report = validate_paths(paths, checks=MACHINE_CHECKS)
    if report.errors:
        print_config_errors(report.errors, color=bool(getattr(args, "use_color", False)), stream=sys.stderr)
        return EXIT_CONFIG
    root = _working_dir(paths, args.working_dir)
    remote = [str(p.relative_to(root)) if p != root else "." for p in paths]
    options = shlex.split(args.options or "")
    project = next((s.project for s in report.suites if s.project is not None), None)
    output = output_dir(args.output or getattr(project, "output", None), root)
    jobs = RayJobs(args.address, token=args.token)
    excludes = []
    if root in output.resolve().parents:
        excludes.append(str(output.resolve().relative_to(root)))
    job_id = jobs.submit(
        kind="load" if args.load else "run",
        args=[*remote, *options],
        working_dir=root,
        suites=[s.suite.suite for s in report.suites],
        excludes=excludes,
        python=args.python,
        submission_id=args.job_id,
        num_cpus=args.entrypoint_num_cpus,
    )
    print(f"submitted {job_id} to {jobs.address} (working dir {root})", flush=True)
    if args.no_wait:
        print(f"follow it with: tamesu jobs logs {job_id} --follow --address {args.address}")
        return 0
    status = follow_job(jobs, job_id)
    code = None
    if not args.no_fetch:
        try:
            _, code = fetch_results(jobs, job_id, output)
        except ValueError as exc:
            print(f"tamesu: could not fetch the results: {exc}", file=sys.stderr)
    else:
        from tamesu.load.jobs import exit_code_of

        code = exit_code_of(jobs.logs(job_id))
    print(f"job {job_id}: {status}")
    return code if code is not None else EXIT_INFRA
