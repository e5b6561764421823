"""One run's attempts, the same for ``tamesu run``, ``tamesu load`` and a run submitted to a cluster.

An attempt is the run's ``before_each`` hooks, its graph through the placement (local asyncio or
Ray workers) under the run's timeout, then ``after_each``; its result is redacted, counted against
the budgets and handed to the caller to make durable. A retryable infrastructure error is tried
again up to the run's ``retries`` (never a failed assertion, never once the budget is spent or the
caller is stopping). The scheduler and the load driver differ only in when runs start and how
results are written; everything an attempt does is here, once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tamesu.clock import within
from tamesu.durations import format_duration
from tamesu.errors import BudgetExceeded, ClusterLost, TamesuError
from tamesu.run_spec import new_session
from tamesu.runner.hooks import hook_env, run_hooks
from tamesu.runner.results import redact_result
from tamesu.runner.suite_setup import Budget
from tamesu.runner.target_capacity import ALONE_LIMIT, target_key
from tamesu.runner.verdict import result_of

if TYPE_CHECKING:
    import httpx

    from tamesu.actors.graph import Ready
    from tamesu.kernel.outcome import AssertionResult, RunResult
    from tamesu.kernel.transcript import Transcript
    from tamesu.remote_agents.suite_agents import HeldRun
    from tamesu.run_spec import RunSpec
    from tamesu.runner.placement import Placement
    from tamesu.runner.suite_setup import SuiteSetup
    from tamesu.runner.target_capacity import TargetCapacity
    from tamesu.secrets import Redactor

__all__ = ["BACKSTOP", "AttemptSink", "Attempts", "hook_kwargs", "session_id"]

BACKSTOP = 15.0
"""Seconds past a run's timeout after which a placement that has not answered is given up on."""


def session_id(spec: RunSpec, setup: SuiteSetup | None) -> str:
    """The run's session id (``new_session``), made before the hooks so that they see it as
    $TAMESU_SESSION; the graph reads it from ``spec.session``."""
    from tamesu.templates import Scope

    scope = Scope({"vars": spec.vars}, parent=setup.scope if setup is not None else None)
    return new_session(spec.target, scope)


