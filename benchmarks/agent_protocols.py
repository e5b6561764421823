"""How fast tamesu drives grpc and mcp targets, beside the SDKs' own clients driving the same peers
and beside the rest figure.

    python benchmarks/agent_protocols.py                 # grpc, mcp and rest, 3 rounds each
    python benchmarks/agent_protocols.py --only grpc --conversations 300

Every peer runs in a process of its own on loopback, so its CPU time is not the client's:

- ``grpc``: a servicer of schema/agent.proto answering each user turn at once with one text delta
  and TurnEnd. ``bare`` is a grpc.aio client doing the same conversations (Start, then three
  turns, each read to its TurnEnd); ``tamesu`` runs a suite of one three-turn test repeated.
- ``mcp``: an MCP server over streamable HTTP (one lookup tool) and the scripted OpenAI-wire
  model server, which answers a user message with a tool call and a tool result with text. A
  conversation is three turns of two model calls and one tool call, on an MCP session of its own.
  ``bare`` is the official clients doing just that (``openai.AsyncOpenAI`` and ``mcp.Client``).
- ``rest``: benchmarks/conversations.py's bare aiohttp client and tamesu on its rest agent.

The machine these figures come from is shared, so the figure that matters is CPU time per
conversation of each client process (``time.process_time``, every thread), which a neighbour's
load barely moves; ``cpu_rate_vs_bare`` is bare's CPU per conversation over tamesu's (the goal:
at least 0.5), the median of the rounds, each against the bare client of its own round. Wall
rates are printed too, as measured. Each row is the median of ``--rounds`` rounds. Figures go to
benchmarks/results/agent_protocols.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "agent_protocols.json"
TURNS = ("hello", "where is order A1?", "thanks, bye")

GRPC_SUITE = """
suite: bench-grpc
targets:
  agent: {{ type: grpc, url: "{url}" }}
tests:
  - name: three turns
    target: agent
    scenario: {{ max_turns: 3, script: [ {{ say: "{t1}" }}, {{ say: "{t2}" }}, {{ say: "{t3}" }} ] }}
    assert: [ {{ contains: "you said" }} ]
"""

MCP_SUITE = """
suite: bench-mcp
models: {{ default: scripted/main, retry: {{ attempts: 1 }} }}
targets:
  prompt: {{ type: mcp, url: "{url}", system: "You look orders up." }}
tests:
  - name: three turns
    target: prompt
    scenario: {{ max_turns: 3, script: [ {{ say: "{t1}" }}, {{ say: "{t2}" }}, {{ say: "{t3}" }} ] }}
    assert: [ {{ tool_called: lookup_order }}, {{ contains: "shipped" }} ]
"""


def serve_grpc() -> None:
    import grpc

    from tamesu.targets.grpc.grpc_stubs import agent_pb2 as pb
    from tamesu.targets.grpc.grpc_stubs import agent_pb2_grpc

    class Echo(agent_pb2_grpc.AgentServicer):
        async def Converse(self, request_iterator: Any, context: Any) -> Any:
            end = pb.AgentEvent(turn_end=pb.TurnEnd())
            async for event in request_iterator:
                if event.HasField("user_turn"):
                    yield pb.AgentEvent(text=pb.TextDelta(text=f"you said {event.user_turn.text}"))
                    yield end

    async def main() -> None:
        server = grpc.aio.server()
        agent_pb2_grpc.add_AgentServicer_to_server(Echo(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(f"listening on grpc://127.0.0.1:{port}", flush=True)
        await server.wait_for_termination()

    asyncio.run(main())


def serve_mcp() -> None:
    import socket

    import uvicorn
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("orders")

    @app.tool()
    def lookup_order(id: str) -> dict[str, str]:
        """The order with this id."""
        return {"id": id, "status": "shipped"}

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    logging.disable(logging.INFO)  # the SDK logs every session at INFO
    http_app = app.streamable_http_app(json_response=True)
    uvicorn.Server(uvicorn.Config(http_app, log_level="warning")).run(sockets=[sock])


def serve_model() -> None:
    from tamesu.testing.model_server import Reply, serve_model_server

    async def main() -> None:
        async with serve_model_server() as server:
            server.requests = _Forgetful()
            server.when(lambda r: r["messages"][-1]["role"] == "tool", Reply(text="It has shipped."))
            server.default = Reply(tool_calls=[("lookup_order", {"id": "A1"})])
            print(f"listening on {server.base_url}", flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())


class _Forgetful(list):  # type: ignore[type-arg]
    """The model server's request log, kept empty (a benchmark makes thousands)."""

    def append(self, item: Any) -> None:
        pass


def start(flag: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, __file__, flag], stdout=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"{flag}: the peer did not start: {line!r}")
    return proc, line.removeprefix("listening on ")


async def measured(work: Callable[[], Awaitable[None]]) -> dict[str, float]:
    cpu, began = time.process_time(), time.perf_counter()
    await work()
    return {"seconds": time.perf_counter() - began, "cpu_seconds": time.process_time() - cpu}


