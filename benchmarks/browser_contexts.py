"""What a browser run costs on the shared Chromium: contexts per second and memory per context.

    python benchmarks/browser_contexts.py                  # 3 rounds of 20 runs, 10 held open
    python benchmarks/browser_contexts.py --runs 100 --concurrency 4 --hold 20

A run of a ``browser`` target opens a context in the process's one Chromium, puts the gate on it,
opens a page and loads ``url``; closing the run closes the context. This drives exactly that
(``BrowserTarget.start`` and ``stop``, no recording, no steps) against tamesu.testing.web_shop on
loopback, one run after another and ``--concurrency`` at a time; ``bare sequential`` does the
same with a plain Playwright context and page (no gate, no tamesu), so the difference is tamesu's.

- **Contexts per second**: runs started and closed per wall second, median of ``--rounds``.
- **CPU per context**: CPU seconds of every process involved per run, split into this Python
  process (which also serves the page), the Playwright driver and Chromium (exited renderers count
  through the parent that reaped them). The machine is shared with other jobs, so wall rates move with the
  neighbours' load; CPU time is the steadier figure.
- **Memory per context**: ``--hold`` runs kept open at once; the growth of the Chromium processes'
  resident memory (RSS, which counts shared pages once per process, and PSS, which shares them out)
  over the browser with no context, divided by ``--hold``.

Figures go to benchmarks/results/browser_contexts.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "browser_contexts.json"
TICKS = os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> list[int]:
    """Every live process below ``root``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def process_cpu(pid: int) -> float:
    """CPU seconds of the process and of its children it has reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / TICKS


def chromium(pid: int) -> bool:
    try:
        return "chrom" in Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return False


def tree_cpu() -> dict[str, float]:
    """CPU seconds of this process, the Playwright driver and the Chromium processes below it."""
    total = {"python": time.process_time(), "driver": 0.0, "chromium": 0.0}
    for pid in descendants(os.getpid()):
        try:
            total["chromium" if chromium(pid) else "driver"] += process_cpu(pid)
        except OSError:
            continue
    return total


def chromium_memory() -> dict[str, float]:
    """RSS and PSS of the Chromium processes, in MiB."""
    rss = pss = 0
    count = 0
    for pid in descendants(os.getpid()):
        if not chromium(pid):
            continue
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
        count += 1
    return {"processes": count, "rss_mib": round(rss / 1024, 1), "pss_mib": round(pss / 1024, 1)}


class Runs:
    """Browser target runs against one URL, built the way the runner builds them."""

    def __init__(self, url: str) -> None:
        from tamesu.config.target import Target
        from tamesu.http import make_client

        self.config = Target.model_validate({"type": "browser", "url": url, "browser": {"recording": "off"}})
        self.http = make_client()
        self.made = 0

    def adapter(self) -> Any:
        from tamesu.clock import MonotonicClock
        from tamesu.limits import DEFAULT_LIMITS
        from tamesu.secrets import Redactor
        from tamesu.targets.base import TargetContext
        from tamesu.targets.browser.adapter import BrowserTarget
        from tamesu.templates import Scope

        self.made += 1
        ctx = TargetContext(
            name="web",
            run_id=f"run-{self.made}",
            session=f"sess-{self.made}",
            scope=Scope({}),
            clock=MonotonicClock(),
            http=self.http,
            redactor=Redactor(),
            turn_timeout=30.0,
            limits=DEFAULT_LIMITS,
        )
        return BrowserTarget(self.config, ctx)

    async def one(self) -> None:
        adapter = self.adapter()
        try:
            await adapter.start()
        finally:
            await adapter.stop()

    async def bare(self) -> None:
        """The same page in a plain Playwright context: what Chromium costs without tamesu."""
        from tamesu.targets.browser.browser_session import shared_browser

        context = await (await shared_browser()).new_context()
        try:
            await (await context.new_page()).goto(self.config.url or "")
        finally:
            await context.close()

    async def many(self, runs: int, concurrency: int, *, bare: bool = False) -> dict[str, float]:
        left = iter(range(runs))

        async def lane() -> None:
            for _ in left:
                await (self.bare() if bare else self.one())

        before, wall = tree_cpu(), time.perf_counter()
        await asyncio.gather(*(lane() for _ in range(concurrency)))
        wall, after = time.perf_counter() - wall, tree_cpu()
        cpu = {key: (after[key] - before[key]) / runs * 1000 for key in after}
        return {"seconds": round(wall, 3), "contexts_per_s": round(runs / wall, 2),
                "cpu_ms_per_context": round(sum(cpu.values()), 1),
                **{f"cpu_ms_{key}": round(value, 1) for key, value in cpu.items()}}  # fmt: skip


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    from tamesu.targets.browser.browser_session import close_shared_browsers, shared_browser
    from tamesu.testing.web_shop import serve_web_shop

    async with serve_web_shop() as url:
        runs = Runs(url)
        started = time.perf_counter()
        await shared_browser()
        launch = time.perf_counter() - started
        await runs.many(5, 1)
        together = f"concurrency {args.concurrency}"
        rows: dict[str, list[dict[str, float]]] = {"sequential": [], together: [], "bare sequential": []}
        for _ in range(args.rounds):
            rows["sequential"].append(await runs.many(args.runs, 1))
            rows[together].append(await runs.many(args.runs, args.concurrency))
            rows["bare sequential"].append(await runs.many(args.runs, 1, bare=True))
        idle = chromium_memory()
        held = [runs.adapter() for _ in range(args.hold)]
        for adapter in held:
            await adapter.start()
        full = chromium_memory()
        for adapter in held:
            await adapter.stop()
        await runs.http.aclose()
        await close_shared_browsers()
    medians = {
        name: {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        for name, rounds in rows.items()
    }
    return {
        "runs_per_round": args.runs,
        "rounds": args.rounds,
        "measure": "medians of the rounds; the machine is shared, so wall rates move with the neighbours' "
        "load and CPU time (this process, the Playwright driver and every Chromium process) is the steadier figure",
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "browser_launch_s": round(launch, 2),
        "rates": medians,
        "rounds_measured": rows,
        "memory": {
            "held_contexts": args.hold,
            "no_context": idle,
            "with_contexts": full,
            "rss_mib_per_context": round((full["rss_mib"] - idle["rss_mib"]) / args.hold, 1),
            "pss_mib_per_context": round((full["pss_mib"] - idle["pss_mib"]) / args.hold, 1),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--hold", type=int, default=10, help="contexts held open for the memory figure")
    args = parser.parse_args()
    figures = asyncio.run(measure(args))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    for name, row in figures["rates"].items():
        print(
            f"{name:>15}: {row['contexts_per_s']:6.1f} contexts/s, {row['cpu_ms_per_context']:6.1f} ms CPU each "
            f"(Python {row['cpu_ms_python']}, driver {row['cpu_ms_driver']}, Chromium {row['cpu_ms_chromium']})"
        )
    memory = figures["memory"]
    print(
        f"memory per context ({memory['held_contexts']} held): {memory['rss_mib_per_context']} MiB RSS, "
        f"{memory['pss_mib_per_context']} MiB PSS (Chromium with none: {memory['no_context']['rss_mib']} MiB RSS "
        f"in {memory['no_context']['processes']} processes)"
    )
    print(f"load average {figures['load_average_1m']} on {figures['cpus']} CPUs; written to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
