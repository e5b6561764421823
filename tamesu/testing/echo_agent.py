"""A scripted echo agent to test against: real HTTP on loopback, no model, fully predictable.

    async with serve_echo_agent() as url:          # http://127.0.0.1:PORT
        ...  # POST {url}/chat {"message": "hi"} -> {"reply": "echo: hi", ...}

Any POST path answers JSON; ``/stream`` answers server-sent events and ``/ws`` is a websocket.
Every request is recorded in ``agent.requests`` so tests can check headers and bodies.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

__all__ = ["EchoAgent", "RecordedRequest", "serve_echo_agent"]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class EchoAgent:
    """Answers ``{reply: prefix + message, session_id}``; ``script`` bodies are answered first, in order.

    ``delay`` holds every answer back (timeouts); ``status`` changes the status of JSON answers.
    """

    prefix: str = "echo: "
    script: list[Any] = field(default_factory=list)
    delay: float = 0.0
    status: int = 200
    requests: list[RecordedRequest] = field(default_factory=list)
    _sockets: set[web.WebSocketResponse] = field(default_factory=set, repr=False)

    def reply_to(self, body: Any) -> Any:
        """The JSON answer to one request body."""
        if self.script:
            return self.script.pop(0)
        message, session = _message(body)
        return {"reply": f"{self.prefix}{message}", "session_id": session}

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/ws", self._ws)
        app.router.add_post("/stream", self._stream)
        app.router.add_route("*", "/{tail:.*}", self._json)
        app.on_shutdown.append(self._close_sockets)
        return app

    async def _close_sockets(self, app: web.Application) -> None:
        """Open websockets would hold the server's shutdown until its timeout."""
        for ws in list(self._sockets):
            await ws.close(code=1001, message=b"server shutdown")

    async def _record(self, request: web.Request) -> Any:
        raw = await request.text()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        self.requests.append(RecordedRequest(request.method, request.path, dict(request.headers), body))
        if self.delay:
            await asyncio.sleep(self.delay)
        return body

    async def _json(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        return web.json_response(self.reply_to(body), status=self.status)

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        reply = self.reply_to(body)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        text = str(reply.get("reply", "")) if isinstance(reply, dict) else str(reply)
        for word in text.split(" "):
            await resp.write(f"data: {json.dumps({'text': word + ' '})}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.add(ws)
        try:
            await self._converse(request, ws)
        finally:
            self._sockets.discard(ws)
        return ws

    async def _converse(self, request: web.Request, ws: web.WebSocketResponse) -> None:
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            try:
                body: Any = json.loads(msg.data)
            except ValueError:
                body = msg.data
            self.requests.append(RecordedRequest("WS", request.path, dict(request.headers), body))
            reply = self.reply_to(body)
            await ws.send_json({**reply, "done": True} if isinstance(reply, dict) else reply)


def _message(body: Any) -> tuple[str, Any]:
    if isinstance(body, dict):
        for key in ("message", "text", "input", "content"):
            if key in body:
                return str(body[key]), body.get("session_id")
        return json.dumps(body), body.get("session_id")
    return ("" if body is None else str(body)), None


@asynccontextmanager
async def serve_echo_agent(
    agent: EchoAgent | None = None, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Serve ``agent`` (a fresh EchoAgent by default) and yield its base URL."""
    agent = agent or EchoAgent()
    runner = web.AppRunner(agent.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    try:
        yield f"http://{host}:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
