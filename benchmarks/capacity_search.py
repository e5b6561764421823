"""How close ``tamesu load --find-capacity`` comes to an agent's own capacity, and what it takes.

The agent (``tamesu.testing.serve_loaded_agent``) answers after ``base + per_call x requests in
flight``, so its capacity under ``turn_latency_ms_p95`` is known from its own figures. Each search
runs in-process with a realistic step rule (a three-turn test, steps of at least 30 calls and 3 s,
1 s cool-down) and is compared with that figure; the searches are repeated to show it holds on
every run. The driver's own CPU share per step is recorded beside each answer.

    python benchmarks/capacity_search.py [--runs 3] [--base-ms 50] [--per-call-ms 10] [--slo-ms 500]

Writes benchmarks/results/capacity_search.json.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from tamesu.load.load_test import LoadRequest, run_load
from tamesu.testing.loaded_agent import serve_loaded_agent

HERE = Path(__file__).resolve().parent

SUITE = """
suite: capacity-benchmark
defaults: { retries: 0, timeout: 30s }
targets:
  api: { type: rest, url: "URL/chat", connect: { attempts: 1 }, request: { body: { message: "{{message}}" } }, response: { text: $.reply } }
tests:
  - name: three turns
    target: api
    scenario: { script: [ { say: hello }, { say: "where is my order" }, { say: thanks } ] }
    assert: [ { contains: echo } ]
"""


async def one_search(args: argparse.Namespace, where: Path) -> dict[str, object]:
    async with serve_loaded_agent(base_ms=args.base_ms, per_call_ms=args.per_call_ms) as (url, agent):
        (where / "suite.yaml").write_text(SUITE.replace("URL", url))
        started = time.monotonic()
        result = await run_load(
            LoadRequest(
                paths=[str(where / "suite.yaml")],
                overrides={
                    "capacity": {
                        "max_concurrency": args.max_concurrency,
                        "step_calls": 30,
                        "step_seconds": "3s",
                        "cool_down": "1s",
                        "max_duration": "10m",
                    },
                    "gates": {"slo": {"turn_latency_ms_p95": args.slo_ms}},
                },
                output=str(where / "runs"),
                transcripts="none",
                quiet=True,
                stream=io.StringIO(),
            )
        )
        took = time.monotonic() - started
    capacity = result.report["capacity"]
    expected = agent.capacity(turn_latency_ms=args.slo_ms)
    found = capacity["concurrency"]
    return {
        "expected": expected,
        "found": found,
        "error_pct": None if found is None else round(100 * (found - expected) / expected, 1),
        "broke": capacity["broke"],
        "stopped": capacity["stopped"],
        "steps": len(capacity["levels"]),
        "calls": sum(lv["calls"] for lv in capacity["levels"]),
        "seconds": round(took, 1),
        "max_driver_cpu": max((lv["driver_cpu"] or 0.0) for lv in capacity["levels"]),
        "exit_code": result.exit_code,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base-ms", type=float, default=50.0)
    parser.add_argument("--per-call-ms", type=float, default=10.0)
    parser.add_argument("--slo-ms", type=float, default=500.0)
    parser.add_argument("--max-concurrency", type=int, default=128)
    args = parser.parse_args()
    runs = []
    for n in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            run = await one_search(args, Path(tmp))
        runs.append(run)
        print(f"run {n + 1}: {json.dumps(run)}", flush=True)
    worst = max(abs(r["error_pct"]) for r in runs if r["error_pct"] is not None) if runs else None  # type: ignore[arg-type]
    out = {
        "benchmark": "capacity_search",
        "agent": {"base_ms": args.base_ms, "per_call_ms": args.per_call_ms},
        "slo": {"turn_latency_ms_p95": args.slo_ms},
        "step_rule": {"step_calls": 30, "step_seconds": 3, "cool_down_s": 1},
        "runs": runs,
        "worst_error_pct": worst,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "system": platform.system()},
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "capacity_search.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"worst error {worst}% over {len(runs)} runs")


if __name__ == "__main__":
    asyncio.run(main())
