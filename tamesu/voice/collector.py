"""The cycle collector, paced by the frame pump while calls are in flight.

CPython collects when allocations pass its thresholds, inside whatever code happened to
allocate. In a process that carries many calls, a collection of the old generation walks every
object of every call in flight: 60 ms of CPU for 1,000 calls on this project's 2-core machines,
more on a busy one, during which no call gets its frame; the pump then needs several ticks to
catch up, so one collection makes dozens of late frames. While a pump ticks, automatic
collection is off and the pump collects in the slack right after a tick instead: the young
generations when their small, fixed thresholds are passed (each step a few thousand objects),
and the whole heap only once the process's memory has grown by ``old_growth`` blocks since the
pump took over or since the last full collection. Calls that end free themselves without the
collector, so that happens only when something leaks reference cycles, or when the process
carries far more calls than it did when the pump started. When the last pump stops, automatic
collection comes back. A process that had turned the collector off itself is left as it was.
"""

from __future__ import annotations

import gc
import sys
import threading

__all__ = ["PacedCollector", "collector"]

YOUNG = 700
"""Allocations (less deallocations) of tracked objects between two young collections."""
MIDDLE = 5
"""Young collections per collection of the middle generation."""
OLD_GROWTH = 1_000_000
"""Memory blocks (``sys.getallocatedblocks``: small objects, about 60 MB) the process may gain
while calls are in flight before the whole heap is collected: some 5,000 calls' worth of live
objects (a call holds about 190 blocks), and the bound on a leak of cycles."""
BACKLOG = 8
"""A young collection waits for slack unless this many thresholds' worth of objects piled up."""


class PacedCollector:
    """The process's collector while pumps tick (``hold`` / ``release``) and the pumps' paced steps."""

    def __init__(self, *, old_growth: int = OLD_GROWTH) -> None:
        self.old_growth = old_growth
        self.holders = 0
        self.owned = False
        """Automatic collection was on and this collector turned it off."""
        self.collections = [0, 0, 0]
        self._lock = threading.Lock()
        self._young = 0
        self._base = 0
        """Memory blocks at the start, or after the last full collection (the least seen since)."""

    def hold(self) -> None:
        """A pump starts ticking: the first one turns automatic collection off (if it was on)."""
        with self._lock:
            self.holders += 1
            if self.holders == 1 and gc.isenabled():
                gc.disable()
                self.owned = True
                self._young = 0
                self._base = sys.getallocatedblocks()

    def release(self) -> None:
        """A pump stops: the last one turns automatic collection back on (if it turned it off)."""
        with self._lock:
            self.holders = max(0, self.holders - 1)
            if self.holders == 0 and self.owned:
                self.owned = False
                gc.enable()

    def step(self, *, slack: bool = True) -> int | None:
        """Collect what is due now; ``slack``: the next tick is far enough away for it. The
        generation collected, or None."""
        if not self.owned:
            return None
        pending = gc.get_count()[0]
        if pending < YOUNG or (not slack and pending < BACKLOG * YOUNG):
            return None
        generation = 0
        self._young += 1
        if self._young >= MIDDLE:
            self._young = 0
            generation = self._old_due()
        gc.collect(generation)
        self.collections[generation] += 1
        if generation == 2:
            self._base = sys.getallocatedblocks()
        return generation

    def _old_due(self) -> int:
        """1, or 2 when memory has grown past the bound (counting blocks costs ~0.1 ms)."""
        blocks = sys.getallocatedblocks()
        if blocks < self._base:
            self._base = blocks  # calls ended, or a collection freed memory: count growth from here
        return 2 if blocks - self._base > self.old_growth else 1


collector = PacedCollector()
"""The one collector of the process (every event loop's pump shares it)."""
