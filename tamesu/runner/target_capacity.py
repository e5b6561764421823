"""How many sessions each target may hold at once, learnt from the target's own refusals.

Every target starts at ``per_target`` (the concurrency unless ``--per-target`` caps it). When a
target turns a session away because it is full (a ``CapacityRefused``: websocket close 1013, HTTP
429 / 503, SIP 503), its limit drops to the sessions it was holding when it refused, for the rest
of the invocation, and the refused run waits for a slot of that target (and for the agent's
``Retry-After``) before it starts again; it becomes an error only when its own timeout runs out
first. A target refused with nothing else in flight keeps a limit of one and its run is tried
again after a growing pause, for ``ALONE_LIMIT`` at most until one of its runs gets a session.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.run_spec import RunSpec

__all__ = ["ALONE_LIMIT", "HeldConcurrency", "TargetCapacity", "TargetKey", "target_key"]

TargetKey = tuple[str, str]
"""(suite path, target name): one target of one suite."""

_PAUSE = 0.5
_MAX_PAUSE = 5.0
"""Pauses before trying a target again that refused with nothing else in flight (doubling)."""
ALONE_LIMIT = 15.0
"""Seconds a target may go on refusing while no other run of it is in flight before its refusals
are errors again: refusing even one session at a time is no limit of tamesu's making (a service
that is down answers 503 too), and waiting out every run's timeout would hide it for hours."""


def target_key(spec: RunSpec) -> TargetKey:
    return (spec.suite_path, spec.target_name)


@dataclass
class HeldConcurrency:
    """What the invocation learnt of one target that refused sessions for capacity."""

    suite: str
    target: str
    started_at: int
    """Its limit at the start (``per_target``)."""
    held: int
    """The limit it ended with: the most sessions it accepted at once before it refused."""
    refusals: int

    def to_dict(self) -> dict[str, object]:
        return {
            "suite": self.suite,
            "target": self.target,
            "concurrency": self.started_at,
            "held": self.held,
            "refusals": self.refusals,
        }

    def note(self) -> str:
        return (
            f"target {self.target} ({self.suite}) refused sessions for capacity {self.refusals} "
            f"time{'s' if self.refusals != 1 else ''}: it held {self.held} at once "
            f"(of {self.started_at} allowed), and its runs waited for a free slot"
        )


class TargetCapacity:
    """The sessions in flight per target and each target's current limit."""

    def __init__(self, per_target: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_target = max(1, per_target)
        self.clock = clock
        self.load: Counter[TargetKey] = Counter()
        self._limits: dict[TargetKey, int] = {}
        self._not_before: dict[TargetKey, float] = {}
        self._pauses: dict[TargetKey, float] = {}
        self._refusals: Counter[TargetKey] = Counter()
        self._names: dict[TargetKey, str] = {}
        self._waiting: Counter[TargetKey] = Counter()
        self._alone_since: dict[TargetKey, float] = {}
        self._freed = asyncio.Event()

    def limit(self, key: TargetKey) -> int:
        return self._limits.get(key, self.per_target)

    def has_room(self, key: TargetKey) -> bool:
        """Whether a new run of the target may start: a free slot no refused run is waiting for."""
        return self._waiting[key] == 0 and self._room(key)

    def _room(self, key: TargetKey) -> bool:
        return self.load[key] < self.limit(key)

    async def ready(self, spec: RunSpec, deadline: float) -> None:
        """Wait out the target's Retry-After (if any) before a run's attempt talks to it."""
        wait = min(self._not_before.get(target_key(spec), 0.0), deadline) - self.clock()
        if wait > 0:
            await asyncio.sleep(wait)

    def take(self, key: TargetKey) -> None:
        self.load[key] += 1

    def give(self, key: TargetKey) -> None:
        self.load[key] -= 1
        self._freed.set()

    def refusal(self, spec: RunSpec, result: RunResult, retryable: bool) -> bool:
        """Whether an attempt's result is the target turning the session away for capacity: a
        ``CapacityRefused``, or, from a target that already did so in this invocation, a retryable
        failure before the conversation began (a one-session server restarting between sessions
        refuses connections for a moment)."""
        if result.error_kind == "capacity":
            return True
        known = self._refusals[target_key(spec)] > 0
        return known and retryable and result.error_kind == "agent" and result.turns == 0

    def refused(self, spec: RunSpec, retry_after: float | None) -> str | None:
        """``spec``'s session was refused for capacity while it held one of its target's slots: lower
        the target's limit to the others in flight (at least one) and set when it may be asked again.
        Returns a line to tell when the limit went down."""
        key = target_key(spec)
        self._names[key] = spec.suite
        self._refusals[key] += 1
        before = self.limit(key)
        others = self.load[key] - 1
        now = self.clock()
        if others >= 1:
            self._pauses.pop(key, None)
            wait = retry_after or 0.0
        else:
            wait = max(retry_after or 0.0, self._pauses.get(key, _PAUSE))
            self._pauses[key] = min(_MAX_PAUSE, self._pauses.get(key, _PAUSE) * 2)
            self._alone_since.setdefault(key, now)
        self._not_before[key] = max(self._not_before.get(key, now), now + wait)
        lowered = max(1, min(before, others))
        if lowered >= before:
            return None
        self._limits[key] = lowered
        return (
            f"target {spec.target_name} refused a session for capacity: it now gets at most "
            f"{lowered} at once (was {before}) for the rest of this invocation"
        )

    def hopeless(self, spec: RunSpec) -> bool:
        """Whether the target has refused alone (no other run of it in flight) for ``ALONE_LIMIT``
        since it last served a session: then a refusal is the run's error."""
        since = self._alone_since.get(target_key(spec))
        return since is not None and self.clock() - since >= ALONE_LIMIT

    def served(self, spec: RunSpec) -> None:
        """A run of the target got its session: whatever it refused before was capacity."""
        key = target_key(spec)
        self._alone_since.pop(key, None)
        self._pauses.pop(key, None)

    async def wait_for_slot(self, spec: RunSpec, deadline: float) -> bool:
        """Give up ``spec``'s slot, wait until its target has room again and its Retry-After has
        passed, and take a slot back. False when ``deadline`` (on ``clock``) came first; the slot is
        taken back either way, so the caller gives it up as usual when the run ends."""
        key = target_key(spec)
        self.give(key)
        self._waiting[key] += 1
        try:
            while True:
                now = self.clock()
                ready_at = self._not_before.get(key, now)
                if self._room(key) and ready_at <= now:
                    return True
                if now >= deadline:
                    return False
                self._freed.clear()
                limit = min(deadline, ready_at if ready_at > now else deadline) - now
                try:
                    await asyncio.wait_for(self._freed.wait(), max(0.0, limit))
                except asyncio.TimeoutError:
                    pass
        finally:
            self._waiting[key] -= 1
            self.take(key)

    def held(self) -> list[HeldConcurrency]:
        """Every target that refused a session for capacity, with the limit it ended with."""
        return [
            HeldConcurrency(
                suite=self._names.get(key, key[0]),
                target=key[1],
                started_at=self.per_target,
                held=self.limit(key),
                refusals=n,
            )
            for key, n in self._refusals.items()
        ]
