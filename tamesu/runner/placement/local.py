"""The local placement: every run's actors are asyncio tasks in this process."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from tamesu.kernel.outcome import GraphOutcome
from tamesu.runner.grading import GradedRun

if TYPE_CHECKING:
    from tamesu.actors.graph import Ready
    from tamesu.actors.services import RunServices
    from tamesu.run_spec import RunSpec
    from tamesu.runner.grading import OutcomeSink

__all__ = ["LocalPlacement"]


class LocalPlacement:
    """Runs graphs in the current event loop, sharing one ``RunServices``.

    ``encode_boundary=True`` encodes and decodes every message as it enters an actor, as if it
    crossed a process: tests use it so that what passes locally also passes on Ray.
    """

    calls_ready: ClassVar[bool] = True
    """The graph runs here: ``ready`` (the run's hooks) is called between its remote agents and its target."""
    in_process: ClassVar[bool] = True
    """Runs share this process with the scheduler: a suite's remote agents, served here for its
    lifetime, give each run its own exchanges (``tamesu.remote_agents.suite_agents``)."""
    bounds_itself: ClassVar[bool] = True
    """A run here ends within its timeout plus the graph's stop grace (the graph enforces both in
    this process), so the scheduler needs no backstop of its own."""

    def __init__(
        self, services: RunServices, *, encode_boundary: bool = False, owns_services: bool = False
    ) -> None:
        self.services = services
        self.encode_boundary = encode_boundary
        self.owns_services = owns_services
        self.active: dict[str, GradedRun] = {}
        """The runs going now, by run id (their ``outcome()`` shows progress)."""

    async def run(
        self,
        spec: RunSpec,
        *,
        secrets: Mapping[str, str] | None = None,
        timeout: float | None = None,
        sink: OutcomeSink | None = None,
        ready: Ready | None = None,
    ) -> GraphOutcome:
        run = GradedRun(spec, self.services, secrets=secrets, encode_boundary=self.encode_boundary)
        self.active[spec.run_id] = run
        try:
            return await run.run(timeout=timeout, sink=sink, ready=ready)
        finally:
            self.active.pop(spec.run_id, None)

    async def aclose(self) -> None:
        """Close the services when this placement made them (``owns_services``)."""
        if self.owns_services:
            await self.services.aclose()
