"""The capacity search: how many calls in flight the agent takes before a gate breaks.

The search holds a level of calls in flight for one step (``CapacitySearch``'s rule: at least
``step_calls`` calls and ``step_seconds``), judges the step's calls by the load test's gates, and
raises the level by ``factor`` until a step breaks; then it bisects between the last level that
held and the first that broke until they are ``precision`` apart. Between steps the agent is left
idle for ``cool_down``. A step whose errors are far over their gate stops at once; a step during
which tamesu's own process was the bottleneck (its CPU saturated) ends the search without an
answer about the agent, since a higher level would measure the driver, not the agent.

Each step is one ``LoadDriver`` run over the same placement, its calls numbered after the last
step's and its times on one timeline, so calls.jsonl and results.jsonl hold the whole search.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tamesu.load.gates import evaluate_gates
from tamesu.metrics import percentile
from tamesu.stats import wilson_interval

if TYPE_CHECKING:
    from tamesu.clock import Clock
    from tamesu.config.load_profile import CapacitySearch
    from tamesu.load.driver import LoadDriver, LoadOutcome
    from tamesu.load.gates import GateResult, Gates
    from tamesu.load.samples import CallSample, LoadStats

__all__ = ["CapacityOutcome", "CapacitySearcher", "CpuMeter", "Level", "StepRule"]

DRIVER_CPU_LIMIT = 0.9
"""The share of one core tamesu's own process may use during a step before the step is held to
measure the driver rather than the agent."""
WORKER_START_S = 60.0
"""How long the first reading waits for Ray workers that are still starting."""
_ABORT_AFTER = 5
"""Calls a step makes before its error rate may stop it early."""


@dataclass(frozen=True)
class StepRule:
    """When a step has settled, when it must stop at once, and the pause after it."""

    calls: int
    seconds: float
    abort_error_rate: float
    cool_down: float

    @classmethod
    def of(cls, search: CapacitySearch, gates: Gates) -> StepRule:
        from tamesu.durations import parse_duration

        abort = search.abort_error_rate
        if abort is None:
            abort = max(0.5, 3 * gates.error_rate) if gates.error_rate is not None else 0.5
        return cls(
            calls=search.step_calls,
            seconds=parse_duration(search.step_seconds),
            abort_error_rate=min(1.0, abort),
            cool_down=parse_duration(search.cool_down),
        )

    def settled(self, stats: LoadStats, held: float) -> bool:
        return stats.finished >= self.calls and held >= self.seconds

    def far_over(self, stats: LoadStats) -> bool:
        rate = stats.error_rate()
        return stats.finished >= _ABORT_AFTER and rate is not None and rate > self.abort_error_rate


@dataclass
class Level:
    """One step: the level held and what its calls did."""

    concurrency: int
    calls: int
    passed: int
    pass_rate: float | None
    pass_interval: tuple[float, float] | None
    error_rate: float | None
    turn_latency_ms: dict[str, float | None]
    agent_faults: dict[str, int]
    gates: list[GateResult]
    seconds: float
    aborted: str | None = None
    """Why the step stopped before it settled (errors far over their gate)."""
    driver_cpu: float | None = None
    """The share of one core tamesu's own process used during the step."""
    workers_cpu: float | None = None
    """On Ray: the share of one core the busiest worker process used during the step."""

    @property
    def gates_passed(self) -> bool:
        return self.aborted is None and all(g.passed for g in self.gates)

    @property
    def broke(self) -> list[str]:
        """The gates this step crossed (error_rate when it was stopped for its errors)."""
        names = [g.name for g in self.gates if not g.passed]
        if self.aborted is not None:
            names = ["error_rate", *(n for n in names if n != "error_rate")]
        return names

    @property
    def driver_bound(self) -> bool:
        return any(
            share is not None and share >= DRIVER_CPU_LIMIT for share in (self.driver_cpu, self.workers_cpu)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "calls": self.calls,
            "pass_rate": self.pass_rate,
            "pass_interval": list(self.pass_interval) if self.pass_interval is not None else None,
            "error_rate": self.error_rate,
            "turn_latency_ms_p50": self.turn_latency_ms.get("p50"),
            "turn_latency_ms_p95": self.turn_latency_ms.get("p95"),
            "turn_latency_ms_p99": self.turn_latency_ms.get("p99"),
            "agent_faults": dict(self.agent_faults),
            "gates_passed": self.gates_passed,
            "broke": self.broke,
            "gates": [g.__dict__ for g in self.gates],
            "seconds": self.seconds,
            "aborted": self.aborted,
            "driver_cpu": self.driver_cpu,
            "workers_cpu": self.workers_cpu,
            "driver_bound": self.driver_bound,
        }


