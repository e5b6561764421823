"""A call's websocket: connected with the target's connect retries, read by one task, written by another.

Audio frames leave every 20 ms from the pump, which must never wait on a socket, so they go into a
bounded queue that a sender task drains (a peer that stops reading loses the oldest frames, counted
in ``dropped``, rather than stalling every other call). Control messages (open, DTMF, close) are
sent in order with the frames. Whatever arrives is handed to the target's callbacks as it comes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tamesu.errors import TargetError
from tamesu.wire.connect import open_websocket, websocket_closed

if TYPE_CHECKING:
    from tamesu.wire.connect import ConnectPolicy
    from tamesu.wire.wire_context import WireContext

__all__ = ["AudioSocket"]

MAX_QUEUED = 500
"""Frames (10 s of audio) waiting for a slow peer before the oldest are dropped."""


class AudioSocket:
    """One websocket of a call; ``on_text`` / ``on_binary`` get each message, ``on_close(code, reason)`` the end."""

    def __init__(
        self,
        ctx: WireContext,
        policy: ConnectPolicy,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        on_text: Callable[[str], None],
        on_binary: Callable[[bytes], None],
        on_close: Callable[[int | None, str], None],
    ) -> None:
        self.ctx = ctx
        self.policy = policy
        self.url = url
        self.headers = headers or {}
        self.on_text = on_text
        self.on_binary = on_binary
        self.on_close = on_close
        self.conn: Any = None
        self.dropped = 0
        self.sent = 0
        self._out: deque[str | bytes] = deque()
        self._ready = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._tasks: list[asyncio.Task[None]] = []

    async def connect(self) -> None:
        """Open the socket (retrying refusals and 5xx per ``connect:``) and start reading and writing."""
        self.conn = await open_websocket(
            self.ctx, self.policy, self.url, headers=self.headers, compression=None
        )
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read()), loop.create_task(self._write())]

    def queue(self, item: str | bytes) -> None:
        """Send ``item`` after what is queued, without waiting (the pump's frames, mark echoes)."""
        if len(self._out) >= MAX_QUEUED:
            self._out.popleft()
            self.dropped += 1
        self._out.append(item)
        self._drained.clear()
        self._ready.set()

    async def send(self, item: str | bytes) -> None:
        """Send ``item`` after what is queued and wait until it is written."""
        from websockets.exceptions import ConnectionClosed

        await self.flush()
        try:
            await self.conn.send(item)
        except ConnectionClosed:
            raise TargetError(f"the agent closed the websocket at {self.url}") from None

    async def flush(self) -> None:
        """Wait until the queued items are written (or the writer has stopped)."""
        if self._out and self._tasks and not self._tasks[1].done():
            writer = self._tasks[1]
            drained = asyncio.ensure_future(self._drained.wait())
            await asyncio.wait({drained, writer}, return_when=asyncio.FIRST_COMPLETED)
            drained.cancel()

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        code: int | None = None
        reason = ""
        try:
            async for frame in self.conn:
                if isinstance(frame, bytes):
                    self.on_binary(frame)
                else:
                    self.on_text(frame)
        except ConnectionClosed:
            pass
        except Exception as exc:  # a broken socket ends the call; the session reports it
            reason = f"{type(exc).__name__}: {exc}"
        if getattr(self.conn, "close_code", None) is not None:
            code, closed_why = websocket_closed(self.conn, self.ctx.limits)
            reason = closed_why or reason
        self.on_close(code, reason)

    async def _write(self) -> None:
        from websockets.exceptions import ConnectionClosed

        out = self._out
        try:
            while True:
                await self._ready.wait()
                self._ready.clear()
                while out:
                    await self.conn.send(out.popleft())
                    self.sent += 1
                self._drained.set()
        except ConnectionClosed:
            return

    async def close(self, *last: str | bytes) -> None:
        """Send ``last`` (a hangup message) if the socket is still open, then close it; never raises."""
        if self.conn is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), 1.0)
        for item in last:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.send(item), 1.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.conn.close(), 2.0)
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if tasks:
            # waited for, not awaited: a cancelled task's error would hold this frame (and the
            # socket, and the target through its callbacks) in a reference cycle
            await asyncio.wait(tasks)