def hook_kwargs(
    setup: SuiteSetup,
    spec: RunSpec | None,
    env: dict[str, str],
    *,
    http: Any,
    redactor: Redactor | None,
    remote: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``run_hooks`` for a suite's hooks (a run's vars and session when
    given, and its remote agents' ``remote.…`` values once they are served)."""
    from tamesu.secrets import Redactor
    from tamesu.templates import Scope

    scope = setup.scope or Scope()
    if spec is not None:
        scope = Scope({"vars": spec.vars, "session": env.get("TAMESU_SESSION", "")}, parent=scope)
    for name, value in (remote or {}).items():
        scope.set(name, value)
    return {
        "scope": scope,
        "env": {**setup.env, **env},
        "suite_dir": setup.dir,
        "http": http,
        "redactor": redactor or Redactor(),
    }


class AttemptSink(Protocol):
    """Hears a run's attempts: each one's start (not a run's that never starts: its ``before_all``
    failed), then its redacted result to make durable."""

    def started(self, spec: RunSpec, attempt: int) -> None: ...

    async def finished(self, result: RunResult, transcript: Transcript | None) -> None:
        """Make the attempt durable; ``result.final`` is False when it will be tried again."""
        ...


@dataclass
class _Answer:
    transcript: Transcript | None
    results: list[AssertionResult]
    error: str | None = None
    kind: str | None = None
    retryable: bool = False
    retry_after: float | None = None


class Attempts:
    """Runs the attempts of runs through one placement, with the suites' hooks and budgets."""

    def __init__(
        self,
        placement: Placement,
        *,
        setups: Mapping[str, SuiteSetup] | None = None,
        budget: Budget | None = None,
        redactor: Redactor | None = None,
        http: httpx.AsyncClient | None = None,
        note: Callable[[str], None] | None = None,
        capacity: TargetCapacity | None = None,
    ) -> None:
        self.placement = placement
        self.capacity = capacity
        """The targets' slots: a run refused for capacity waits for one instead of failing (None:
        a refusal is an error like any other, as in a load test, which measures it)."""
        self.setups = dict(setups or {})
        """SuiteSetup by suite path (``RunSpec.suite_path``)."""
        self.budget = budget or Budget()
        """The invocation's caps; each suite's own (``SuiteSetup.budget``) count too."""
        self.redactor = redactor
        self.http = http
        self.note = note or (lambda text: None)
        """Where a failed ``after_each`` hook is told (it fails no run)."""

    def over_budget(self) -> str | None:
        """Why no new run or retry may start, if a budget (the invocation's or a suite's) was exceeded."""
        for budget in (self.budget, *(s.budget for s in self.setups.values())):
            if budget is not None and budget.exceeded():
                return budget.exceeded()
        return None

    async def run(
        self,
        spec: RunSpec,
        sink: AttemptSink,
        *,
        stopping: Callable[[], bool] = lambda: False,
        setup_error: str | None = None,
    ) -> RunResult:
        """Every attempt of ``spec`` until one is final; returns the final one. ``setup_error`` (a
        failed ``before_all``) makes the run an error without starting it. ``ClusterLost`` (the Ray
        cluster is gone) is raised: no attempt of any run can go on."""
        attempt = 1
        capacity = self.capacity
        deadline = capacity.clock() + spec.timeout if capacity is not None else 0.0
        while True:
            transcript = None
            if setup_error is not None:
                message = f"before_all hook failed: {setup_error}"
                result, retryable = self.error_result(spec, message, "hook", attempt), False
            else:
                if capacity is not None:
                    await capacity.ready(spec, deadline)
                sink.started(spec, attempt)
                result, retryable, transcript, retry_after = await self.attempt(spec, attempt)
                if capacity is not None and capacity.refusal(spec, result, retryable) and not stopping():
                    lowered = capacity.refused(spec, retry_after)
                    if lowered:
                        self.note(lowered)
                    if capacity.hopeless(spec):
                        result.error = (
                            f"{result.error}; {spec.target_name} refuses even one session at a time "
                            f"(for {format_duration(ALONE_LIMIT)}): not a limit of concurrency"
                        )
                    elif await capacity.wait_for_slot(spec, deadline):
                        continue  # not an attempt: the agent was full, and now has room
                    else:
                        result.error = (
                            f"{result.error}; no session of {spec.target_name} freed within the run's timeout "
                            f"({format_duration(spec.timeout)}, at most {capacity.limit(target_key(spec))} at once)"
                        )
                        retryable = False
                elif capacity is not None and result.turns > 0:
                    capacity.served(spec)
            will_retry = retryable and attempt <= spec.retries and not stopping() and not self.over_budget()
            result.final = not will_retry
            result = redact_result(result, self.redactor)
            await sink.finished(result, transcript)
            if not will_retry:
                return result
            attempt += 1

    async def attempt(
        self, spec: RunSpec, attempt: int
    ) -> tuple[RunResult, bool, Transcript | None, float | None]:
        """One attempt: before_each, the graph under the timeout, after_each.

        The flag says whether the attempt ended in a retryable infrastructure error (quarantined
        runs included: a flaky network is retried before a quarantined test is excused); the last
        item is the agent's Retry-After when it refused the session for capacity.
        """
        setup = self.setups.get(spec.suite_path)
        session = session_id(spec, setup)
        spec = spec.evolve(session=session)
        wall = time.time()
        started = time.monotonic()
        env: dict[str, str] = {}
        remote: dict[str, str] = {}
        if setup is not None and (setup.before_each or setup.after_each):
            env = hook_env(suite=spec.suite, test=spec.test_id, session=session, run_id=spec.run_id)
        ready = None
        if setup is not None and setup.before_each:
            before_each, hook_setup = setup.before_each, setup

            async def before(values: dict[str, str]) -> str | None:
                remote.update(values)
                hooked = await run_hooks(before_each, **self.hook_args(hook_setup, spec, env, remote))
                return None if hooked.ok else f"before_each hook failed: {hooked.hook}: {hooked.message}"

            if spec.remote_agents and getattr(self.placement, "calls_ready", False):
                ready = before  # after the remote agents are served, so their URLs render
            else:
                problem = await before({})
                if problem is not None:
                    result = self.error_result(spec, problem, "hook", attempt)
                    result.started_at, result.duration = wall, time.monotonic() - started
                    return result, True, None, None
        held = await self._hold_remote(spec, session)
        try:
            if held is not None:
                spec = spec.evolve(held_by_driver=held)
            answer = await self._call_graph(spec, setup.secrets if setup is not None else None, ready)
        finally:
            if held is not None:
                self._release_remote(spec)
        if setup is not None and setup.after_each:
            hooked = await run_hooks(setup.after_each, **self.hook_args(setup, spec, env, remote))
            if not hooked.ok:
                self.note(f"{spec.run_id}: after_each hook failed: {hooked.hook}: {hooked.message}")
        result, retryable = self._result(spec, answer, attempt, wall, time.monotonic() - started)
        return result, retryable, answer.transcript, answer.retry_after

    async def _hold_remote(self, spec: RunSpec, session: str) -> HeldRun | None:
        """A run placed in another process (a Ray worker) is held by its suite's remote agents here,
        on the driver: what it carries to its worker (their URLs, where to fetch its exchanges)."""
        if getattr(self.placement, "in_process", False) or not spec.suite_path:
            return None
        from tamesu.remote_agents.suite_agents import SuiteRemoteAgents

        suite = SuiteRemoteAgents.of(spec.suite_path)
        return None if suite is None else await suite.hold(spec.run_id, session)

    def _release_remote(self, spec: RunSpec) -> None:
        from tamesu.remote_agents.suite_agents import SuiteRemoteAgents

        suite = SuiteRemoteAgents.of(spec.suite_path)
        if suite is not None:
            suite.release(spec.run_id)

    def hook_args(
        self,
        setup: SuiteSetup,
        spec: RunSpec | None,
        env: dict[str, str],
        remote: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        return hook_kwargs(setup, spec, env, http=self.http, redactor=self.redactor, remote=remote)

    def error_result(self, spec: RunSpec, message: str, kind: str, attempt: int = 1) -> RunResult:
        """An attempt that never ran its graph (a hook failed, the run cannot run here)."""
        return result_of(spec, error=message, error_kind=kind, attempt=attempt, started_at=time.time())

    async def _call_graph(
        self, spec: RunSpec, secrets: Mapping[str, str] | None, ready: Ready | None = None
    ) -> _Answer:
        """The graph enforces the timeout itself (also on Ray) and keeps the partial transcript; the
        limit here, a little later, only catches a placement that does not come back (none for one
        that ``bounds_itself``, like the local placement)."""
        partial: list[Any] = []
        try:
            running = self.placement.run(
                spec, secrets=secrets, timeout=spec.timeout, sink=partial.append, ready=ready
            )
            if getattr(self.placement, "bounds_itself", False):
                outcome = await running
            else:
                outcome = await within(running, spec.timeout + BACKSTOP)
        except asyncio.TimeoutError:
            transcript = getattr(partial[-1], "transcript", None) if partial else None
            return _Answer(transcript, [], _timeout_text(spec), "timeout", True)
        except BudgetExceeded as exc:
            return _Answer(None, [], str(exc), "budget", False)
        except ClusterLost:
            raise  # no run can go on: the caller stops, and --resume redoes what did not finish
        except Exception as exc:
            retryable = bool(getattr(exc, "retryable", True))
            kind = getattr(exc, "kind", None) or "internal"
            text = str(exc) if isinstance(exc, TamesuError) else f"{type(exc).__name__}: {exc}"
            return _Answer(None, [], text, kind, retryable, getattr(exc, "retry_after", None))
        error: Any = outcome.error
        kind = outcome.error_kind
        if isinstance(error, BaseException):
            kind = kind or (
                "budget" if isinstance(error, BudgetExceeded) else getattr(error, "kind", "agent")
            )
            retryable = bool(getattr(error, "retryable", True))
            error = str(error) or type(error).__name__
        else:
            retryable = outcome.retryable
        if error is not None and kind == "timeout":
            error = _timeout_text(spec)
        return _Answer(
            outcome.transcript,
            list(outcome.results or []),
            error,
            kind if error is not None else None,
            retryable and error is not None,
            outcome.retry_after,
        )

    def _result(
        self, spec: RunSpec, answer: _Answer, attempt: int, wall: float, duration: float
    ) -> tuple[RunResult, bool]:
        error, kind, retryable = answer.error, answer.kind, answer.retryable
        if kind == "budget":
            self.budget.trip(error or "budget exceeded")
            retryable = False
        elif error is None and any(r.error for r in answer.results):
            retryable, kind = True, "assertion"
        replay = getattr(getattr(spec.test, "scenario", None), "replay", None)
        if replay is not None and error is None and answer.transcript is not None:
            from tamesu.users.replay_user import replay_result

            answer.results.append(replay_result(replay, answer.transcript, spec.suite_dir))
        result = result_of(
            spec,
            results=answer.results,
            error=error,
            error_kind=kind,
            attempt=attempt,
            started_at=wall,
            duration=duration,
            transcript=answer.transcript,
        )
        if result.outcome == "failed" and answer.transcript is not None:
            from tamesu.voice.attribution import failure_cause

            result.cause = failure_cause(answer.transcript)
        self.budget.record(result.metrics)
        setup = self.setups.get(spec.suite_path)
        if setup is not None and setup.budget is not None:
            setup.budget.record(result.metrics)
        return result, retryable


def _timeout_text(spec: RunSpec) -> str:
    return f"timed out after {format_duration(spec.timeout)}"