def level_of(
    concurrency: int, samples: Sequence[CallSample], gates: Gates, *, seconds: float, confidence: float = 0.95
) -> Level:
    """A step's figures and gates from its calls' samples."""
    finals = [s for s in samples if s.final]
    passed = sum(1 for s in finals if s.outcome == "passed")
    errors = sum(1 for s in finals if s.outcome == "error")
    n = len(finals)
    faults: dict[str, int] = {}
    for s in samples:
        for kind, count in s.agent_faults.items():
            faults[kind] = faults.get(kind, 0) + count
    latencies = [v for s in finals for _, v in s.turn_latency_ms]
    return Level(
        concurrency=concurrency,
        calls=n,
        passed=passed,
        pass_rate=passed / n if n else None,
        pass_interval=wilson_interval(passed, n, confidence=confidence) if n else None,
        error_rate=errors / n if n else None,
        turn_latency_ms={f"p{p}": percentile(latencies, p) for p in (50, 95, 99)},
        agent_faults=dict(sorted(faults.items())),
        gates=evaluate_gates(gates, samples),
        seconds=seconds,
    )


class CpuMeter:
    """How busy tamesu's own processes were during a step, as shares of one core: the driver's
    process, and with a Ray placement the busiest of its workers (``cpu_seconds()``)."""

    def __init__(self, placement: Any = None) -> None:
        self.placement = placement
        self._wall = self._cpu = 0.0
        self._workers: list[float | None] = []
        self._started = False

    async def _worker_seconds(self, timeout: float) -> list[float | None]:
        probe = getattr(self.placement, "cpu_seconds", None)
        if probe is None:
            return []
        try:
            return list(await probe(timeout=timeout))
        except Exception:
            return []

    async def start(self) -> None:
        """Take a step's first reading; before the first step, workers still starting are waited for."""
        self._workers = await self._worker_seconds(2.0 if self._started else WORKER_START_S)
        self._started = True
        self._wall, self._cpu = time.monotonic(), time.process_time()

    async def shares(self) -> tuple[float, float | None]:
        """(the driver's share, the busiest worker's share or None) since ``start``."""
        wall = max(time.monotonic() - self._wall, 1e-9)
        driver = (time.process_time() - self._cpu) / wall
        now = await self._worker_seconds(2.0)
        busiest = [
            (after - before) / wall
            for before, after in zip(self._workers, now)
            if before is not None and after is not None
        ]
        return driver, (max(busiest) if busiest else None)


@dataclass
class CapacityOutcome:
    """What the search found; ``concurrency`` None when no level held (or none could be measured)."""

    concurrency: int | None
    levels: list[Level]
    broke: dict[str, Any] | None
    """{gate, concurrency}: the first gate crossed at the lowest level that broke."""
    stopped: str
    """bracketed, max_concurrency, max_duration, first_step_broke, driver_bound, interrupted."""
    outcomes: list[LoadOutcome] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        held = [lv.concurrency for lv in self.levels if lv.gates_passed]
        bound = next((lv.concurrency for lv in self.levels if lv.driver_bound), None)
        return {
            "concurrency": self.concurrency,
            "at_least": max(held, default=None),
            "broke": self.broke,
            "stopped": self.stopped,
            "driver_bound_at": bound,
            "levels": [lv.to_dict() for lv in sorted(self.levels, key=lambda lv: lv.concurrency)],
        }


StepDriver = Callable[[int], "LoadDriver"]
"""Builds the driver of one step at this many calls in flight (numbered after the steps before)."""


