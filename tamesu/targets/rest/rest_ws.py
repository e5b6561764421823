"""``streaming: websocket``: one socket per session, plain JSON messages or socket.io.

The socket is opened in ``start`` (with connect retries), ``request.open`` is sent, then the
``request.handshake`` steps run. A reader task keeps receiving for the whole session, so socket.io
pings are answered between turns too. Each turn sends ``request.body`` and reads messages until
``response.turn_done`` is truthy or nothing arrives for ``response.idle``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tamesu.clock import within
from tamesu.durations import format_duration, parse_duration
from tamesu.errors import TargetError
from tamesu.jsonpath import find_in_message, truthy
from tamesu.kernel.messages import Message, RawResponse, UserTurn
from tamesu.limits import DEFAULT_LIMITS, decode_json
from tamesu.targets.rest.rest_read import decode_text
from tamesu.templates import render, render_text
from tamesu.wire.connect import open_websocket, snippet, websocket_closed
from tamesu.wire.wslink import Closed

if TYPE_CHECKING:
    from tamesu.targets.rest.adapter import RestAdapter
    from tamesu.templates import Scope

__all__ = ["Closed", "WsSession", "sio_decode", "sio_encode", "ws_url"]

DEFAULT_IDLE = 2.0


def ws_url(url: str, *, socketio: bool = False) -> str:
    """http(s) -> ws(s); for socket.io the Engine.IO v4 path and query are added."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    path, query = parts.path, parts.query
    if socketio:
        if path in ("", "/"):
            path = "/socket.io/"
        params = dict(parse_qsl(query))
        params.update({"EIO": "4", "transport": "websocket"})
        query = urlencode(params)
    return urlunsplit((scheme, parts.netloc, path, query, parts.fragment))


def sio_encode(payload: Any) -> str:
    """A ``{event, data}`` mapping as a socket.io EVENT packet (``42["event", data]``)."""
    if isinstance(payload, dict) and "event" in payload:
        event, data = payload["event"], payload.get("data")
    else:
        event, data = "message", payload
    args = [event] if data is None else [event, data]
    return "42" + json.dumps(args, ensure_ascii=False)


def sio_decode(packet: str, depth: int = DEFAULT_LIMITS.json_depth) -> dict[str, Any] | None:
    """A socket.io EVENT packet's body (after ``42``) as ``{"event": name, "data": data}``; JSON
    nested deeper than ``depth`` is a LimitExceeded."""
    body = packet
    if body.startswith("/"):
        _, _, body = body.partition(",")
    i = 0
    while i < len(body) and body[i].isdigit():
        i += 1
    try:
        args = decode_json(body[i:], depth)
    except ValueError:
        return None
    if not isinstance(args, list) or not args:
        return None
    data = args[1] if len(args) == 2 else (args[1:] or None)
    return {"event": args[0], "data": data}


