"""``push``: the agent reports task updates by calling tamesu, so tamesu listens for them.

One aiohttp server per address and event loop is shared by every a2a session of the process
that pushes there; each session gives the agent its own token, and the agent's notification
(a ``StreamResponse`` as JSON, with the ``X-A2A-Notification-Token`` header) goes to the session
whose token it carries. A request without a known token is answered 401 and read by nobody. A
body over ``limits.answer_size`` is answered 413; JSON is read within ``json_depth``.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError
from tamesu.limits import DEFAULT_LIMITS, LimitExceeded, Limits

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import StreamResponse, TaskPushNotificationConfig
    from aiohttp import web

__all__ = ["PushListener", "PushSession"]

TOKEN_HEADER = "X-A2A-Notification-Token"


def _split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return (host.strip("[]") or "127.0.0.1", int(port or 0)) if host else (addr or "127.0.0.1", 0)


class PushListener:
    """One local server for push notifications; the last session out stops it."""

    _all: dict[tuple[int, str], PushListener] = {}

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.url = ""
        self.limits = DEFAULT_LIMITS
        self.sessions: dict[str, PushSession] = {}
        self._runner: web.AppRunner | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def shared(cls, addr: str) -> PushListener:
        key = (id(asyncio.get_running_loop()), addr)
        if key not in cls._all:
            cls._all[key] = cls(addr)
        return cls._all[key]

    async def add(self, session: PushSession) -> None:
        async with self._lock:
            if self._runner is None:
                self.limits = session.limits
                await self._start()
            self.sessions[session.token] = session

    async def remove(self, session: PushSession) -> None:
        async with self._lock:
            self.sessions.pop(session.token, None)
            if not self.sessions and self._runner is not None:
                runner, self._runner = self._runner, None
                self._all.pop((id(asyncio.get_running_loop()), self.addr), None)
                await runner.cleanup()

    async def _start(self) -> None:
        from aiohttp import web

        host, port = _split_addr(self.addr)
        app = web.Application(client_max_size=self.limits.answer_size)
        app.router.add_route("POST", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            await runner.cleanup()
            raise TargetError(
                f"cannot listen for push notifications on {self.addr}: {exc.strerror or exc}",
                retryable=False,
                kind="config",
            ) from None
        bound_host, bound_port = runner.addresses[0][:2]
        shown = "127.0.0.1" if bound_host in ("0.0.0.0", "::", "") else bound_host
        self.url = f"http://{f'[{shown}]' if ':' in shown else shown}:{bound_port}/"
        self._runner = runner

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        session = self.sessions.get(request.headers.get(TOKEN_HEADER, ""))
        if session is None:
            return web.Response(status=401, text="unknown notification token")
        error: TargetError | None = None
        try:
            event = await _read_event(request, session.limits)
        except web.HTTPRequestEntityTooLarge:
            error, status = session.limits.too_large("a push notification"), 413
        except LimitExceeded as exc:
            error, status = exc, 400
        except ValueError as exc:
            error = TargetError(f"the agent pushed a notification tamesu cannot read: {exc}", retryable=False)
            status = 400
        if error is not None:
            session.queue.put_nowait(error)
            return web.Response(status=status, text=str(error))
        session.queue.put_nowait(event)
        return web.Response(status=200, text="ok")


async def _read_event(request: web.Request, limits: Limits) -> StreamResponse:
    from a2a.types.a2a_pb2 import StreamResponse
    from google.protobuf.json_format import ParseDict, ParseError

    from tamesu.limits import decode_json

    data = decode_json(await request.text(), limits.json_depth)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    try:
        return ParseDict(data, StreamResponse(), ignore_unknown_fields=True)
    except ParseError as exc:
        raise ValueError(str(exc)) from None


class PushSession:
    """One conversation's registration with a listener: its token and the updates pushed to it."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.token = secrets.token_urlsafe(24)
        self.queue: asyncio.Queue[StreamResponse | TargetError] = asyncio.Queue()
        self.listener: PushListener | None = None
        self.url = ""

    @classmethod
    async def open(cls, limits: Limits, *, addr: str | None, url: str | None) -> PushSession:
        session = cls(limits)
        session.listener = PushListener.shared(addr or "127.0.0.1:0")
        await session.listener.add(session)
        session.url = url or session.listener.url
        return session

    def config(self) -> TaskPushNotificationConfig:
        """What the agent is told: where to push and the token that names this conversation."""
        from a2a.types.a2a_pb2 import TaskPushNotificationConfig

        return TaskPushNotificationConfig(url=self.url, token=self.token)

    async def next(self) -> StreamResponse:
        """The next update pushed (a TargetError when one could not be read)."""
        item = await self.queue.get()
        if isinstance(item, TargetError):
            raise item
        return item

    async def close(self) -> None:
        if self.listener is not None:
            listener, self.listener = self.listener, None
            await listener.remove(self)


def pushed(value: Any) -> bool:
    """Whether a Push configuration turns push on (``true``, or a mapping not ``enabled: false``)."""
    return value is not None and bool(getattr(value, "enabled", value))
