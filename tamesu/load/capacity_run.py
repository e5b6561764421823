"""A capacity search as ``tamesu load`` runs it: one driver per step over one placement.

``CapacityRun`` builds each step's profile (a steady closed model at the step's level, no ramp,
bounded by the search's time), runs the suites' before_all / after_all once around all steps,
shows the step in flight in the live view, and folds the steps' outcomes into one ``LoadOutcome``
so the report, the history and the exit code read a search as they read any load test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tamesu.load.capacity import CapacityOutcome, CapacitySearcher, CpuMeter
from tamesu.load.driver import LoadOutcome
from tamesu.load.samples import LoadStats

if TYPE_CHECKING:
    from tamesu.clock import Clock
    from tamesu.config.load_profile import LoadProfile
    from tamesu.load.driver import LoadDriver
    from tamesu.load.gates import Gates

__all__ = ["CapacityRun", "capacity_exit_code", "step_profile"]


def step_profile(profile: LoadProfile, level: int) -> LoadProfile:
    """One step: ``level`` calls held in flight from its first moment, until the step rule (or the
    search's time) ends it; the arrival keys of the base profile do not apply."""
    assert profile.capacity is not None
    return profile.model_copy(
        update={
            "rate": None,
            "concurrency": level,
            "calls": None,
            "duration": profile.capacity.max_duration,
            "ramp_up": None,
            "shape": "steady",
            "spike": None,
        }
    )


class CapacityRun:
    """The search over drivers made by ``build`` (a LoadDriver for a profile, on ``clock``)."""

    def __init__(
        self,
        build: Callable[[LoadProfile], LoadDriver],
        profile: LoadProfile,
        gates: Gates,
        clock: Clock,
        *,
        meter: CpuMeter | None = None,
    ) -> None:
        assert profile.capacity is not None
        self.build = build
        self.profile = profile
        self.searcher = CapacitySearcher(
            profile.capacity,
            gates,
            make_driver=self._driver,
            clock=clock,
            meter=meter or CpuMeter(),
        )
        self._last: LoadDriver | None = None

    def _driver(self, level: int) -> LoadDriver:
        driver = self.build(step_profile(self.profile, level))
        driver.suite_hooks = False
        self._last = driver
        return driver

    def interrupt(self) -> None:
        self.searcher.interrupt()

    def snapshot(self) -> dict[str, Any]:
        """The live view's numbers: the step in flight (or the last one, during a cool-down)."""
        driver = self.searcher.current or self._last
        if driver is None:
            return LoadStats().snapshot(self.searcher.elapsed())
        snap = driver.stats.snapshot(driver.now())
        snap["level"] = driver.profile.concurrency
        return snap

    async def run(self) -> tuple[CapacityOutcome, LoadOutcome]:
        """The search's answer and all its calls as one outcome."""
        hooks = self.build(step_profile(self.profile, 1))
        await hooks.before_all()
        try:
            found = await self.searcher.run()
        finally:
            if not self.searcher.interrupted:
                await hooks.after_all()
        return found, merged(
            found.outcomes, elapsed=self.searcher.elapsed(), interrupted=found.stopped == "interrupted"
        )


def merged(outcomes: list[LoadOutcome], *, elapsed: float, interrupted: bool) -> LoadOutcome:
    """The steps' outcomes as one: every sample and final result, the first budget stop."""
    stats = LoadStats()
    for outcome in outcomes:
        for sample in outcome.samples:
            stats.add(sample)
        stats.shed += outcome.stats.shed
    return LoadOutcome(
        stats=stats,
        samples=list(stats.samples),
        results=[r for o in outcomes for r in o.results],
        elapsed=elapsed,
        interrupted=interrupted,
        budget_exceeded=next((o.budget_exceeded for o in outcomes if o.budget_exceeded), None),
        notes=[n for o in outcomes for n in o.notes],
    )


def capacity_exit_code(found: CapacityOutcome, outcome: LoadOutcome) -> int:
    """0 a capacity was found, 1 even the first step broke, 3 no answer about the agent (no call
    could be graded, or tamesu's own CPU was the limit), 4 budget, 130 interrupted."""
    if outcome.interrupted:
        return 130
    if outcome.budget_exceeded:
        return 4
    if not any(s.final and s.outcome != "error" for s in outcome.samples) and found.concurrency is None:
        return 3
    if found.stopped == "driver_bound":
        return 3
    return 0 if found.concurrency is not None else 1
