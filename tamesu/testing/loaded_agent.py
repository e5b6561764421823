"""An agent that slows down with its load, to test a capacity search against a known answer.

    async with serve_loaded_agent(base_ms=20, per_call_ms=10) as (url, agent):
        ...  # POST {url}/chat {"message": "hi"} -> {"reply": "echo: hi"} after 20 + 10 * n ms,
             # n the requests in flight at the agent, this one included
        agent.capacity(turn_latency_ms=200)   # 18: the most calls in flight its own figures allow

Real HTTP on loopback (aiohttp). ``capacity`` is what the delay function itself gives, so a
search's answer can be checked against it; ``max_in_flight`` is the most requests it ever held.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web

__all__ = ["LoadedAgent", "serve_loaded_agent"]


@dataclass
class LoadedAgent:
    """Answers ``{reply: "echo: " + message}`` after ``base_ms + per_call_ms * in_flight``."""

    base_ms: float = 20.0
    per_call_ms: float = 10.0
    in_flight: int = 0
    max_in_flight: int = 0
    requests: int = 0

    def delay_ms(self, in_flight: int) -> float:
        """The answer's delay with ``in_flight`` requests at the agent (this one included)."""
        return self.base_ms + self.per_call_ms * in_flight

    def capacity(self, *, turn_latency_ms: float) -> int:
        """The most calls in flight whose delay stays within ``turn_latency_ms`` (0 if none)."""
        if self.per_call_ms <= 0:
            raise ValueError("an agent whose delay does not grow has no capacity to find")
        return max(0, math.floor((turn_latency_ms - self.base_ms) / self.per_call_ms + 1e-9))

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_ms(self.in_flight) / 1000.0)
            return web.json_response({"reply": f"echo: {str(body.get('message', ''))[:200]}"})
        finally:
            self.in_flight -= 1


@asynccontextmanager
async def serve_loaded_agent(
    *, base_ms: float = 20.0, per_call_ms: float = 10.0
) -> AsyncIterator[tuple[str, LoadedAgent]]:
    """The agent on 127.0.0.1 (a free port): yields its base URL and the agent."""
    agent = LoadedAgent(base_ms=base_ms, per_call_ms=per_call_ms)
    app = web.Application()
    app.router.add_post("/chat", agent.chat)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", agent
    finally:
        await runner.cleanup()
