"""A load profile as functions of time: the load level, arrival times, the calls to keep in flight.

Everything here is pure arithmetic on seconds since the test started, so the driver's pacing is
tested on a virtual clock and a resumed test picks the shape up where it stopped (``offset``).
Arrivals of a varying rate come from the time-rescaling of a Poisson process: the next call
arrives once the integral of the rate since the last one reaches an exponential draw (or exactly
1 for evenly spaced arrivals).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tamesu.config.load_profile import LoadProfile

__all__ = ["ArrivalSchedule", "level_at", "target_in_flight"]

_STEP = 0.01
"""Seconds per integration step of a varying rate; a constant rate is exact within a step."""


def level_at(profile: LoadProfile, t: float) -> float:
    """The load at ``t`` seconds as a multiple of full load (0 before the ramp, above 1 in a spike)."""
    if t < 0:
        return 0.0
    total = profile.seconds("duration")
    if profile.shape == "ramp":
        return min(1.0, t / total) if total else 1.0
    ramp = profile.seconds("ramp_up") or 0.0
    level = min(1.0, t / ramp) if ramp > 0 else 1.0
    spike = profile.spike_window()
    if spike is not None and spike[0] <= t < spike[1]:
        level *= spike[2]
    return level


def target_in_flight(profile: LoadProfile, t: float) -> int:
    """Concurrency mode: the calls to hold in flight at ``t`` (any load above zero is at least one call)."""
    return max(0, math.ceil(level_at(profile, t) * profile.level - 1e-9))


class ArrivalSchedule:
    """Rate mode: the times calls arrive, from ``offset`` seconds into the test on.

    ``seed`` makes Poisson arrivals reproducible. The schedule ends at the profile's duration
    (the call count is the driver's business, since shed and resumed calls count too).
    """

    def __init__(self, profile: LoadProfile, *, seed: int | None = None, offset: float = 0.0) -> None:
        self.profile = profile
        self.rate = profile.level
        self.end = profile.seconds("duration")
        self.poisson = profile.arrivals == "poisson"
        self._random = random.Random(seed)
        self._offset = offset

    def _draw(self) -> float:
        return self._random.expovariate(1.0) if self.poisson else 1.0

    def next_after(self, t: float) -> float | None:
        """The first arrival after ``t``, or None when the arrivals are over."""
        target = self._draw()
        acc, now = 0.0, t
        while self.end is None or now < self.end:
            rate = self.rate * level_at(self.profile, now + _STEP / 2)
            if rate > 0 and acc + rate * _STEP >= target:
                at = now + (target - acc) / rate
                return at if self.end is None or at < self.end else None
            acc += rate * _STEP
            now += _STEP
            if self.end is None and rate <= 0 and now - t > 3600:
                return None
        return None

    def __iter__(self) -> Iterator[float]:
        """Arrival times from ``offset`` on; a test at full load from the start has a call at 0."""
        t: float | None = self._offset
        if level_at(self.profile, self._offset) <= 0 or self._offset > 0:
            t = self.next_after(self._offset)
        while t is not None:
            yield t
            t = self.next_after(t)
