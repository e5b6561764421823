"""The 20 ms heartbeat of every call in the process: it ticks the lanes.

A phone line never stops: every 20 ms the caller's handset sends a frame (speech, tones, or the
silence and noise between them) and plays a frame of whatever the agent sent. One ``FramePump``
per event loop does this for all its calls: calls that share a wire format and a line model sit
in the same ``Lane``, and each tick every lane sends one ``AudioBatch`` through its stages
(caller, line, transport, listener, recorder; see ``lane``), so the per-call cost of a frame is a
few microseconds and a thousand calls fit in one core. While it ticks, the pump also decides when
the cycle collector runs (``collector``): in the slack after a tick, never in the middle of one.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable

import numpy as np

from tamesu.kernel.messages import Message

from .collector import collector
from .lane import CallAudio, Lane
from .stage import FRAME_S, LaneKey

__all__ = ["FRAME_S", "FramePump"]

_CAPACITY = (8, 32, 128)
"""Slots of the first, second, ... lane of one wire format (a single call costs an 8-slot step)."""
_RESYNC_S = 1.0
"""A pump this far behind (a stalled process) starts afresh instead of bursting the backlog out."""
_LATE_RING = 1 << 16
_SLACK_S = 0.005
"""Time left before the next tick for the collector's paced step to run now."""


class FramePump:
    """The process's (event loop's) shared ticker; ``shared()`` gives the running loop's pump.

    ``lateness`` keeps how late each tick started (seconds), the figure a real-time claim rests on.
    With ``ticker=False`` nothing ticks by itself: the caller calls ``tick`` (tests step a call frame
    by frame this way, on virtual time). ``boundary`` (tests) encodes and decodes every message on
    its way into a stage, as if each stage sat in another process.
    """

    def __init__(self, *, ticker: bool = True, boundary: Callable[[Message], Message] | None = None) -> None:
        self.ticker = ticker
        self.boundary = boundary
        self.lanes: dict[LaneKey, list[Lane]] = {}
        self.calls = 0
        self.ticks = 0
        self.resyncs = 0
        self.failures: list[str] = []
        self._late = np.zeros(_LATE_RING, dtype=np.float32)
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def shared(cls) -> FramePump:
        loop = asyncio.get_running_loop()
        pump = _PUMPS.get(loop)
        if pump is None:
            pump = _PUMPS[loop] = cls()
        return pump

    def attach(self, call: CallAudio, *, t0: float) -> None:
        """Start ticking ``call``; its frame 0 is sent on the next tick and dated ``t0`` on the run's clock."""
        lanes = self.lanes.setdefault(call.key, [])
        lane = next((lane for lane in lanes if lane.free), None)
        if lane is None:
            capacity = _CAPACITY[min(len(lanes), len(_CAPACITY) - 1)]
            lane = Lane(call.key, capacity, boundary=self.boundary)
            lanes.append(lane)
        call.t0 = t0
        lane.attach(call)
        self.calls += 1
        if self.ticker and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._run(), name="tamesu-frame-pump")

    def detach(self, call: CallAudio) -> None:
        """Stop ticking ``call`` (idempotent); the pump stops when no call is left."""
        lane = call.lane
        if lane is None:
            return
        lane.detach(call)
        self.calls -= 1
        if not lane.active:
            lanes = self.lanes.get(lane.key, [])
            if lane in lanes and len(lanes) > 1:
                lanes.remove(lane)

    def lateness(self) -> np.ndarray:
        """How late each recorded tick started, in seconds (the last 65536 ticks)."""
        return self._late[: min(self.ticks, _LATE_RING)].copy()

    def reset_stats(self) -> None:
        self.ticks = 0
        self.resyncs = 0

    def tick(self) -> None:
        """One 20 ms step of every call (the ticker calls it; tests may call it directly).

        A lane whose step fails (a wire or a call raised) skips that frame; the other lanes, and
        the next frame, go on, and ``failures`` keeps the last errors for the calls to report.
        """
        for lanes in list(self.lanes.values()):
            for lane in lanes:
                if lane.active:
                    try:
                        lane.tick()
                    except Exception as exc:  # one bad wire must not stop every call's audio
                        self.failures.append(f"{type(exc).__name__}: {exc}")
                        del self.failures[:-10]

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        collector.hold()
        try:
            while self.calls > 0:
                now = loop.time()
                if now - due > _RESYNC_S:
                    self.resyncs += 1
                    due = now
                self._late[self.ticks % _LATE_RING] = max(0.0, now - due)
                self.ticks += 1
                self.tick()
                due += FRAME_S
                collector.step(slack=due - loop.time() > _SLACK_S)
                await asyncio.sleep(max(0.0, due - loop.time()))
        finally:
            collector.release()


_PUMPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FramePump] = weakref.WeakKeyDictionary()
