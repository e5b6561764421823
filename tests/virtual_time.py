"""An event loop on virtual time, for tests whose peers all live in the test's own event loop.

``loop.time()`` starts at 0 and moves only when the loop has nothing left to do: then it jumps to
the next timer instead of waiting for it. A call's 20 ms frames, an agent's 700 ms pause and a
turn's timeout all happen on this clock, so the timings a test reads are the same on an idle
machine and on a loaded one, and a five-second call takes as long as its CPU work. Two things are
waited for in real time with the clock stopped: work handed to a thread (``run_in_executor``:
speech engines, name lookups), and loopback bytes still on their way between two sockets of the
loop (the kernel may hand a loopback packet to its softirq thread instead of delivering it within
the sender's write). A thread started otherwise, or a peer in another process, is not waited for:
such tests stay on a plain loop.
"""

from __future__ import annotations

import asyncio
import selectors
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LoopClock", "VirtualTimeLoop"]

_POLL_S = 0.001
"""Real seconds between looks at loopback bytes still on their way (the clock stands still meanwhile)."""
_TCP_INFO = 232
_BYTES_RECEIVED = 128
_BYTES_SENT = 200
"""Offsets of ``tcpi_bytes_received`` and ``tcpi_bytes_sent`` in Linux's ``struct tcp_info`` (4.19+)."""


class _VirtualSelector(selectors.BaseSelector):
    """The real selector, asked without waiting; an idle wait becomes a jump of the virtual clock."""

    def __init__(self) -> None:
        self.real = selectors.DefaultSelector()
        self.now = 0.0
        self.threads = 0
        """Executor jobs not yet answered (they wake the loop through its self-pipe)."""

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self.real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self.real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self.real.modify(fileobj, events, data)

    def get_map(self) -> Any:
        return self.real.get_map()

    def close(self) -> None:
        self.real.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self.real.select(0)
        if ready or timeout == 0:
            return ready
        if self.threads or timeout is None:
            # a worker thread will answer, or nothing is scheduled: only the outside world moves
            return self.real.select(timeout)
        if _in_flight(self.real.get_map()):
            return self.real.select(min(timeout, _POLL_S))
        self.now += timeout
        return []


def _in_flight(registered: Any) -> bool:
    """Whether one TCP socket of the loop has sent bytes that its peer, also of the loop, has not
    yet received (both ends count the bytes, so this is exact where a delay would be a guess)."""
    sent: dict[tuple[Any, Any], int] = {}
    received: dict[tuple[Any, Any], int] = {}
    for key in list(registered.values()):
        sock = key.fileobj
        if not isinstance(sock, socket.socket) or sock.family not in (socket.AF_INET, socket.AF_INET6):
            continue
        if sock.type != socket.SOCK_STREAM:
            continue
        try:
            here, there = sock.getsockname(), sock.getpeername()
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO)
        except OSError:
            continue
        if len(info) < _BYTES_SENT + 8:
            continue
        sent[(here, there)] = struct.unpack_from("Q", info, _BYTES_SENT)[0]
        received[(here, there)] = struct.unpack_from("Q", info, _BYTES_RECEIVED)[0]
    return any(count > received.get((there, here), count) for (here, there), count in sent.items())


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` is virtual (see the module docstring)."""

    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(selector=self._virtual)

    def time(self) -> float:
        return self._virtual.now

    def stall(self, seconds: float) -> None:
        """The process stops for ``seconds`` (a pause of the whole interpreter): called from a task,
        the clock jumps while nothing else runs, and every socket's bytes wait meanwhile."""
        self._virtual.now += seconds

    def run_in_executor(self, executor: Any, func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        future = super().run_in_executor(executor, func, *args)
        self._virtual.threads += 1

        def answered(_: asyncio.Future[Any]) -> None:
            self._virtual.threads -= 1

        future.add_done_callback(answered)
        return future


class LoopClock:
    """A run clock that reads the running event loop's time (virtual on a ``VirtualTimeLoop``; the
    monotonic clock, as asyncio's own, anywhere else)."""

    def __init__(self) -> None:
        self._t0 = _loop_time()
        self.started_wall = 0.0

    def now(self) -> float:
        return _loop_time() - self._t0

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _loop_time() -> float:
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return time.monotonic()
