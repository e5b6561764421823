"""``tamesu load`` beside Locust, both driving the same three-turn REST calls at the same agent.

    python benchmarks/load_vs_locust.py --locust /path/to/venv/bin/locust   # 3 rounds of 20 s each
    python benchmarks/load_vs_locust.py --seconds 10 --rounds 5 --users 32
    python benchmarks/load_vs_locust.py --processes 2                         # both across 2 processes

Locust is not one of tamesu's dependencies (it pins gevent and Flask): install it in a virtual
environment of its own (``python -m venv /tmp/locust && /tmp/locust/bin/pip install locust``) and
name its ``locust`` here, or have it on PATH.

The agent is ``benchmarks/conversations.py``'s loopback aiohttp server, in its own process. Each
client is one process with ``--users`` calls in flight for ``--seconds`` (with ``--processes N``,
tamesu's driver and N worker processes, against Locust's ``--processes N``: N forked workers and
their master):

- ``tamesu load``: ``python -m tamesu load SUITE --duration S -j USERS --no-live -q
  --transcripts none``, the suite's one test a scripted three-turn call graded by ``contains``;
  calls per second are the load report's calls over its duration.
- Locust: ``FastHttpUser`` (geventhttpclient), each task one call of the same three POSTs with the
  same bodies, each response checked for the same words (``catch_response``); all users spawned in
  the first second; calls per second are its requests over three, over its run time.

The clients take turns for ``--rounds`` rounds, so a neighbour's burst of work hits both alike;
``ratio`` is tamesu's calls/s over Locust's in each round and the figure is their median. CPU
seconds per call (user + system of the client process and its children) is kept beside it, the
steadier figure on a shared machine. Writes benchmarks/results/load_vs_locust.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conversations import SUITE, TURNS, start_agent  # noqa: E402

RESULTS = HERE / "results" / "load_vs_locust.json"
"""Where one process each writes; ``--processes N`` writes load_vs_locust-pN.json beside it."""

LOCUSTFILE = f"""
import itertools

from locust import FastHttpUser, task

TURNS = {TURNS!r}
SESSIONS = itertools.count()


class Caller(FastHttpUser):
    @task
    def call(self):
        session = f"s{{next(SESSIONS)}}"
        for message in TURNS:
            with self.client.post(
                "/chat", json={{"session_id": session, "message": message}}, catch_response=True
            ) as response:
                if "you said" not in response.text:
                    response.failure("the reply does not say 'you said'")
"""


def timed(
    cmd: list[str], env: dict[str, str], cwd: Path
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, CPU seconds (the process and its children) and the finished process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def run_tamesu(url: str, seconds: float, users: int, folder: Path, processes: int = 1) -> dict[str, float]:
    suite = folder / "load.yaml"
    suite.write_text(SUITE.format(url=url, t1=TURNS[0], t2=TURNS[1], t3=TURNS[2]), encoding="utf-8")
    report = folder / "load-report.json"
    cmd = [
        sys.executable, "-m", "tamesu", "load", str(suite), "--duration", f"{round(seconds)}s", "-j", str(users),
        "--no-live", "-q", "--transcripts", "none", "--output", str(folder / "runs"), "--json", str(report),
        "--processes", str(processes),
    ]  # fmt: skip
    wall, cpu, proc = timed(cmd, dict(os.environ), folder)
    if proc.returncode != 0:
        raise SystemExit(
            f"tamesu load failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )
    data = json.loads(report.read_text(encoding="utf-8"))
    calls = int(data["totals"]["calls"])
    passed = int(data["totals"]["outcomes"].get("passed", 0))
    return {
        "calls": calls,
        "passed": passed,
        "seconds": round(float(data["duration_s"]), 3),
        "calls_per_s": round(calls / float(data["duration_s"]), 1),
        "process_wall_s": round(wall, 2),
        "cpu_ms_per_call": round(cpu / calls * 1000, 3),
    }


def run_locust(
    locust: str, url: str, seconds: float, users: int, folder: Path, processes: int = 1
) -> dict[str, float]:
    locustfile = folder / "locustfile.py"
    locustfile.write_text(LOCUSTFILE, encoding="utf-8")
    prefix = folder / "locust"
    cmd = [
        locust, "-f", str(locustfile), "--headless", "--host", url, "-u", str(users), "-r", str(users),
        "-t", f"{round(seconds)}s", "--csv", str(prefix), "--only-summary", "--loglevel", "WARNING",
    ]  # fmt: skip
    if processes > 1:
        cmd += ["--processes", str(processes)]
    wall, cpu, proc = timed(cmd, dict(os.environ), folder)
    if proc.returncode != 0:
        raise SystemExit(f"locust failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    with open(f"{prefix}_stats.csv", encoding="utf-8") as f:
        total = next(row for row in csv.DictReader(f) if row["Name"] == "Aggregated")
    requests, failures = int(total["Request Count"]), int(total["Failure Count"])
    calls = requests // len(TURNS)
    return {
        "calls": calls,
        "failed_requests": failures,
        "seconds": seconds,
        "calls_per_s": round(calls / seconds, 1),
        "process_wall_s": round(wall, 2),
        "cpu_ms_per_call": round(cpu / calls * 1000, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locust", default=shutil.which("locust"), help="the locust executable")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--users", type=int, default=32, help="calls in flight")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="client processes of each (tamesu load and Locust --processes)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = (
            RESULTS if args.processes == 1 else RESULTS.with_name(f"load_vs_locust-p{args.processes}.json")
        )
    if not args.locust:
        raise SystemExit("locust is not on PATH: install it in a venv of its own and give --locust")
    agent, url = start_agent(str(HERE / "conversations.py"))
    rounds: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.rounds):
                folder = Path(tmp) / f"round{i}"
                folder.mkdir()
                order = ("tamesu", "locust") if i % 2 == 0 else ("locust", "tamesu")
                row: dict[str, Any] = {}
                for client in order:
                    row[client] = (
                        run_tamesu(url, args.seconds, args.users, folder, args.processes)
                        if client == "tamesu"
                        else run_locust(args.locust, url, args.seconds, args.users, folder, args.processes)
                    )
                row["ratio"] = round(row["tamesu"]["calls_per_s"] / row["locust"]["calls_per_s"], 3)
                row["cpu_ratio"] = round(
                    row["locust"]["cpu_ms_per_call"] / row["tamesu"]["cpu_ms_per_call"], 3
                )
                print(json.dumps({"round": i + 1, **row}), flush=True)
                rounds.append(row)
    finally:
        agent.kill()
    result = {
        "benchmark": "load_vs_locust",
        "method": "alternated rounds, medians; see the script's docstring",
        "processes": args.processes,
        "seconds": args.seconds,
        "users": args.users,
        "rounds": rounds,
        "ratio": statistics.median(r["ratio"] for r in rounds),
        "cpu_ratio": statistics.median(r["cpu_ratio"] for r in rounds),
        "locust": subprocess.run([args.locust, "--version"], capture_output=True, text=True).stdout.strip(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        f"tamesu load / Locust calls per second: {result['ratio']} (CPU per call: {result['cpu_ratio']}); {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
