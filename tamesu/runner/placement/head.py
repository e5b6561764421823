"""Whether a Ray cluster's head node still answers, told without Ray.

When the head dies, the driver's Ray calls do not fail: they wait until Ray's core gives up after
a minute and ends the process (exit 1, a page of C++ log). A TCP connection to the head's GCS
port says sooner and plainly: refused, or no answer, means the head is gone. ``HeadWatch`` looks
every ``HEAD_CHECK_S`` and calls ``on_lost`` once the head has been silent for ``grace`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

__all__ = ["HEAD_CHECK_S", "HEAD_GRACE_S", "HeadWatch", "answers"]

HEAD_CHECK_S = 1.0
"""Seconds between two looks at the head (and the longest one look waits)."""
HEAD_GRACE_S = 10.0
"""Seconds the head may go unanswered before the cluster counts as lost."""


async def answers(host: str, port: int) -> bool:
    """Whether a TCP connection to ``host:port`` opens within ``HEAD_CHECK_S``."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), HEAD_CHECK_S)
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


class HeadWatch:
    """The head of one cluster, at its GCS ``host:port``."""

    def __init__(self, host: str, port: int, *, grace: float = HEAD_GRACE_S) -> None:
        self.host = host
        self.port = port
        self.grace = grace
        self.lost = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def watch(self, on_lost: Callable[[float], None]) -> None:
        """Look until the head has been silent for ``grace`` seconds, then ``on_lost(silent_for)``."""
        silent_since: float | None = None
        while True:
            if await answers(self.host, self.port):
                silent_since = None
            else:
                now = time.monotonic()
                silent_since = now if silent_since is None else silent_since
                if now - silent_since >= self.grace:
                    self.lost = True
                    on_lost(now - silent_since)
                    return
            await asyncio.sleep(HEAD_CHECK_S)

    async def answering(self) -> bool:
        """Whether the head answers, waiting while it does not until it does (True) or the watch
        has declared it lost (False)."""
        while not self.lost:
            if await answers(self.host, self.port):
                return True
            await asyncio.sleep(HEAD_CHECK_S)
        return False