async def pool(conversations: int, concurrency: int, one: Callable[[int], Awaitable[None]]) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(conversations):
        queue.put_nowait(i)

    async def worker() -> None:
        while not queue.empty():
            await one(queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def bare_grpc(url: str, conversations: int, concurrency: int) -> dict[str, float]:
    import grpc

    from tamesu.targets.grpc.grpc_stubs import agent_pb2 as pb
    from tamesu.targets.grpc.grpc_stubs import agent_pb2_grpc

    channel = grpc.aio.insecure_channel(url.removeprefix("grpc://"))
    stub = agent_pb2_grpc.AgentStub(channel)
    ok = 0

    async def one(i: int) -> None:
        nonlocal ok
        call = stub.Converse()
        await call.write(pb.ClientEvent(start=pb.Start(session_id=f"s{i}")))
        replies = []
        for said in TURNS:
            await call.write(pb.ClientEvent(user_turn=pb.UserTurn(text=said)))
            text = ""
            while True:
                event = await call.read()
                if event.HasField("turn_end"):
                    break
                text += event.text.text
            replies.append(text)
        await call.done_writing()
        call.cancel()
        ok += all(r.startswith("you said") for r in replies)

    await one(-1)
    ok = 0
    figures = await measured(lambda: pool(conversations, concurrency, one))
    await channel.close()
    assert ok == conversations, f"bare grpc: {ok}/{conversations}"
    return figures


async def bare_mcp(urls: tuple[str, str], conversations: int, concurrency: int) -> dict[str, float]:
    import openai
    from mcp import Client

    mcp_url, model_url = urls
    model = openai.AsyncOpenAI(base_url=model_url, api_key="none", max_retries=0)
    ok = 0

    async def one(i: int) -> None:
        nonlocal ok
        async with Client(mcp_url) as client:
            listed = await client.list_tools()
            tools: Any = [
                {"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                  "parameters": t.input_schema}}
                for t in listed.tools
            ]  # fmt: skip
            history: list[Any] = [{"role": "system", "content": "You look orders up."}]
            texts = []
            for said in TURNS:
                history.append({"role": "user", "content": said})
                while True:
                    answer = await model.chat.completions.create(model="main", messages=history, tools=tools)
                    message = answer.choices[0].message
                    history.append(message.model_dump(exclude_none=True))
                    if not message.tool_calls:
                        texts.append(message.content or "")
                        break
                    for call in message.tool_calls:
                        result = await client.call_tool(
                            call.function.name, json.loads(call.function.arguments)
                        )
                        content = result.content[0].text  # type: ignore[union-attr]
                        history.append({"role": "tool", "tool_call_id": call.id, "content": content})
        ok += all("shipped" in t for t in texts)

    await one(-1)
    ok = 0
    figures = await measured(lambda: pool(conversations, concurrency, one))
    await model.close()
    assert ok == conversations, f"bare mcp: {ok}/{conversations}"
    return figures


async def with_tamesu(
    suite_text: str, conversations: int, concurrency: int, project: str = ""
) -> dict[str, float]:
    """``run_async`` on one three-turn test repeated; timed from the first run started to the last
    recorded (as benchmarks/conversations.py does)."""
    from tamesu import run_async
    from tamesu.runner.invocation import Reporter

    class Clock(Reporter):
        start = end = cpu = cpu_end = 0.0
        total = seen = 0

        def started(self, total: int) -> None:
            self.total = total
            self.start, self.cpu = time.perf_counter(), time.process_time()

        def run_finished(self, result: Any) -> None:
            self.seen += 1
            self.end = time.perf_counter()
            if self.seen >= self.total:
                self.cpu_end = time.process_time()

    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "bench.yaml"
        suite.write_text(suite_text)
        if project:
            (Path(tmp) / "tamesu.yaml").write_text(project)
        clock = Clock()
        result = await run_async(
            [suite], reporter=clock, argv=["bench"], repeat=conversations, concurrency=concurrency,
            output=Path(tmp) / "runs",
        )  # fmt: skip
    passed = sum(r.outcome == "passed" for r in result.results)
    if passed != conversations:
        raise SystemExit(
            f"tamesu: {passed}/{conversations} passed; errors: { ({r.error for r in result.results}) }"
        )
    return {"seconds": clock.end - clock.start, "cpu_seconds": clock.cpu_end - clock.cpu}


def figures(name: str, m: dict[str, float], conversations: int) -> dict[str, Any]:
    return {
        "client": name,
        "seconds": round(m["seconds"], 3),
        "conversations_per_s": round(conversations / m["seconds"], 1),
        "cpu_ms_per_conversation": round(m["cpu_seconds"] * 1000 / conversations, 3),
        "cpu_conversations_per_s": round(conversations / m["cpu_seconds"], 1),
    }


def median(rounds: list[dict[str, float]]) -> dict[str, float]:
    ordered = sorted(rounds, key=lambda r: r["cpu_seconds"])
    return ordered[len(ordered) // 2]


async def compare(
    target: str, n: int, c: int, rounds: int, bare: Callable[[], Awaitable[dict[str, float]]],
    tamesu: Callable[[], Awaitable[dict[str, float]]],
) -> dict[str, Any]:  # fmt: skip
    got: dict[str, list[dict[str, float]]] = {"bare": [], "tamesu": []}
    for _ in range(rounds):
        got["bare"].append(await bare())
        got["tamesu"].append(await tamesu())
    b, t = median(got["bare"]), median(got["tamesu"])
    rows = [figures(f"bare {target} SDK client", b, n), figures(f"tamesu ({target} target)", t, n)]
    # each round's rate against the bare client of the same round: the machine's speed drifts
    # between rounds and moves both alike (the medians' own ratio is kept beside it)
    by_round = [round(x["cpu_seconds"] / y["cpu_seconds"], 3) for x, y in zip(got["bare"], got["tamesu"])]
    rows[1]["cpu_rate_vs_bare"] = statistics.median(by_round)
    rows[1]["cpu_rate_vs_bare_by_round"] = by_round
    rows[1]["cpu_rate_vs_bare_of_medians"] = round(b["cpu_seconds"] / t["cpu_seconds"], 3)
    rows[1]["wall_rate_vs_bare"] = round(b["seconds"] / t["seconds"], 3)
    load = round(os.getloadavg()[0], 2)
    return {"target": target, "conversations": n, "concurrency": c, "load_average_1m": load, "rows": rows}


async def run_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    t1, t2, t3 = TURNS
    if args.only in (None, "grpc"):
        proc, url = start("--serve-grpc")
        try:
            n, c = args.conversations, args.concurrency
            suite = GRPC_SUITE.format(url=url, t1=t1, t2=t2, t3=t3)
            out.append(await compare("grpc", n, c, args.rounds, lambda: bare_grpc(url, n, c),
                                     lambda: with_tamesu(suite, n, c)))  # fmt: skip
        finally:
            proc.kill()
    if args.only in (None, "mcp"):
        mcp_proc, mcp_url = start("--serve-mcp")
        model_proc, model_url = start("--serve-model")
        try:
            n, c = args.mcp_conversations, args.concurrency
            suite = MCP_SUITE.format(url=mcp_url, t1=t1, t2=t2, t3=t3)
            project = f'providers:\n  scripted: {{ base_url: "{model_url}" }}\n'
            out.append(await compare("mcp", n, c, args.rounds, lambda: bare_mcp((mcp_url, model_url), n, c),
                                     lambda: with_tamesu(suite, n, c, project)))  # fmt: skip
        finally:
            mcp_proc.kill()
            model_proc.kill()
    if args.only in (None, "rest"):
        sys.path.insert(0, str(HERE))
        import conversations as rest

        proc, url = rest.start_agent()
        try:
            n, c = args.conversations, args.concurrency
            suite = rest.SUITE.format(url=url, t1=rest.TURNS[0], t2=rest.TURNS[1], t3=rest.TURNS[2])
            out.append(await compare("rest", n, c, args.rounds, lambda: rest.bare(url, n, c),
                                     lambda: with_tamesu(suite, n, c)))  # fmt: skip
        finally:
            proc.kill()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--conversations", type=int, default=1000, help="grpc and rest conversations per round"
    )
    parser.add_argument("--mcp-conversations", type=int, default=100, help="mcp conversations per round")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("grpc", "mcp", "rest"))
    parser.add_argument("--serve-grpc", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-mcp", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for flag, serve in (("serve_grpc", serve_grpc), ("serve_mcp", serve_mcp), ("serve_model", serve_model)):
        if getattr(args, flag):
            serve()
            return 0
    targets = asyncio.run(run_all(args))
    measured = {t["target"] for t in targets}
    if args.only and RESULTS.exists():  # keep the other targets' last figures
        kept = [t for t in json.loads(RESULTS.read_text()).get("targets", []) if t["target"] not in measured]
        targets = sorted(kept + targets, key=lambda t: ("grpc", "mcp", "rest").index(t["target"]))
    report = {
        "turns_per_conversation": len(TURNS),
        "rounds": args.rounds,
        "measure": "CPU time of the client process per conversation (the machine is shared; wall rates "
        "are as measured and move with the neighbours' load)",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "targets": targets,
    }
    for t in targets:
        for row in t["rows"]:
            print(f"{t['target']:5} {row['client']:28} {row['cpu_ms_per_conversation']:8.3f} ms CPU/conv "
                  f"{row['conversations_per_s']:8.1f} conv/s wall"
                  + (f"  cpu rate vs bare {row['cpu_rate_vs_bare']}" if "cpu_rate_vs_bare" in row else ""))  # fmt: skip
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
