"""How fast tamesu drives conversations, beside a bare aiohttp client doing the same requests.

    python benchmarks/conversations.py                   # 3000 three-turn conversations, concurrency 32
    python benchmarks/conversations.py --no-ray --profile

The agent is a loopback aiohttp server that answers at once (its own process, so its CPU time is
not the client's). These clients run the same 3000 scripted conversations of three turns:

- ``bare``: one aiohttp ClientSession posting the three messages of each conversation in turn;
- ``tamesu``: ``tamesu.run_async`` (plan, scheduler, local placement, run graph,
  assertions, results store: transcripts appended to the run's transcript log and results
  fsync'd in batches as runs finish); ``store_cpu_ms_per_turn`` is the results writer's share of
  its CPU time;
- ``tamesu (local, run dir on tmpfs)``: the same with the run directory in /dev/shm, to tell the
  client's own cost from the disk's (tmpfs makes fsync free: this row is not the durable one);
- ``tamesu_ray``: the same on an embedded local Ray, unless ``--no-ray`` (its CPU figure is
  the driver's alone: the conversations run in the Ray workers' processes);
- whole processes, start to exit: ``python -m tamesu run suite.yaml --repeat N -j C`` (Python's
  start, imports, loading, the runs, the console summary, summary.json and the history record)
  beside a process that starts Python, imports aiohttp and runs the bare client;
- ``tamesu run, N cases``: the same whole process on a suite whose one test reads N distinct cases
  from a ``cases_file`` (each case's vars in its script), so N tests of one run each instead of one
  test of N repeats; ``cases_vs_repeat`` is its rate against the ``--repeat`` run of its round.

The clients take turns for ``--rounds`` rounds (a neighbour's burst of work then hits each alike)
and each row is its median round; ``rate_vs_bare`` is the median of the rounds' rates, each against
the bare client of its own round (``rate_vs_bare_of_medians`` divides the median rounds). Run
directories are kept until the end: deleting them between measurements makes the next one pay for
the filesystem's discards.

CPU time per turn (``time.process_time``, every thread of the client) is the steadier figure on a
shared machine; the rate goal follows from it.

Figures go to stdout and to benchmarks/results/conversations.json. ``--profile`` runs the tamesu
client under cProfile and prints where the time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "conversations.json"
TURNS = ("hello", "where is my order?", "thanks, bye")

SUITE = """
suite: bench
targets:
  api:
    type: rest
    url: "{url}/chat"
    request: {{ body: {{ session_id: "{{{{session}}}}", message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
tests:
  - name: three turns
    target: api
    scenario:
      max_turns: 3
      script: [ {{ say: "{t1}" }}, {{ say: "{t2}" }}, {{ say: "{t3}" }} ]
    assert:
      - contains: "you said"
"""


def serve_agent() -> None:
    """The agent: answers every POST at once with ``{"reply": "you said ..."}``."""
    from aiohttp import web

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response(
            {"reply": f"you said {body.get('message', '')}", "session_id": body.get("session_id")}
        )

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/chat", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
        print(f"listening on http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
        await asyncio.Event().wait()

    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main())


def start_agent(script: str = __file__, *options: str) -> tuple[subprocess.Popen[str], str]:
    """``script --serve-agent [options]`` in a process of its own, and the URL its first line names."""
    proc = subprocess.Popen(
        [sys.executable, script, "--serve-agent", *options], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"the benchmark agent did not start: {line!r}")
    return proc, line.removeprefix("listening on ")


async def bare(url: str, conversations: int, concurrency: int) -> dict[str, float]:
    """The same requests with nothing around them: the ceiling tamesu is measured against."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=concurrency * 2)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(conversations):
        queue.put_nowait(i)
    ok = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal ok
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            replies = []
            for text in TURNS:
                async with session.post(f"{url}/chat", json={"session_id": f"s{i}", "message": text}) as resp:
                    replies.append((await resp.json())["reply"])
            ok += all("you said" in r for r in replies)

    async with aiohttp.ClientSession(connector=connector) as session:
        await worker_warmup(session, url)
        cpu, start = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert ok == conversations, f"bare client: {ok}/{conversations} conversations answered"
    return {"seconds": wall, "cpu_seconds": cpu}


def whole_process(command: list[str], cwd: Path | None = None) -> dict[str, float]:
    """``command`` from its start to its exit: wall seconds and the CPU seconds of the process."""
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = os.times()
    if proc.returncode != 0:
        raise SystemExit(f"{command[:4]} exited {proc.returncode}: {proc.stdout[-800:]}{proc.stderr[-800:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"seconds": wall, "cpu_seconds": cpu}


def bare_process(url: str, conversations: int, concurrency: int) -> dict[str, float]:
    """The bare client as a whole process (this script with ``--bare-process``)."""
    command = [sys.executable, __file__, "--bare-process", url, "--conversations", str(conversations)]
    return whole_process([*command, "--concurrency", str(concurrency)])


CASES_SUITE = SUITE.replace("    scenario:", "    cases_file: cases.csv\n    scenario:").replace(
    '{{ say: "{t1}" }}, {{ say: "{t2}" }}',
    '{{ say: "{t1} {{{{vars.who}}}}" }}, {{ say: "{t2} {{{{vars.order}}}}" }}',
)


def cli_process(
    url: str, conversations: int, concurrency: int, where: Path, *, cases: bool = False
) -> dict[str, float]:
    """``tamesu run`` as a user types it, in a folder of its own under ``where``: one test repeated
    ``conversations`` times, or with ``cases`` one test of that many cases from a cases_file."""
    folder = Path(tempfile.mkdtemp(dir=where))
    suite = CASES_SUITE if cases else SUITE
    (folder / "bench.yaml").write_text(suite.format(url=url, t1=TURNS[0], t2=TURNS[1], t3=TURNS[2]))
    command = [sys.executable, "-m", "tamesu", "run", "bench.yaml"]
    if cases:
        rows = "".join(f"case {i},user{i},ORD-{i}\n" for i in range(conversations))
        (folder / "cases.csv").write_text("name,who,order\n" + rows)
    else:
        command += ["--repeat", str(conversations)]
    measured = whole_process([*command, "-j", str(concurrency), "--output", "runs"], cwd=folder)
    [run_dir] = [p for p in (folder / "runs").iterdir() if p.is_dir() and not p.is_symlink()]
    lines = len((run_dir / "results.jsonl").read_bytes().splitlines())
    if lines != conversations:
        raise SystemExit(f"tamesu run recorded {lines} of {conversations} runs")
    return measured


async def worker_warmup(session: Any, url: str) -> None:
    async with session.post(f"{url}/chat", json={"message": "warm up"}) as resp:
        await resp.read()


async def with_tamesu(
    url: str,
    conversations: int,
    concurrency: int,
    *,
    ray: bool,
    where: Path | None = None,
    suite_text: str | None = None,
) -> dict[str, float]:
    """``tamesu.run`` on a suite of one test repeated ``conversations`` times; timed from the first
    run started to the last run recorded (loading, Ray start-up and reports are left out).

    The run directory goes under ``where`` (kept: deleting thousands of files makes the next
    measurement pay for the filesystem's discards), else a temporary directory. ``suite_text``
    replaces the REST suite (another benchmark's target, such as a2a)."""
    from tamesu import run_async
    from tamesu.runner.invocation import Reporter

    class Clock(Reporter):
        start = end = 0.0
        cpu = cpu_end = 0.0
        total = seen = 0

        def started(self, total: int) -> None:
            self.total = total
            self.start, self.cpu = time.perf_counter(), time.process_time()

        def run_finished(self, result: Any) -> None:
            # process_time is a system call: read it once, when the last run is recorded
            self.seen += 1
            self.end = time.perf_counter()
            if self.seen >= self.total:
                self.cpu_end = time.process_time()

    from tamesu.runner.results import ResultWriter

    store_cpu = ResultWriter.cpu_seconds
    with contextlib.ExitStack() as stack:
        if where is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
        else:
            tmp = tempfile.mkdtemp(dir=where)
        suite = Path(tmp) / "bench.yaml"
        suite.write_text(suite_text or SUITE.format(url=url, t1=TURNS[0], t2=TURNS[1], t3=TURNS[2]))
        clock = Clock()
        result = await run_async(
            [suite], reporter=clock, argv=["bench"], repeat=conversations, concurrency=concurrency,
            ray=ray, output=Path(tmp) / "runs",
        )  # fmt: skip
        lines = len((result.run_dir / "results.jsonl").read_text().splitlines())  # type: ignore[operator]
    passed = sum(1 for r in result.results if r.outcome == "passed")
    if passed != conversations or lines != conversations:
        errors = {r.error for r in result.results if r.error}
        raise SystemExit(
            f"tamesu: {passed}/{conversations} passed, {lines} results recorded; errors: {errors}"
        )
    return {
        "seconds": clock.end - clock.start,
        "cpu_seconds": clock.cpu_end - clock.cpu,
        "store_cpu_seconds": ResultWriter.cpu_seconds - store_cpu,
    }


def figures(
    name: str, measured: dict[str, float], conversations: int, base: dict[str, float] | None
) -> dict[str, Any]:
    turns = conversations * len(TURNS)
    out: dict[str, Any] = {
        "client": name,
        "seconds": round(measured["seconds"], 3),
        "conversations_per_s": round(conversations / measured["seconds"], 1),
        "turns_per_s": round(turns / measured["seconds"], 1),
        "wall_ms_per_turn": round(measured["seconds"] * 1000 / turns, 3),
        "client_cpu_ms_per_turn": round(measured["cpu_seconds"] * 1000 / turns, 3),
    }
    if "store_cpu_seconds" in measured:
        # the results writer's share (the transcript log and fsyncs); on Ray it runs in the driver
        out["store_cpu_ms_per_turn"] = round(measured["store_cpu_seconds"] * 1000 / turns, 3)
    if base is not None:
        out["overhead_ms_per_turn"] = round((measured["seconds"] - base["seconds"]) * 1000 / turns, 3)
        out["overhead_cpu_ms_per_turn"] = round(
            (measured["cpu_seconds"] - base["cpu_seconds"]) * 1000 / turns, 3
        )
        out["rate_vs_bare"] = round(base["seconds"] / measured["seconds"], 3)
    return out


def median_of(rounds: list[dict[str, float]]) -> dict[str, float]:
    """The round with the median wall time (its CPU figures stay its own)."""
    ordered = sorted(rounds, key=lambda r: r["seconds"])
    return ordered[len(ordered) // 2]


def profile(url: str, conversations: int, concurrency: int, top: int = 30) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    asyncio.run(with_tamesu(url, conversations, concurrency, ray=False))
    prof.disable()
    out = Path(tempfile.gettempdir()) / "tamesu-conversations.prof"
    prof.dump_stats(out)
    print(f"\ncProfile of the tamesu client ({out}), by own time:")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5, help="measurements of each client, alternated")
    parser.add_argument(
        "--runs-dir", type=Path, default=HERE, help="where run directories go (default: beside this script)"
    )
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray measurement")
    parser.add_argument("--profile", action="store_true", help="profile the tamesu client with cProfile")
    parser.add_argument("--serve-agent", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bare-process", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.serve_agent:
        serve_agent()
        return 0
    if args.bare_process:
        asyncio.run(bare(args.bare_process, args.conversations, args.concurrency))
        return 0

    if args.runs_dir is not None:
        Path(args.runs_dir).mkdir(parents=True, exist_ok=True)
    disk = Path(tempfile.mkdtemp(prefix="tamesu-bench-", dir=args.runs_dir))
    agent, url = start_agent()
    shm = Path("/dev/shm")
    tmpfs = Path(tempfile.mkdtemp(prefix="tamesu-bench-", dir=shm)) if shm.is_dir() else None
    try:
        n, c = args.conversations, args.concurrency
        # rounds alternate the clients, so a neighbour's burst of work hits each of them alike
        measured: dict[str, list[dict[str, float]]] = {
            "bare": [], "disk": [], "tmpfs": [], "bare_process": [], "cli": [], "cases": []
        }  # fmt: skip
        for _ in range(args.rounds):
            measured["bare"].append(asyncio.run(bare(url, n, c)))
            measured["disk"].append(asyncio.run(with_tamesu(url, n, c, ray=False, where=disk)))
            if tmpfs is not None:
                measured["tmpfs"].append(asyncio.run(with_tamesu(url, n, c, ray=False, where=tmpfs)))
            measured["bare_process"].append(bare_process(url, n, c))
            measured["cli"].append(cli_process(url, n, c, disk))
            measured["cases"].append(cli_process(url, n, c, disk, cases=True))
        base = median_of(measured["bare"])
        rows = [figures("bare aiohttp", base, n, None)]
        rows.append(figures("tamesu (local)", median_of(measured["disk"]), n, base))
        if measured["tmpfs"]:
            rows.append(figures("tamesu (local, run dir on tmpfs)", median_of(measured["tmpfs"]), n, base))
        whole = median_of(measured["bare_process"])
        rows.append(figures("bare aiohttp (whole process)", whole, n, None))
        rows.append(figures("tamesu run (whole process)", median_of(measured["cli"]), n, whole))
        rows.append(figures(f"tamesu run, {n} cases (whole process)", median_of(measured["cases"]), n, whole))
        ratios = {
            name: [round(b["seconds"] / t["seconds"], 3) for b, t in zip(measured[base_of], rounds)]
            for name, base_of, rounds in (
                ("local", "bare", measured["disk"]),
                ("tmpfs", "bare", measured["tmpfs"]),
                ("whole process", "bare_process", measured["cli"]),
                ("cases, whole process", "bare_process", measured["cases"]),
                ("cases vs repeat", "cli", measured["cases"]),
            )
            if rounds
        }
        # the rate of each round against the bare client of the same round: the machine's speed
        # drifts between rounds and moves both alike, so the paired ratio is the steadier figure
        paired = {"tamesu (local)": "local", "tamesu (local, run dir on tmpfs)": "tmpfs"}
        paired["tamesu run (whole process)"] = "whole process"
        paired[f"tamesu run, {n} cases (whole process)"] = "cases, whole process"
        for row in rows:
            name = paired.get(row["client"])
            if name in ratios:
                row["rate_vs_bare_of_medians"] = row["rate_vs_bare"]
                row["rate_vs_bare"] = round(statistics.median(ratios[name]), 3)
        if not args.no_ray:
            try:
                ray_run = asyncio.run(with_tamesu(url, n, c, ray=True, where=disk))
                rows.append(figures("tamesu (ray)", ray_run, n, base))
            except ImportError as exc:
                print(f"ray skipped: {exc}", file=sys.stderr)
        report = {
            "conversations": n,
            "turns_per_conversation": len(TURNS),
            "concurrency": c,
            "rounds": args.rounds,
            "rate_vs_bare_by_round": ratios,
            "cases_vs_repeat": statistics.median(ratios["cases vs repeat"]) if measured["cases"] else None,
            # CPU time is the steadier figure on a shared machine: the repeat run's CPU over the cases run's
            "cases_vs_repeat_cpu_by_round": [
                round(r["cpu_seconds"] / k["cpu_seconds"], 3)
                for r, k in zip(measured["cli"], measured["cases"])
            ],
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "results": rows,
        }
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n")
        print(f"{n} conversations x {len(TURNS)} turns, concurrency {c}, {os.cpu_count()} CPUs")
        for row in rows:
            extra = (
                f"  {row['rate_vs_bare']:.2f}x bare, +{row['overhead_ms_per_turn']:.2f} ms/turn"
                if "rate_vs_bare" in row
                else ""
            )
            print(f"  {row['client']:<32} {row['conversations_per_s']:>8.1f} conversations/s{extra}")
        print(f"  rate vs bare by round: {ratios}")
        print(f"written to {args.output}")
        if args.profile:
            profile(url, n, c)
    finally:
        agent.terminate()
        agent.wait()
        for path in (disk, tmpfs):
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
