"""A loopback agent that misbehaves on request, and suites that load test it.

The message decides what the agent does: ``hello`` is echoed, ``fail`` gets a 503, ``hang`` is
never answered (until the fixture shuts down), ``drop`` has its connection closed, ``flaky``
gets a 503 and an echo in turn (the first flaky request fails, the second passes, ...). The agent counts the requests in
flight so tests can check the driver's concurrency.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web


@dataclass
class FaultAgent:
    delay: float = 0.0
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    flaky: int = 0
    over: asyncio.Event = field(default_factory=asyncio.Event)
    hold_after: int | None = None
    """Answer this many requests; later ones wait for ``release`` (or the fixture's end)."""
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        message = str(body.get("message", ""))
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.hold_after is not None and self.requests > self.hold_after:
                await self.release.wait()
            if self.delay:
                await asyncio.sleep(self.delay)
            if message == "fail":
                return web.json_response({"error": "overloaded"}, status=503)
            if message == "hang":
                await self.over.wait()
            if message == "drop":
                assert request.transport is not None
                request.transport.close()
                await asyncio.sleep(0.5)
            if message == "flaky":
                self.flaky += 1
                if self.flaky % 2:
                    return web.json_response({"error": "cold start"}, status=503)
            return web.json_response({"reply": f"echo: {message}"})
        finally:
            self.in_flight -= 1


@asynccontextmanager
async def serve_fault_agent(delay: float = 0.0) -> AsyncIterator[tuple[str, FaultAgent]]:
    agent = FaultAgent(delay=delay)
    app = web.Application()
    app.router.add_post("/chat", agent.chat)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", agent
    finally:
        agent.over.set()
        agent.release.set()
        await runner.cleanup()


def closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_suite(
    directory: Path,
    url: str,
    says: dict[str, list[str]],
    *,
    retries: int = 0,
    timeout: str = "5s",
    extra: str = "",
    targets: dict[str, str] | None = None,
    attempts: int = 1,
) -> Path:
    """A suite with one test per entry of ``says`` (test name -> script) against the agent at ``url``."""
    targets = {"api": url, **(targets or {})}
    lines = [
        "suite: loadtest",
        f"defaults: {{ retries: {retries}, timeout: {timeout} }}",
        "targets:",
    ]
    for name, base in targets.items():
        lines.append(
            f'  {name}: {{ type: rest, url: "{base}/chat", connect: {{ attempts: {attempts}, backoff: 10ms }}, '
            'request: { body: { message: "{{message}}", session: "{{session}}" } }, response: { text: $.reply } }'
        )
    lines.append("tests:")
    for name, script in says.items():
        target = "dead" if name.startswith("refused") else "api"
        steps = ", ".join(f"{{ say: {s} }}" for s in script)
        lines.append(
            f"  - {{ name: {name}, target: {target}, scenario: {{ script: [ {steps} ] }}, assert: [ {{ contains: echo }} ] }}"
        )
    path = directory / "suite.yaml"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def rest_suite(url: str, tests: list[str], *, suite: str = "loadtest", timeout: str = "5s") -> str:
    """A suite of ``tests`` (flow mappings naming ``target: api``) against the REST agent at ``url``,
    without connect retries, so each call's outcome is the agent's own."""
    target = (
        f'api: {{ type: rest, url: "{url}/chat", connect: {{ attempts: 1 }}, '
        'request: { body: { message: "{{message}}" } }, response: { text: $.reply } }'
    )
    lines = [
        f"suite: {suite}",
        f"defaults: {{ retries: 0, timeout: {timeout} }}",
        "targets:",
        f"  {target}",
        "tests:",
    ]
    return "\n".join([*lines, *(f"  - {t}" for t in tests)]) + "\n"


def says(name: str, message: str, extra: str = "") -> str:
    """One test that says ``message`` once and expects an echo."""
    return (
        f"{{ name: {name}, target: api, {extra}scenario: {{ script: [ {{ say: {message} }} ] }}, "
        "assert: [ { contains: echo } ] }"
    )


async def load(directory: Path, suite: str, **request: Any) -> Any:
    """``run_load`` of ``suite`` (its text) written in ``directory``, run directories under runs/."""
    import io

    from tamesu.load.load_test import LoadRequest, run_load

    (directory / "suite.yaml").write_text(suite)
    request.setdefault("stream", io.StringIO())
    return await run_load(
        LoadRequest(paths=[str(directory / "suite.yaml")], output=str(directory / "runs"), **request)
    )