class WsSession:
    """The session's socket, its reader task, and the turns read from it."""

    def __init__(self, t: RestAdapter) -> None:
        self.t = t
        self.ctx = t.ctx
        self.socketio = t.config.protocol == "socketio"
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.conn: Any = None
        self.closed: Closed | None = None
        self.url = ""
        self._reader: asyncio.Task[None] | None = None
        self._sio_ready: asyncio.Future[None] | None = None

    @classmethod
    async def open(cls, t: RestAdapter) -> WsSession:
        session = cls(t)
        try:
            await session._connect()
            await session._greet()
        except BaseException:
            await session.close()
            raise
        return session

    async def _connect(self) -> None:
        scope, timeout = self.ctx.scope, self.ctx.turn_timeout
        if not self.t.config.url:
            raise TargetError("a rest target needs url", retryable=False)
        self.url = ws_url(render_text(self.t.config.url, scope), socketio=self.socketio)
        headers = {k: render_text(v, scope) for k, v in (self.t.config.headers or {}).items()}

        self.conn = await open_websocket(
            self.ctx, self.t.policy, self.url, headers=headers, ping_interval=None if self.socketio else 20
        )
        if self.socketio:
            self._sio_ready = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read())
        if self._sio_ready is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._sio_ready), timeout=timeout)
            except asyncio.TimeoutError:
                raise TargetError(
                    f"socket.io did not connect within {format_duration(timeout)} at {self.url}"
                ) from None

    async def _greet(self) -> None:
        """``request.open``, then each handshake step (send, wait, capture as session.NAME)."""
        request, scope = self.t.request, self.ctx.scope
        if request is None:
            return
        if request.open is not None:
            await self.send(render(request.open, scope))
        for n, step in enumerate(request.handshake or [], start=1):
            if step.send is not None:
                await self.send(render(step.send, scope))
            if not step.wait and not step.capture:
                continue
            timeout = parse_duration(step.timeout) if step.timeout else self.ctx.turn_timeout
            msg = await self._wait_for(
                _awaits(step.wait),
                timeout,
                what=f"handshake step {n}" + (f" ({step.wait})" if step.wait else ""),
            )
            for name, path in (step.capture or {}).items():
                found = find_in_message(path, msg)
                if not found:
                    raise TargetError(
                        f"handshake step {n}: nothing at {path} (capture {name})", retryable=False
                    )
                self.ctx.scope.set(f"session.{name}", found[0])

    async def _wait_for(self, ok: Callable[[Any], bool], timeout: float, *, what: str) -> Any:
        deadline = self.ctx.clock.now() + timeout
        while True:
            remaining = deadline - self.ctx.clock.now()
            try:
                if remaining <= 0:
                    raise asyncio.TimeoutError
                msg = await within(self.queue.get(), remaining)
            except asyncio.TimeoutError:
                raise TargetError(f"{what}: no matching message within {format_duration(timeout)}") from None
            if isinstance(msg, Closed):
                raise TargetError(f"{what}: the websocket closed ({msg.describe()})")
            if ok(msg):
                return msg

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for frame in self.conn:
                if isinstance(frame, bytes):
                    try:
                        frame = frame.decode("utf-8")
                    except UnicodeDecodeError:
                        continue
                depth = self.ctx.limits.json_depth
                msg = await self._sio_frame(frame) if self.socketio else decode_text(frame, depth)[0]
                if msg is not None:
                    self.queue.put_nowait(msg)
        except ConnectionClosed:
            pass
        except Exception as exc:  # a broken socket is reported to the turn, not lost in a task
            self.closed = Closed(None, f"{type(exc).__name__}: {exc}")
        if self.closed is None:
            self.closed = Closed(*websocket_closed(self.conn, self.ctx.limits))
        if self._sio_ready is not None and not self._sio_ready.done():
            self._sio_ready.set_exception(TargetError(f"the websocket closed ({self.closed.describe()})"))
        self.queue.put_nowait(self.closed)

    async def _sio_frame(self, frame: str) -> dict[str, Any] | None:
        """Engine.IO v4 / socket.io v5 packets: open, ping, connect ack, events, disconnect."""
        kind, body = frame[:1], frame[1:]
        if kind == "0":
            await self.conn.send("40")
        elif kind == "2":
            await self.conn.send("3" + body)
        elif kind == "1":
            self.closed = Closed(None, "engine.io close packet")
            await self.conn.close()
        elif kind == "4":
            sio, rest = body[:1], body[1:]
            if sio == "0" and self._sio_ready is not None and not self._sio_ready.done():
                self._sio_ready.set_result(None)
            elif sio == "4" and self._sio_ready is not None and not self._sio_ready.done():
                self._sio_ready.set_exception(
                    TargetError(f"socket.io refused the connection: {snippet(rest)}", retryable=False)
                )
            elif sio == "1":
                self.closed = Closed(None, "socket.io disconnect packet")
                await self.conn.close()
            elif sio == "2":
                return sio_decode(rest, self.ctx.limits.json_depth)
        return None

    async def send(self, payload: Any) -> None:
        """One message: socket.io EVENT, JSON for data, a string as it is."""
        from websockets.exceptions import ConnectionClosed

        if self.socketio:
            text = sio_encode(payload)
        else:
            text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        try:
            await self.conn.send(text)
        except ConnectionClosed:
            closed = self.closed or Closed(self.conn.close_code, self.conn.close_reason or "")
            raise TargetError(
                f"the agent closed the websocket ({closed.describe()}) before this turn"
            ) from None

    async def turn(self, user: UserTurn | None, scope: Scope) -> AsyncGenerator[Message, None]:
        t, clock = self.t, self.ctx.clock
        builder = t.builder(sent_at=None, partials=True)
        if user is not None:
            while not self.queue.empty():
                stale = self.queue.get_nowait()
                if isinstance(stale, Closed):
                    self.queue.put_nowait(stale)
                    break
                yield RawResponse(body=stale, at=clock.now())
            if self.closed is not None and self.queue.qsize() <= 1:
                raise TargetError(
                    f"the agent closed the websocket ({self.closed.describe()}) before this turn"
                )
            body = t.request_body()
            builder.sent_at = clock.now()
            await self.send(render(body, scope))
        idle = parse_duration(t.response.idle) if t.response is not None and t.response.idle else DEFAULT_IDLE
        deadline = clock.now() + self.ctx.turn_timeout
        while True:
            remaining = deadline - clock.now()
            wait = min(idle, remaining) if builder.has_content else remaining
            try:
                if wait <= 0:
                    raise asyncio.TimeoutError
                msg = await within(self.queue.get(), wait)
            except asyncio.TimeoutError:
                if not builder.has_content:
                    raise TargetError(
                        f"no answer within {format_duration(self.ctx.turn_timeout)} on {self.url}",
                        retryable=True,
                    ) from None
                break
            if isinstance(msg, Closed):
                self.queue.put_nowait(msg)
                if builder.has_content and msg.code in (1000, 1001):
                    builder.done = True
                    break
                raise TargetError(f"the websocket closed mid-turn ({msg.describe()})")
            for out in builder.add(msg, t.reader.read(msg, message=True, at=clock.now())):
                yield out
            if t.reader.turn_done(msg):
                break
        for out in t.finish(builder):
            yield out

    async def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), timeout=2)
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader


def _awaits(path: str | None) -> Callable[[Any], bool]:
    """A handshake step's wait: the JSONPath is truthy on the message; any message without one."""
    if not path:
        return lambda msg: True
    return lambda msg: truthy(find_in_message(path, msg))
