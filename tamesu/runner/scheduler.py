"""The scheduler: runs the planned runs with bounded concurrency, hooks, timeouts and retries.

It feeds runs from the plan one by one (never thousands of tasks up front), holds at most
``concurrency`` in flight and at most ``per_target`` against one target, so one slow agent is not
flooded while the others wait behind it. Each run is ``before_each`` hooks, the run graph (through
a placement: local asyncio or Ray) under the run's timeout, then ``after_each``; an infrastructure
error is retried when it is retryable, a failed assertion never. Every attempt's result is written
to the results store the moment it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tamesu.clock import within
from tamesu.durations import format_duration
from tamesu.errors import BudgetExceeded, ClusterLost, TamesuError
from tamesu.kernel.outcome import RunResult
from tamesu.kernel.transcript import Transcript
from tamesu.runner.hooks import hook_env, run_hooks
from tamesu.runner.results import ResultWriter, redact_result
from tamesu.runner.spec import RunSpec
from tamesu.runner.verdict import result_of

if TYPE_CHECKING:
    import httpx

    from tamesu.config import Hook
    from tamesu.runner.rates import EarlyStopper
    from tamesu.runner.results import ResultsStore
    from tamesu.secrets import Redactor
    from tamesu.templates import Scope

__all__ = [
    "Budget",
    "Placement",
    "Reporter",
    "ScheduleOutcome",
    "Scheduler",
    "SuiteSetup",
]

_BACKSTOP = 15.0
"""Seconds past a run's timeout after which the scheduler gives up on a placement that has not answered."""
_IDS = random.Random()
"""Session ids: random version-4 uuids from a generator of our own (seeded from the OS, untouched
by suites that seed ``random``), without a system call per run."""
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_IDS.seed)
_V4 = (0x4000 << 64) | (0x8000 << 48)
"""The version (4) and variant (RFC 4122) bits of a random uuid."""
_NOT_V4 = ~((0xF000 << 64) | (0xC000 << 48))


def _uuid4() -> str:
    """A random version-4 uuid in the form ``str(uuid.uuid4())`` has, drawn from ``_IDS``, without
    building a ``UUID`` object."""
    digits = f"{_IDS.getrandbits(128) & _NOT_V4 | _V4:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


_LOOKAHEAD = 64
"""How many planned runs may wait for a busy target before dispatch waits for a slot instead."""


class Placement(Protocol):
    """Where run graphs execute (``tamesu.actors.placement``: local asyncio or Ray)."""

    async def run(
        self,
        spec: RunSpec,
        *,
        secrets: Mapping[str, str] | None = None,
        timeout: float | None = None,
        sink: Callable[[Any], None] | None = None,
    ) -> Any:
        """One run to its ``GraphOutcome`` (transcript, results, error, error_kind, retryable)."""
        ...


class Reporter:
    """Progress events; subclasses override what they show. Every method must be cheap."""

    def started(self, total: int) -> None:
        """The scheduler is about to start ``total`` runs."""

    def run_started(self, spec: RunSpec) -> None:
        """An attempt of ``spec`` begins."""

    def run_finished(self, result: RunResult) -> None:
        """An attempt ended; ``result.final`` is False when it will be retried."""

    def run_skipped(self, spec: RunSpec) -> None:
        """A planned run was not started: its test's verdict was already decided (early stop)."""

    def note(self, text: str) -> None:
        """Something worth a line in a log: a teardown hook failed, the budget stopped the run."""


@dataclass
class Budget:
    """The spend caps checked before every run; spend is added from each run's metrics.

    A run whose model layer raises ``BudgetExceeded`` trips it too. Once tripped, no new run starts
    and the invocation exits 4; runs in flight finish normally.
    """

    max_cost_usd: float | None = None
    max_tokens: float | None = None
    spent_usd: float = 0.0
    spent_tokens: float = 0.0
    tripped: str | None = None

    def record(self, metrics: Mapping[str, float]) -> None:
        """Add one run's spend (its ``llm_cost_usd`` / ``llm_tokens`` metrics, which also come back from Ray)."""
        self.spent_usd += float(metrics.get("llm_cost_usd", 0.0) or 0.0)
        self.spent_tokens += float(metrics.get("llm_tokens", 0.0) or 0.0)
        if self.max_cost_usd is not None and self.spent_usd > self.max_cost_usd:
            self.trip(
                f"model spend ${self.spent_usd:.4f} exceeded budgets.max_cost_usd ${self.max_cost_usd:g}"
            )
        elif self.max_tokens is not None and self.spent_tokens > self.max_tokens:
            self.trip(f"{self.spent_tokens:.0f} model tokens exceeded budgets.max_tokens {self.max_tokens:g}")

    def trip(self, reason: str) -> None:
        if self.tripped is None:
            self.tripped = reason

    def exceeded(self) -> str | None:
        return self.tripped


