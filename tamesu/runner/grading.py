"""A run's graph, then its grading: the one path both placements take.

The graph (``tamesu.actors.graph``) wires and drives a run; once it ended without an error, the
graph hands what it ``Played`` to this module, still within the run's time limit, and the run is
measured (its metrics and costs) and graded (the spec's assertions, the red-team detectors, the
target's own checks). Grading runs where the graph ran: in this process for the local placement,
inside the Ray worker for the Ray placement, so judge-model calls spread across the workers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from tamesu.actors.graph import RunGraph
from tamesu.assertions.evaluation import AssertionContext, evaluate
from tamesu.costs import run_costs
from tamesu.kernel.outcome import AssertionResult, GraphOutcome
from tamesu.kernel.transcript import turn_view
from tamesu.metrics import compute_metrics

if TYPE_CHECKING:
    from tamesu.actors.graph import Played, Ready
    from tamesu.actors.services import RunServices
    from tamesu.run_spec import NamedAssertion, RunSpec

__all__ = ["GradedRun", "OutcomeSink", "run_and_grade"]

OutcomeSink = Callable[[GraphOutcome], None]
"""Called with the partial outcome (``error_kind="cancelled"``) of a run its caller cancels
(its own timeout, Ctrl-C), before ``CancelledError`` propagates."""


class GradedRun:
    """One run: its graph wired and driven, then measured and graded in this process;
    ``outcome()`` is readable at any time, also mid-run (with the metrics so far)."""

    def __init__(
        self,
        spec: RunSpec,
        services: RunServices,
        *,
        secrets: Mapping[str, str] | None = None,
        encode_boundary: bool = False,
    ) -> None:
        self.spec = spec
        self.services = services
        self.graph = RunGraph(spec, services, secrets=secrets, encode_boundary=encode_boundary)
        self.results: list[AssertionResult] = []
        self._graded = False
        """The run ended and was graded: the transcript and its metrics change no more."""

    async def run(
        self, *, timeout: float | None = None, sink: OutcomeSink | None = None, ready: Ready | None = None
    ) -> GraphOutcome:
        """Drive the run to its end (or to ``timeout`` seconds, grading included), grade it, and
        return its outcome; a cancelled run hands its partial outcome to ``sink`` first."""
        try:
            await self.graph.run(timeout=timeout, ready=ready, then=self._grade)
        except asyncio.CancelledError:
            if sink is not None:
                sink(self.outcome())
            raise
        return self.outcome()

    def outcome(self) -> GraphOutcome:
        """The outcome so far, redacted; a run that failed (even after grading) is measured afresh."""
        graded = self._graded and self.graph.error is None
        if not graded:
            self._metrics(self.graph.played())
        return self.graph.outcome(self.results, final=graded)

    async def _grade(self, played: Played) -> None:
        self._metrics(played)
        self.results = await self._assertions(played)
        if played.ledger is not None and played.ledger.calls:
            # Judges spend too: the run's llm_* figures (and so the budget) include grading.
            played.transcript.metrics.update(played.ledger.metrics())
            played.transcript.metrics.update(self._costs(played, played.transcript.metrics))
        self._graded = True

    def _metrics(self, played: Played) -> None:
        """Fill ``transcript.metrics`` afresh: what the transcript gives, what the run reported
        (a target's own measurement wins), and the run's model spend."""
        metrics: dict[str, float] = {}
        try:
            metrics.update(compute_metrics(played.transcript))
        except Exception:
            pass
        metrics.update(played.reported_metrics)
        if played.ledger is not None and played.ledger.calls:
            metrics.update(played.ledger.metrics())
        metrics.update(self._costs(played, metrics))
        played.transcript.metrics = metrics

    def _costs(self, played: Played, metrics: Mapping[str, float]) -> dict[str, float]:
        return run_costs(
            metrics,
            prices=self.spec.prices,
            target_name=self.spec.target_name,
            target_type=str(getattr(self.spec.target, "type", "")),
            speech=played.speech,
        )

    async def _assertions(self, played: Played) -> list[AssertionResult]:
        """The spec's assertions, then the red-team detectors, then the target's own checks."""
        ctx = AssertionContext(
            transcript=played.transcript,
            scope=played.scope,
            suite_dir=_path(self.spec.suite_dir),
            http=self.services.http,
            update_golden=self.services.update_golden,
            target_type=str(self.spec.target.type),
            models=played.router,
            ledger=played.ledger,
            redactor=self.services.redactor,
            project_dir=_path(self.spec.project_dir) if self.spec.project_dir else None,
        )
        named = self.spec.assertions
        if len(named) == 1:
            results = [await _assert(named[0], ctx)]
        else:
            results = list(await asyncio.gather(*(_assert(item, ctx) for item in named)))
        attack = self.spec.attack
        if attack is not None:
            from tamesu.redteam.detectors import run_detectors

            results += await run_detectors(attack, ctx)
        results += played.adapter_results
        return results


async def run_and_grade(
    spec: RunSpec,
    services: RunServices,
    *,
    secrets: Mapping[str, str] | None = None,
    timeout: float | None = None,
    sink: OutcomeSink | None = None,
    ready: Ready | None = None,
    encode_boundary: bool = False,
) -> GraphOutcome:
    """One spec run and graded to its outcome (``tamesu.actors.graph`` tells of timeouts and cancellation)."""
    run = GradedRun(spec, services, secrets=secrets, encode_boundary=encode_boundary)
    return await run.run(timeout=timeout, sink=sink, ready=ready)


async def _assert(named: NamedAssertion, ctx: AssertionContext) -> AssertionResult:
    on_turn = getattr(named.item, "on_turn", None)
    if on_turn is None:
        return await evaluate(named.kind, named.spec, ctx, name=named.name)
    transcript = ctx.transcript
    view = turn_view(transcript, on_turn)
    if view is None:
        count = len(transcript.agent_turns())
        result = AssertionResult(
            name=named.name,
            kind=named.kind,
            passed=False,
            message=f"on_turn {on_turn}: the run has {count} agent turn(s)",
        )
    else:
        result = await evaluate(named.kind, named.spec, replace(ctx, transcript=view), name=named.name)
    result.on_turn = on_turn
    return result


_path = lru_cache(maxsize=256)(Path)
"""A suite's directories are few and asked for on every run."""