@dataclass
class CapacitySearcher:
    """Runs the steps; ``run()`` once, ``interrupt()`` any time."""

    search: CapacitySearch
    gates: Gates
    make_driver: StepDriver
    clock: Clock
    meter: CpuMeter = field(default_factory=CpuMeter)
    on_level: Callable[[Level], None] | None = None
    confidence: float = 0.95
    current: LoadDriver | None = None
    """The step running now (the live view reads its stats)."""

    def __post_init__(self) -> None:
        from tamesu.durations import parse_duration

        self.rule = StepRule.of(self.search, self.gates)
        self.max_seconds = parse_duration(self.search.max_duration)
        self._interrupted = False
        self._t0 = 0.0
        self._index = 0

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def interrupt(self) -> None:
        self._interrupted = True
        if self.current is not None:
            self.current.interrupt()

    def elapsed(self) -> float:
        return self.clock.now() - self._t0

    async def run(self) -> CapacityOutcome:
        """Step, then bisect, until the bracket is closed, the top is reached or the time is up."""
        self._t0 = self.clock.now()
        levels: dict[int, Level] = {}
        outcomes: list[LoadOutcome] = []
        good, bad = 0, None
        level = min(self.search.start, self.search.max_concurrency)
        stopped = "bracketed"
        while True:
            if self._interrupted:
                stopped = "interrupted"
                break
            if self.max_seconds - self.elapsed() < self.rule.seconds:
                stopped = "max_duration"
                break
            step = await self._step(level, outcomes)
            if step is None:
                stopped = "interrupted" if self._interrupted else "max_duration"
                break
            levels[level] = step
            if self.on_level is not None:
                self.on_level(step)
            if step.driver_bound:
                stopped = "driver_bound"
                break
            if step.gates_passed:
                good = max(good, level)
            else:
                bad = level if bad is None else min(bad, level)
            following = self.next_level(good, bad)
            if following is None:
                if bad is None:
                    stopped = "max_concurrency"
                elif good == 0:
                    stopped = "first_step_broke"
                break
            level = following
            await self.clock.sleep(self.rule.cool_down)
        return self._outcome(levels, outcomes, stopped)

    def next_level(self, good: int, bad: int | None) -> int | None:
        """The next level: the next step up until one broke, then the middle of the bracket."""
        top = self.search.max_concurrency
        if bad is None:
            if good >= top:
                return None
            return min(top, max(good + 1, math.ceil(good * self.search.factor)))
        if bad - good <= max(1, math.floor(good * self.search.precision)):
            return None
        return (good + bad) // 2

    async def _step(self, level: int, outcomes: list[LoadOutcome]) -> Level | None:
        """One step at ``level`` calls in flight; None when it was cut before its calls could count."""
        driver = self.make_driver(level)
        await self.meter.start()
        start = self.elapsed()
        deadline = self.max_seconds
        rule = self.rule

        def until(stats: LoadStats, t: float) -> bool:
            return rule.far_over(stats) or rule.settled(stats, t - start) or self.elapsed() >= deadline

        driver.until = until
        driver.start_at(self._index, start)
        self.current = driver
        watchdog = asyncio.ensure_future(self._cut_at(driver, deadline))
        try:
            outcome = await driver.run()
        finally:
            watchdog.cancel()
            self.current = None
            self._index = driver.next_index
        outcomes.append(outcome)
        if outcome.interrupted:
            return None
        step = level_of(
            level, outcome.samples, self.gates, seconds=outcome.elapsed - start, confidence=self.confidence
        )
        step.driver_cpu, step.workers_cpu = await self.meter.shares()
        if rule.far_over(outcome.stats) and not rule.settled(outcome.stats, step.seconds):
            step.aborted = f"error rate {outcome.stats.error_rate():.0%} over {rule.abort_error_rate:.0%}"
        return step

    async def _cut_at(self, driver: LoadDriver, deadline: float) -> None:
        """Interrupt the step when the search's time is up (calls still in flight are dropped)."""
        wait = deadline - self.elapsed()
        if wait > 0:
            await self.clock.sleep(wait)
        driver.interrupt()

    def _outcome(
        self, levels: dict[int, Level], outcomes: list[LoadOutcome], stopped: str
    ) -> CapacityOutcome:
        ordered = sorted(levels.values(), key=lambda lv: lv.concurrency)
        broken = [lv for lv in ordered if not lv.gates_passed and not lv.driver_bound]
        held = [lv.concurrency for lv in ordered if lv.gates_passed]
        first = broken[0] if broken else None
        capacity = max((c for c in held if first is None or c < first.concurrency), default=None)
        if stopped == "driver_bound":
            capacity = None
        broke = {"gate": first.broke[0], "concurrency": first.concurrency} if first is not None else None
        return CapacityOutcome(
            concurrency=capacity, levels=ordered, broke=broke, stopped=stopped, outcomes=outcomes
        )