@dataclass
class SuiteSetup:
    """One suite's hooks (the project's already merged in) and the scope they render in."""

    name: str
    dir: Path
    before_all: list[Hook] = field(default_factory=list)
    after_all: list[Hook] = field(default_factory=list)
    before_each: list[Hook] = field(default_factory=list)
    after_each: list[Hook] = field(default_factory=list)
    scope: Scope | None = None
    """vars and secrets; each run adds its own vars and session."""
    secrets: dict[str, str] = field(default_factory=dict)
    """Resolved secret values by name, handed to the placement with each run (Ray workers need them)."""
    budget: Budget | None = None
    """The suite's caps (budgets:); any budget tripping stops the whole invocation."""


@dataclass
class ScheduleOutcome:
    results: list[RunResult]
    """Every attempt, in the order they ended."""
    interrupted: bool = False
    budget_exceeded: str | None = None
    stopped_early: bool = False
    """``fail_fast`` stopped scheduling after a failure."""
    duration: float = 0.0


@dataclass
class _GraphAnswer:
    transcript: Transcript | None
    results: list[Any]
    error: str | None = None
    kind: str | None = None
    retryable: bool = False


@dataclass
class _SuiteState:
    remaining: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    setup_done: bool = False
    setup_error: str | None = None
    torn_down: bool = False


