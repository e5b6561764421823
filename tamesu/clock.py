"""Time as an injected object, so timing tests can run on a virtual clock."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["Clock", "MonotonicClock", "VirtualClock"]


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the clock started."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """Real time, measured from construction."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self.started_wall = time.time()

    def now(self) -> float:
        return time.monotonic() - self._t0

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class VirtualClock:
    """A clock that only moves when told to or when every sleeper is waiting on it."""

    def __init__(self) -> None:
        self._now = 0.0
        self.started_wall = 0.0

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds

    async def sleep(self, seconds: float) -> None:
        self._now += max(0.0, seconds)
        await asyncio.sleep(0)
