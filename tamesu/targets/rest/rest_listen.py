"""``response.listen``: the agent answers by calling an API, so tamesu serves that API.

The server is the shared local listener (``tamesu.wire.http_listener``); ``{{listen.url}}`` tells
the agent where to call. Each request is answered with the
session's ``reply`` and ``status``; requests that match ``path`` are read as the agent's reply by
the session ``session`` (a JSONPath to the session id in the payload) routes them to, or by the
oldest open session that does not route by id.

A request body over ``limits.answer_size`` (of the session that started the server) is answered
413 and fails the turn of the session it would have gone to; JSON is read within ``json_depth``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tamesu.clock import within
from tamesu.durations import format_duration, parse_duration
from tamesu.errors import TamesuError, TargetError
from tamesu.jsonpath import first
from tamesu.kernel.messages import Message, RawResponse, UserTurn
from tamesu.limits import LimitExceeded
from tamesu.targets.rest.rest_read import decode_text
from tamesu.templates import render
from tamesu.wire.connect import request
from tamesu.wire.http_listener import Listener

if TYPE_CHECKING:
    from aiohttp import web

    from tamesu.targets.rest.adapter import RestAdapter
    from tamesu.targets.rest.settings import RESTListen
    from tamesu.templates import Scope

__all__ = ["ListenSession", "PathFilter"]


@dataclass
class Incoming:
    method: str
    path: str
    payload: Any
    at: float
    error: TargetError | None = None
    """What made the request unreadable (the turn that reads it fails with it)."""


class PathFilter:
    """``[METHOD] /path/with/*`` wildcards; a trailing ``/`` matches every path under it."""

    def __init__(self, spec: str | None) -> None:
        self.method: str | None = None
        self.regex: re.Pattern[str] | None = None
        if not spec:
            return
        parts = spec.split(None, 1)
        if len(parts) == 2:
            self.method, path = parts[0].upper(), parts[1].strip()
        elif parts[0].startswith("/"):
            path = parts[0]
        else:
            self.method, path = parts[0].upper(), "/"
        pattern = ".*".join(re.escape(piece) for piece in path.split("*"))
        self.regex = re.compile(pattern + (".*" if path.endswith("/") else ""))

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and method.upper() != self.method:
            return False
        return self.regex is None or self.regex.fullmatch(path) is not None


def _route(listener: Listener, method: str, path: str, payload: Any) -> ListenSession | None:
    """The session by id when a session routes by id; else the oldest one that does not."""
    sessions = listener.of(ListenSession)
    for s in sessions:
        if s.route_path and s.owns(payload):
            return s
    fallback = [s for s in sessions if not s.route_path]
    wanted = [s for s in fallback if s.filter.matches(method, path)]
    chosen = wanted or fallback
    return chosen[0] if chosen else None


def _refuse(listener: Listener, request: web.Request, exc: Exception) -> web.StreamResponse:
    """A request that cannot be read within the limits: answered 413, and the turn of the session
    it would have gone to fails with the limit it broke."""
    from aiohttp import web

    if isinstance(exc, LimitExceeded):
        error: TargetError = exc
    else:
        error = listener.limits.too_large(f"the agent's {request.method} {request.path} to the listener")
    session = _route(listener, request.method, request.path, None)
    if session is not None:
        now = session.t.ctx.clock.now()
        session.queue.put_nowait(Incoming(request.method, request.path, None, now, error))
    return web.Response(status=413, text=str(error))


async def _read_payload(request: web.Request, depth: int) -> Any:
    if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        return {k: v if isinstance(v, str) else getattr(v, "filename", None) for k, v in form.items()}
    raw = await request.text()
    if raw.strip():
        return decode_text(raw, depth)[0]
    return dict(request.query) if request.query else None


class ListenSession:
    """One run's registration with a shared listener, and its turns."""

    narrow: ClassVar[bool] = False
    """It takes every request no narrower kind of session took."""

    def __init__(self, t: RestAdapter, config: RESTListen) -> None:
        self.t = t
        self.config = config
        self.filter = PathFilter(config.path)
        self.route_path = config.session
        self.queue: asyncio.Queue[Incoming] = asyncio.Queue()
        self.listener: Listener | None = None

    @classmethod
    async def open(cls, t: RestAdapter, config: RESTListen) -> ListenSession:
        session = cls(t, config)
        session.listener = Listener.shared(config.addr)
        await session.listener.add(session, t.ctx.limits)
        return session

    @classmethod
    async def serve(cls, listener: Listener, request: web.Request) -> web.StreamResponse:
        """Answer with the routed session's ``reply``; a request matching its ``path`` is its reply."""
        from aiohttp import web

        try:
            payload = await _read_payload(request, listener.limits.json_depth)
        except (web.HTTPRequestEntityTooLarge, LimitExceeded) as exc:
            return _refuse(listener, request, exc)
        session = _route(listener, request.method, request.path, payload)
        if session is None:
            return web.json_response({"ok": True})
        if session.filter.matches(request.method, request.path):
            session.queue.put_nowait(
                Incoming(request.method, request.path, payload, session.t.ctx.clock.now())
            )
        try:
            reply = render(session.config.reply, session.t.ctx.scope.child({"request": payload}))
        except TamesuError as exc:
            return web.Response(status=500, text=session.t.ctx.redactor.redact(str(exc)))
        if isinstance(reply, str):
            return web.Response(status=session.config.status, text=reply)
        return web.json_response(reply, status=session.config.status)

    @property
    def url(self) -> str:
        return self.listener.url if self.listener is not None else ""

    def owns(self, payload: Any) -> bool:
        value = first(self.route_path, payload) if self.route_path else None
        if value is None:
            return False
        flat = self.t.ctx.scope.flat()
        ids = {self.t.ctx.session} | {str(v) for k, v in flat.items() if k.startswith("session.")}
        return str(value) in ids

    async def turn(self, user: UserTurn | None, scope: Scope) -> AsyncGenerator[Message, None]:
        t, clock = self.t, self.t.ctx.clock
        builder = t.builder(sent_at=None, join="\n")
        status: int | None = None
        if user is not None:
            while not self.queue.empty():
                stale = self.queue.get_nowait()
                yield RawResponse(body=stale.payload, at=stale.at)
            call = t.turn_call(scope)
            builder.sent_at = clock.now()
            resp = await request(t.ctx, t.policy, call)
            status = resp.status_code
            if status >= 400:
                for msg in t.read_answer(builder, status, resp.headers.get("content-type"), resp.text):
                    yield msg
                for msg in t.finish(builder):
                    yield msg
                return
        timeout = parse_duration(self.config.timeout or "60s")
        idle = parse_duration(self.config.idle) if self.config.idle else None
        deadline = clock.now() + timeout
        while True:
            remaining = deadline - clock.now()
            wait = remaining if not builder.has_content else min(idle or 0.0, remaining)
            try:
                if wait <= 0:
                    raise asyncio.TimeoutError
                item = await within(self.queue.get(), wait)
            except asyncio.TimeoutError:
                if not builder.has_content:
                    raise TargetError(
                        f"no reply within {format_duration(timeout)} on {self.url}", retryable=True
                    ) from None
                break
            if item.error is not None:
                raise item.error
            if builder.first_byte_at is None:
                builder.first_byte_at = item.at
            extract = t.reader.read(item.payload, at=item.at)
            for msg in builder.add(item.payload, extract, status=status):
                yield msg
            if extract.done or (extract.has_content and idle is None):
                break
        for msg in t.finish(builder):
            yield msg

    async def close(self) -> None:
        if self.listener is not None:
            listener, self.listener = self.listener, None
            await listener.remove(self)