class Scheduler:
    """Runs a plan; ``interrupt()`` (Ctrl-C) stops it, keeping what finished."""

    def __init__(
        self,
        placement: Placement,
        *,
        concurrency: int = 4,
        per_target: int | None = None,
        suites: Mapping[str, SuiteSetup] | None = None,
        store: ResultsStore | None = None,
        reporter: Reporter | None = None,
        budget: Budget | None = None,
        redactor: Redactor | None = None,
        http: httpx.AsyncClient | None = None,
        fail_fast: bool = False,
        early_stop: EarlyStopper | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.placement = placement
        self.concurrency = concurrency
        self.per_target = max(1, per_target or concurrency)
        self.suites = dict(suites or {})
        """SuiteSetup by suite path (``RunSpec.suite_path``)."""
        self.store = store
        self.reporter = reporter or Reporter()
        self.budget = budget or Budget()
        self.redactor = redactor
        self.http = http
        self.fail_fast = fail_fast
        self.early_stop = early_stop
        """Hears every result and says which planned runs need not start (statistics.early_stop)."""
        self._states: dict[str, _SuiteState] = {}
        self._running: dict[asyncio.Task[None], RunSpec] = {}
        self._teardowns: set[asyncio.Task[None]] = set()
        self._results: list[RunResult] = []
        self._interrupted = False
        self._stop = False
        self._failed = False
        self._writer: ResultWriter | None = None
        self._writing: set[asyncio.Future[None]] = set()
        """Attempts handed to the writer and not yet durable."""
        self._room = asyncio.Event()
        self._write_error: BaseException | None = None

    def interrupt(self) -> None:
        """Stop now: start nothing more and cancel the runs in flight (they are not recorded)."""
        self._interrupted = True
        self._stop = True
        for task in self._running:
            task.cancel()

    async def run(self, specs: Sequence[RunSpec]) -> ScheduleOutcome:
        started = time.monotonic()
        counts = Counter(spec.suite_path for spec in specs)
        self._states = {path: _SuiteState(remaining=n) for path, n in counts.items()}
        self.reporter.started(len(specs))
        load: Counter[tuple[str, str]] = Counter()
        pending = iter(specs)
        waiting: list[RunSpec] = []
        ended = _Ended()
        try:
            while True:
                while not self._stop and len(self._running) < self.concurrency:
                    spec = self._next(pending, waiting, load)
                    if spec is None:
                        break
                    if self._over_budget():
                        self._stop = True
                        waiting.insert(0, spec)
                        break
                    load[_target_key(spec)] += 1
                    task = asyncio.create_task(self._run_spec(spec))
                    task.add_done_callback(ended.add)
                    self._running[task] = spec
                if not self._running:
                    break
                for task in await ended.next():
                    spec = self._running.pop(task)
                    load[_target_key(spec)] -= 1
                    if not task.cancelled() and task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
        finally:
            for task in self._running:
                task.cancel()
            if self._running:
                await asyncio.gather(*self._running, return_exceptions=True)
            await self._teardown_all()
            if self._writing:
                await asyncio.wait(set(self._writing))
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        if self._write_error is not None:
            raise self._write_error
        reason = self._over_budget()
        if reason:
            self.reporter.note(f"budget exceeded: {reason}; no new runs were started")
        return ScheduleOutcome(
            results=list(self._results),
            interrupted=self._interrupted,
            budget_exceeded=reason,
            stopped_early=self._failed and self.fail_fast,
            duration=time.monotonic() - started,
        )

    def _next(
        self, pending: Iterator[RunSpec], waiting: list[RunSpec], load: Counter[tuple[str, str]]
    ) -> RunSpec | None:
        """The first planned run whose target has room; runs for busy targets wait their turn."""
        for i, spec in enumerate(waiting):
            if load[_target_key(spec)] < self.per_target:
                return waiting.pop(i)
        while len(waiting) < _LOOKAHEAD:
            new = next(pending, None)
            if new is None:
                return None
            if load[_target_key(new)] < self.per_target:
                return new
            waiting.append(new)
        return None

    async def _run_spec(self, spec: RunSpec) -> None:
        state = self._states[spec.suite_path]
        cannot = spec.cannot_run()
        try:
            if self.early_stop is not None and self.early_stop.skip(spec):
                self.reporter.run_skipped(spec)
                return
            if cannot is not None:  # reported as validate warned, without hooks or retries
                self.reporter.run_started(spec)
                await self._record(self._error_result(spec, cannot[0], cannot[1], 1), None)
                return
            setup_error = state.setup_error if state.setup_done else await self._before_all(spec, state)
            attempt = 1
            while True:
                transcript = None
                if setup_error is not None:
                    message = f"before_all hook failed: {setup_error}"
                    result, retryable = self._error_result(spec, message, "hook", attempt), False
                else:
                    result, retryable, transcript = await self._attempt(spec, attempt)
                will_retry = retryable and attempt <= spec.retries
                if will_retry and (self._stop or self._over_budget()):
                    will_retry = False
                result.final = not will_retry
                await self._record(result, transcript)
                if not will_retry:
                    break
                attempt += 1
            if result.outcome == "failed" and self.fail_fast:
                self._failed = True
                self._stop = True
        finally:
            state.remaining -= 1
            if state.remaining == 0 and not self._interrupted:
                task = asyncio.create_task(self._teardown(spec.suite_path))
                self._teardowns.add(task)
                task.add_done_callback(self._teardowns.discard)

    async def _attempt(self, spec: RunSpec, attempt: int) -> tuple[RunResult, bool, Transcript | None]:
        """One attempt: before_each, the graph under the timeout, after_each.

        The flag says whether the attempt ended in a retryable infrastructure error (quarantined
        runs included: a flaky network is retried before a quarantined test is excused).
        """
        self.reporter.run_started(spec)
        setup = self.suites.get(spec.suite_path)
        session = self._session(spec, setup)
        spec = spec.with_extra(session=session, attempt=attempt)
        wall = time.time()
        started = time.monotonic()
        env: dict[str, str] = {}
        if setup is not None and (setup.before_each or setup.after_each):
            env = hook_env(suite=spec.suite, test=spec.test_id, session=session, run_id=spec.run_id)
        if setup is not None and setup.before_each:
            hooked = await run_hooks(setup.before_each, **self._hook_args(setup, spec, env))
            if not hooked.ok:
                message = f"before_each hook failed: {hooked.hook}: {hooked.message}"
                result = self._error_result(spec, message, "hook", attempt)
                result.started_at, result.duration = wall, time.monotonic() - started
                return result, True, None
        answer = await self._call_graph(spec, setup.secrets if setup is not None else None)
        if setup is not None and setup.after_each:
            hooked = await run_hooks(setup.after_each, **self._hook_args(setup, spec, env))
            if not hooked.ok:
                self.reporter.note(f"{spec.run_id}: after_each hook failed: {hooked.hook}: {hooked.message}")
        result, retryable = self._build_result(spec, answer, attempt, wall, time.monotonic() - started)
        return result, retryable, answer.transcript

    async def _call_graph(self, spec: RunSpec, secrets: Mapping[str, str] | None) -> _GraphAnswer:
        """The graph enforces the timeout itself (also on Ray) and keeps the partial transcript; the
        scheduler's own limit, a little later, only catches a placement that does not come back
        (none for one that ``bounds_itself``, like the local placement)."""
        partial: list[Any] = []
        try:
            running = self.placement.run(spec, secrets=secrets, timeout=spec.timeout, sink=partial.append)
            if getattr(self.placement, "bounds_itself", False):
                outcome = await running
            else:
                outcome = await within(running, spec.timeout + _BACKSTOP)
        except asyncio.TimeoutError:
            transcript = getattr(partial[-1], "transcript", None) if partial else None
            return _GraphAnswer(transcript, [], self._timeout_text(spec), "timeout", True)
        except BudgetExceeded as exc:
            return _GraphAnswer(None, [], str(exc), "budget", False)
        except ClusterLost:
            self._stop = True  # nothing more can run; the runs in flight are redone by --resume
            raise
        except Exception as exc:
            retryable = bool(getattr(exc, "retryable", True))
            kind = getattr(exc, "kind", None) or "internal"
            text = str(exc) if isinstance(exc, TamesuError) else f"{type(exc).__name__}: {exc}"
            return _GraphAnswer(None, [], text, kind, retryable)
        error = getattr(outcome, "error", None)
        kind = getattr(outcome, "error_kind", None)
        if isinstance(error, BaseException):
            kind = kind or (
                "budget" if isinstance(error, BudgetExceeded) else getattr(error, "kind", "agent")
            )
            retryable = bool(getattr(error, "retryable", True))
            error = str(error) or type(error).__name__
        else:
            retryable = bool(getattr(outcome, "retryable", False))
        if error is not None and kind == "timeout":
            error = self._timeout_text(spec)
        return _GraphAnswer(
            getattr(outcome, "transcript", None),
            list(getattr(outcome, "results", None) or []),
            error,
            kind if error is not None else None,
            retryable and error is not None,
        )

    def _over_budget(self) -> str | None:
        """Why no new run may start, if a budget (the invocation's or a suite's) was exceeded."""
        for budget in (self.budget, *(s.budget for s in self.suites.values())):
            if budget is not None and budget.exceeded():
                return budget.exceeded()
        return None

    def _session(self, spec: RunSpec, setup: SuiteSetup | None) -> str:
        """The run's session id, made here so that hooks see it as $TAMESU_SESSION: the target's
        ``session.id`` template when it has one, else a fresh uuid. The graph reads it from
        ``spec.extra["session"]``."""
        template = getattr(getattr(spec.target, "session", None), "id", None)
        if template:
            from tamesu.templates import Scope, render_text

            scope = Scope({"vars": spec.vars}, parent=setup.scope if setup is not None else None)
            with contextlib.suppress(Exception):
                return render_text(template, scope)
        return _uuid4()

    @staticmethod
    def _timeout_text(spec: RunSpec) -> str:
        return f"timed out after {format_duration(spec.timeout)}"

    def _build_result(
        self, spec: RunSpec, answer: _GraphAnswer, attempt: int, wall: float, duration: float
    ) -> tuple[RunResult, bool]:
        error, kind, retryable = answer.error, answer.kind, answer.retryable
        setup = self.suites.get(spec.suite_path)
        if kind == "budget":
            self.budget.trip(error or "budget exceeded")
            retryable = False
        elif error is None and any(r.error for r in answer.results):
            retryable, kind = True, "assertion"
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
        self.budget.record(result.metrics)
        if setup is not None and setup.budget is not None:
            setup.budget.record(result.metrics)
        return result, retryable

    def _error_result(self, spec: RunSpec, message: str, kind: str, attempt: int) -> RunResult:
        return result_of(spec, error=message, error_kind=kind, attempt=attempt, started_at=time.time())

    async def _record(self, result: RunResult, transcript: Transcript | None) -> None:
        """Redact, then hand the transcript and the result to the writer thread (transcript file,
        results.jsonl, fsync); the result counts (and is reported) once it is durable.

        The run does not wait for the disk: its slot goes to the next run while the writer works,
        so a slow filesystem delays when results count, not the conversations. At most
        ``MAX_UNWRITTEN`` attempts wait to be written; beyond that a finishing run waits for room.
        A disk that fails therefore stops the invocation within ``MAX_UNWRITTEN + concurrency`` runs
        of the first attempt it could not write.
        """
        result = redact_result(result, self.redactor)
        if self.early_stop is not None:
            self.early_stop.observe(result)  # at once: runs waiting to start may be left out
        if self.store is None:
            self._counted(result)
            return
        while len(self._writing) >= MAX_UNWRITTEN:
            self._room.clear()
            await self._room.wait()
        if self._writer is None:
            self._writer = ResultWriter(self.store, self.redactor)
        written = self._writer.submit(result, transcript)
        self._writing.add(written)
        written.add_done_callback(lambda done: self._written(done, result))

    def _written(self, done: asyncio.Future[None], result: RunResult) -> None:
        self._writing.discard(done)
        self._room.set()
        if done.cancelled() or done.exception() is not None:
            # the disk failed us: start nothing more, and say so when the runs in flight end
            if self._write_error is None:
                self._write_error = done.exception() if not done.cancelled() else asyncio.CancelledError()
            self._stop = True
            return
        self._counted(result)

    def _counted(self, result: RunResult) -> None:
        self._results.append(result)
        self.reporter.run_finished(result)

    def _hook_args(self, setup: SuiteSetup, spec: RunSpec | None, env: dict[str, str]) -> dict[str, Any]:
        return hook_kwargs(setup, spec, env, http=self.http, redactor=self.redactor)

    async def _before_all(self, spec: RunSpec, state: _SuiteState) -> str | None:
        """Run the suite's before_all once, before its first run; later runs wait for it."""
        if state.setup_done:
            return state.setup_error
        async with state.lock:
            if not state.setup_done:
                setup = self.suites.get(spec.suite_path)
                if setup is not None and setup.before_all:
                    hooked = await run_hooks(
                        setup.before_all, **self._hook_args(setup, None, hook_env(suite=spec.suite))
                    )
                    if not hooked.ok:
                        state.setup_error = f"{hooked.hook}: {hooked.message}"
                        self.reporter.note(f"suite {spec.suite}: before_all hook failed: {state.setup_error}")
                state.setup_done = True
        return state.setup_error

    async def _teardown(self, suite_path: str) -> None:
        state = self._states.get(suite_path)
        setup = self.suites.get(suite_path)
        if state is None or state.torn_down or not state.setup_done:
            return
        state.torn_down = True
        if setup is None or not setup.after_all:
            return
        hooked = await run_hooks(setup.after_all, **self._hook_args(setup, None, hook_env(suite=setup.name)))
        if not hooked.ok:
            self.reporter.note(f"suite {setup.name}: after_all hook failed: {hooked.hook}: {hooked.message}")

    async def _teardown_all(self) -> None:
        """after_all for every suite that was set up, also when the invocation stopped early."""
        if self._teardowns:
            await asyncio.gather(*list(self._teardowns), return_exceptions=True)
        for path in list(self._states):
            await self._teardown(path)


MAX_UNWRITTEN = 256
"""Finished attempts that may wait for the writer at once (each holds its transcript)."""


class _Ended:
    """The run tasks that ended since the scheduler last looked.

    One done callback per run wakes the scheduler, instead of ``asyncio.wait`` over every run in
    flight each time one ends (which adds and removes a callback on each of them).
    """

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []
        self._wake: asyncio.Future[None] | None = None

    def add(self, task: asyncio.Task[None]) -> None:
        self._tasks.append(task)
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def next(self) -> list[asyncio.Task[None]]:
        """The tasks that ended, waiting for one when none has."""
        if not self._tasks:
            self._wake = asyncio.get_running_loop().create_future()
            try:
                await self._wake
            finally:
                self._wake = None
        tasks, self._tasks = self._tasks, []
        return tasks


def _target_key(spec: RunSpec) -> tuple[str, str]:
    return (spec.suite_path, spec.target_name)


def hook_kwargs(
    setup: SuiteSetup, spec: RunSpec | None, env: dict[str, str], *, http: Any, redactor: Redactor | None
) -> dict[str, Any]:
    """The keyword arguments of ``run_hooks`` for a suite's hooks (a run's vars and session when given)."""
    from tamesu.secrets import Redactor
    from tamesu.templates import Scope

    scope = setup.scope or Scope()
    if spec is not None:
        scope = Scope({"vars": spec.vars, "session": env.get("TAMESU_SESSION", "")}, parent=scope)
    return {
        "scope": scope,
        "env": env,
        "suite_dir": setup.dir,
        "http": http,
        "redactor": redactor or Redactor(),
    }
