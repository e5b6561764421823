"""One websocket to an agent for a whole session: connect with retries, a reader task, a queue.

Shared by the targets that speak a fixed protocol over a websocket (realtime, pipecat). Opening
retries what waiting can fix (a refused connection, a 5xx, 408 or 429 handshake answer, and a
server that accepts the socket only to close it as busy or restarting, 1001 / 1012 / 1013, before
the target's own handshake is done: Pipecat's websocket server serves one client at a time and
turns the others away with 1013); any other handshake answer is final. Every error is redacted,
since handshake headers carry credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tamesu.clock import within
from tamesu.errors import TargetError
from tamesu.wire.connect import (
    FULL_CLOSE_CODE,
    TRY_AGAIN_CLOSE_CODES,
    Retry,
    connect_websocket,
    retrying,
    websocket_closed,
)

if TYPE_CHECKING:
    from tamesu.wire.connect import ConnectPolicy
    from tamesu.wire.wire_context import WireContext

__all__ = ["BUSY_HINT", "MAX_QUEUED", "Closed", "Inbox", "WsLink", "http_to_ws"]

MAX_QUEUED = 500
"""Frames (10 s of 20 ms audio) waiting for a slow peer before the oldest are dropped."""

BUSY_HINT = (
    "it serves fewer sessions at once than tamesu opened (a Pipecat websocket server serves one "
    "client at a time): run its tests one at a time with --per-target 1, or give connect: more "
    "attempts or a longer backoff"
)


def http_to_ws(url: str) -> str:
    """http(s):// -> ws(s)://; other schemes are left alone."""
    if url.startswith("https://"):
        return "wss://" + url[len("https://") :]
    if url.startswith("http://"):
        return "ws://" + url[len("http://") :]
    return url


@dataclass(frozen=True)
class Closed:
    """The socket closed; queued after the last message."""

    code: int | None
    reason: str = ""

    def describe(self) -> str:
        why = f": {self.reason}" if self.reason else ""
        return f"code {self.code}{why}" if self.code is not None else "no close frame"


class Inbox:
    """What a session's peer sent, in order, ending with ``Closed``: the reading side of a link."""

    queue: asyncio.Queue[Any]
    closed: Closed | None

    async def next(self, timeout: float) -> Any:
        """The next item or ``Closed`` (kept queued, so every later read sees it too).

        Raises ``asyncio.TimeoutError`` when nothing arrives within ``timeout`` seconds.
        """
        if timeout <= 0:
            raise asyncio.TimeoutError
        item = await within(self.queue.get(), timeout)
        if isinstance(item, Closed):
            self.queue.put_nowait(item)
        return item

    def drain(self) -> list[Any]:
        """Items that arrived between turns (``Closed`` stays queued)."""
        out = []
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if isinstance(item, Closed):
                self.queue.put_nowait(item)
                break
            out.append(item)
        return out


class WsLink(Inbox):
    """The session's socket; ``decode`` turns each frame into an item (None drops it)."""

    def __init__(self, ctx: WireContext, url: str, *, decode: Callable[[str | bytes], Any]) -> None:
        self.ctx = ctx
        self.url = url
        self.decode = decode
        self._fresh()

    def _fresh(self) -> None:
        """The state of one connection (a retried open starts over)."""
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.conn: Any = None
        self.closed: Closed | None = None
        self.dropped = 0
        self._reader: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._out: deque[str | bytes] = deque()
        self._ready = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()

    @property
    def close_code(self) -> int | None:
        """The code the peer closed the socket with, once it did."""
        if self.closed is not None:
            return self.closed.code
        return None if self.conn is None else self.conn.close_code

    async def open(
        self,
        policy: ConnectPolicy,
        headers: dict[str, str],
        *,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Connect and start reading, then ``ready()`` (the target's own handshake), retried per
        ``connect:`` while the server refuses, or turns the session away before ``ready`` is done."""

        async def attempt() -> None:
            await self.close()
            self._fresh()
            self.conn = await connect_websocket(self.ctx, self.url, headers=headers)
            self._reader = asyncio.create_task(self._read())
            if ready is None:
                return
            try:
                await ready()
            except TargetError:
                code = self.close_code
                if code not in TRY_AGAIN_CLOSE_CODES:
                    raise
                await self.close()
                why = f"{code} {TRY_AGAIN_CLOSE_CODES[code]}"
                raise Retry(
                    f"the agent at {self.url} refused the session (it closed the websocket with {why})",
                    BUSY_HINT,
                    capacity=code == FULL_CLOSE_CODE,
                ) from None

        await retrying(self.ctx, policy, attempt)

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for frame in self.conn:
                item = self.decode(frame)
                if item is not None:
                    self.queue.put_nowait(item)
        except ConnectionClosed:
            pass
        except Exception as exc:  # a broken socket is reported to the turn, not lost in a task
            self.closed = Closed(None, f"{type(exc).__name__}: {exc}")
        if self.closed is None:
            self.closed = Closed(*websocket_closed(self.conn, self.ctx.limits))
        self.queue.put_nowait(self.closed)

    def queue_send(self, data: str | bytes) -> None:
        """Send ``data`` after what is queued, without waiting (the caller's 20 ms audio frames).

        A peer that stops reading loses the oldest frames (counted in ``dropped``) rather than
        stalling the audio clock.
        """
        if len(self._out) >= MAX_QUEUED:
            self._out.popleft()
            self.dropped += 1
        self._out.append(data)
        self._drained.clear()
        self._ready.set()
        if self._writer is None and self.conn is not None:
            self._writer = asyncio.create_task(self._write())

    async def _write(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            while True:
                await self._ready.wait()
                self._ready.clear()
                while self._out:
                    await self.conn.send(self._out.popleft())
                self._drained.set()
        except ConnectionClosed:
            self._out.clear()
            self._drained.set()

    async def flush(self) -> None:
        """Wait until the queued frames are written (or the writer has stopped)."""
        writer = self._writer
        if self._out and writer is not None and not writer.done():
            drained = asyncio.ensure_future(self._drained.wait())
            await asyncio.wait({drained, writer}, return_when=asyncio.FIRST_COMPLETED)
            drained.cancel()

    async def send(self, data: str | bytes) -> None:
        """Send ``data`` after the queued frames, and wait until it is written."""
        from websockets.exceptions import ConnectionClosed

        await self.flush()
        try:
            await self.conn.send(data)
        except ConnectionClosed:
            closed = self.closed or Closed(self.conn.close_code, self.conn.close_reason or "")
            raise TargetError(f"the agent closed the websocket ({closed.describe()})") from None

    async def close(self) -> None:
        """Close the socket and stop its tasks (safe to call more than once)."""
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), timeout=2)
        for task in (self._writer, self._reader):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
