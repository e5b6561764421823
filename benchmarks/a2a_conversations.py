"""How fast tamesu drives conversations with an A2A agent, beside the A2A SDK's own client and REST.

    python benchmarks/a2a_conversations.py                 # 300 three-turn conversations, concurrency 16

The A2A agent is ``tamesu.testing.serve_a2a_agent`` (the a2a-sdk's server classes, JSON-RPC,
answering each message with a completed task) in a process of its own, so its CPU time is not the
clients'. Three clients run the same scripted three-turn conversations, taking turns for
``--rounds`` rounds (each row is its median round):

- ``a2a-sdk``: the SDK's own client (one ``Client`` from the card, read once), sending the three
  messages of each conversation in one context, non-streaming: the ceiling tamesu is measured against;
- ``tamesu (a2a)``: ``tamesu.run_async`` on a suite whose a2a target talks to the same
  agent (each run reads the card, checks nothing else, and records a transcript file);
- ``tamesu (rest)``: the same harness on the REST benchmark's aiohttp agent
  (``benchmarks/conversations.py``), for the figure beside it.

The machine is shared with other work, so wall-clock rates move with the neighbours: CPU time per
conversation (``time.process_time``, every thread of the client) is the steady figure, and the
goal (tamesu at least half the SDK's rate) is stated on it: ``cpu_rate_vs_sdk`` is the SDK's CPU
per conversation over tamesu's. Figures go to stdout and benchmarks/results/a2a_conversations.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
RESULTS = HERE / "results" / "a2a_conversations.json"
TURNS = ("hello", "where is my order?", "thanks, bye")

SUITE = """
suite: bench-a2a
targets:
  agent: {{ type: a2a, url: "{url}" }}
tests:
  - name: three turns
    target: agent
    scenario:
      max_turns: 3
      script: [ {{ say: "{t1}" }}, {{ say: "{t2}" }}, {{ say: "{t3}" }} ]
    assert:
      - contains: "echo: thanks"
"""


def serve_agent() -> None:
    from tamesu.testing.a2a_agent import serve_a2a_agent

    async def main() -> None:
        async with serve_a2a_agent(grpc_transport=False) as agent:
            print(f"listening on {agent.url}", flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())


async def sdk(url: str, conversations: int, concurrency: int) -> dict[str, float]:
    """The SDK's client on its own: one client, the card read once, no transcript."""
    import httpx
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

    limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(conversations):
        queue.put_nowait(i)
    ok = 0
    async with httpx.AsyncClient(limits=limits, timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)

        async def converse() -> bool:
            context, last = "", None
            for text in TURNS:
                msg = Message(
                    role=Role.ROLE_USER,
                    message_id=uuid.uuid4().hex,
                    parts=[Part(text=text)],
                    context_id=context,
                )
                async for event in client.send_message(SendMessageRequest(message=msg)):
                    last = event
                assert last is not None
                context = last.task.context_id
            return last is not None and last.task.artifacts[0].parts[0].text == f"echo: {TURNS[-1]}"

        async def worker() -> None:
            nonlocal ok
            while True:
                try:
                    queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                answered = await converse()  # read ok after the await: the workers share it
                ok += answered

        await converse()  # warm up the connection
        cpu, start = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert ok == conversations, f"a2a-sdk client: {ok}/{conversations} conversations answered"
    return {"seconds": wall, "cpu_seconds": cpu}


async def harness(suite_text: str, conversations: int, concurrency: int, where: Path) -> dict[str, float]:
    """``tamesu.run`` of one test repeated ``conversations`` times, timed as the REST benchmark
    times it (from the first run started to the last run recorded)."""
    from conversations import with_tamesu

    return await with_tamesu("", conversations, concurrency, ray=False, where=where, suite_text=suite_text)


def figures(
    name: str, measured: dict[str, float], conversations: int, base: dict[str, float] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "client": name,
        "seconds": round(measured["seconds"], 3),
        "conversations_per_s": round(conversations / measured["seconds"], 1),
        "client_cpu_ms_per_conversation": round(measured["cpu_seconds"] * 1000 / conversations, 3),
    }
    if base is not None:
        out["rate_vs_sdk"] = round(base["seconds"] / measured["seconds"], 3)
        out["cpu_rate_vs_sdk"] = round(base["cpu_seconds"] / measured["cpu_seconds"], 3)
    return out


def median_of(rounds: list[dict[str, float]]) -> dict[str, float]:
    ordered = sorted(rounds, key=lambda r: r["cpu_seconds"])
    return ordered[len(ordered) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve-agent", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.serve_agent:
        serve_agent()
        return 0
    import conversations as rest

    a2a_agent, a2a_url = rest.start_agent(__file__)
    rest_agent, rest_url = rest.start_agent()
    runs = Path(
        tempfile.mkdtemp(prefix="tamesu-bench-a2a-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None)
    )
    n, c = args.conversations, args.concurrency
    a2a_suite = SUITE.format(url=a2a_url, t1=TURNS[0], t2=TURNS[1], t3=TURNS[2])
    rest_suite = rest.SUITE.format(url=rest_url, t1=TURNS[0], t2=TURNS[1], t3=TURNS[2])
    measured: dict[str, list[dict[str, float]]] = {"sdk": [], "a2a": [], "rest": []}
    try:
        for _ in range(args.rounds):
            measured["sdk"].append(asyncio.run(sdk(a2a_url, n, c)))
            measured["a2a"].append(asyncio.run(harness(a2a_suite, n, c, runs)))
            measured["rest"].append(asyncio.run(harness(rest_suite, n, c, runs)))
    finally:
        a2a_agent.kill()
        rest_agent.kill()
    base = median_of(measured["sdk"])
    rows = [
        figures("a2a-sdk client", base, n, None),
        figures("tamesu (a2a, jsonrpc)", median_of(measured["a2a"]), n, base),
        figures("tamesu (rest, aiohttp agent)", median_of(measured["rest"]), n, None),
    ]
    report = {
        "conversations": n,
        "turns_per_conversation": len(TURNS),
        "concurrency": c,
        "rounds": args.rounds,
        "cpu_rate_vs_sdk_by_round": [
            round(s["cpu_seconds"] / t["cpu_seconds"], 3) for s, t in zip(measured["sdk"], measured["a2a"])
        ],
        "rate_vs_sdk_by_round": [
            round(s["seconds"] / t["seconds"], 3) for s, t in zip(measured["sdk"], measured["a2a"])
        ],
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "results": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"{n} conversations x {len(TURNS)} turns, concurrency {c}, {os.cpu_count()} CPUs, load {report['load_average_1m']}"
    )
    for row in rows:
        vs = (
            f"  CPU {row['cpu_rate_vs_sdk']:.2f}x the SDK's rate, wall {row['rate_vs_sdk']:.2f}x"
            if "cpu_rate_vs_sdk" in row
            else ""
        )
        print(
            f"  {row['client']:<30} {row['conversations_per_s']:>8.1f} conversations/s"
            f"  {row['client_cpu_ms_per_conversation']:>7.3f} CPU ms/conversation{vs}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
