"""``push``: the agent reports task updates by calling tamesu, so tamesu listens for them.

The server is the shared local listener (``tamesu.wire.http_listener``, also the one of
``response.listen``); each session gives the agent its own token, and the agent's notification
(a ``StreamResponse`` as JSON, with the ``X-A2A-Notification-Token`` header) goes to the session
whose token it carries. A request with an unknown token is answered 401 and read by nobody. A
body over ``limits.answer_size`` is answered 413; JSON is read within ``json_depth``.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Any, ClassVar

from tamesu.errors import TargetError
from tamesu.limits import LimitExceeded, Limits
from tamesu.wire.http_listener import Listener

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import StreamResponse, TaskPushNotificationConfig
    from aiohttp import web

__all__ = ["PushSession", "pushed"]

TOKEN_HEADER = "X-A2A-Notification-Token"


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

    narrow: ClassVar[bool] = True
    """Its requests carry the notification token header."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.token = secrets.token_urlsafe(24)
        self.queue: asyncio.Queue[StreamResponse | TargetError] = asyncio.Queue()
        self.listener: Listener | None = None
        self.url = ""

    @classmethod
    async def open(cls, limits: Limits, *, addr: str | None, url: str | None) -> PushSession:
        session = cls(limits)
        session.listener = Listener.shared(addr)
        await session.listener.add(session, limits)
        session.url = url or session.listener.url + "/"
        return session

    @classmethod
    async def serve(cls, listener: Listener, request: web.Request) -> web.StreamResponse | None:
        """Queue a notification for the session whose token it carries. A request without the
        header is left to the other kinds of session on the listener, when there are any."""
        from aiohttp import web

        token = request.headers.get(TOKEN_HEADER)
        if token is None and any(not type(s).narrow for s in listener.sessions):
            return None
        session = next((s for s in listener.of(cls) if s.token == token), None)
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
