"""The scheduler: runs the planned runs with bounded concurrency, hooks, timeouts and retries.

It feeds runs from the plan one by one (never thousands of tasks up front), holds at most
``concurrency`` in flight and at most ``per_target`` against one target, so one slow agent is not
flooded while the others wait behind it. A suite's ``before_all`` runs before its first run and
``after_all`` after its last; each run's attempts (``before_each``, the graph through a placement
under the run's timeout, ``after_each``, retries) are ``tamesu.runner.attempt``'s. Every attempt's
result is written to the results store the moment it ends.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tamesu.errors import ClusterLost
from tamesu.runner.attempt import Attempts
from tamesu.runner.hooks import hook_env, run_hooks
from tamesu.runner.invocation import Reporter
from tamesu.runner.results import ResultWriter, redact_result
from tamesu.runner.suite_setup import Budget, SuiteSetup
from tamesu.runner.target_capacity import HeldConcurrency, TargetCapacity, target_key

if TYPE_CHECKING:
    import httpx

    from tamesu.kernel.outcome import RunResult
    from tamesu.kernel.transcript import Transcript
    from tamesu.remote_agents.suite_agents import SuiteRemoteAgents
    from tamesu.run_spec import RunSpec
    from tamesu.runner.placement import Placement
    from tamesu.runner.rates import EarlyStopper
    from tamesu.runner.results import ResultsStore
    from tamesu.secrets import Redactor

__all__ = ["MAX_UNWRITTEN", "ScheduleOutcome", "Scheduler"]

_LOOKAHEAD = 64
"""How many planned runs may wait for a busy target before dispatch waits for a slot instead."""


@dataclass
class ScheduleOutcome:
    results: list[RunResult]
    """Every attempt, in the order they ended."""
    interrupted: bool = False
    budget_exceeded: str | None = None
    stopped_early: bool = False
    """``fail_fast`` stopped scheduling after a failure."""
    duration: float = 0.0
    capacity: list[HeldConcurrency] = field(default_factory=list)
    """The targets that refused sessions for capacity, and the concurrency each held."""


@dataclass
class _SuiteState:
    remaining: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    setup_done: bool = False
    setup_error: str | None = None
    torn_down: bool = False
    remote: SuiteRemoteAgents | None = None
    """The suite's remote agents, served from before ``before_all`` until after ``after_all``."""
    remote_failed: bool = False


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
        self.capacity = TargetCapacity(self.per_target)
        """Runs in flight per target, and the limits learnt from targets that refused for capacity."""
        self.suites = dict(suites or {})
        """SuiteSetup by suite path (``RunSpec.suite_path``)."""
        self.store = store
        self.reporter = reporter or Reporter()
        self.redactor = redactor
        self.attempts = Attempts(
            placement,
            setups=self.suites,
            budget=budget,
            redactor=redactor,
            http=http,
            note=self.reporter.note,
            capacity=self.capacity,
        )
        self.budget = self.attempts.budget
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
        self._own_http: httpx.AsyncClient | None = None

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
        capacity = self.capacity
        pending = iter(specs)
        waiting: list[RunSpec] = []
        ended = _Ended()
        try:
            while True:
                while not self._stop and len(self._running) < self.concurrency:
                    spec = self._next(pending, waiting)
                    if spec is None:
                        break
                    if self._over_budget():
                        self._stop = True
                        waiting.insert(0, spec)
                        break
                    capacity.take(target_key(spec))
                    task = asyncio.create_task(self._run_spec(spec))
                    task.add_done_callback(ended.add)
                    self._running[task] = spec
                if not self._running:
                    break
                for task in await ended.next():
                    spec = self._running.pop(task)
                    capacity.give(target_key(spec))
                    if not task.cancelled() and task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
        finally:
            for task in self._running:
                task.cancel()
            if self._running:
                await asyncio.gather(*self._running, return_exceptions=True)
            await self._teardown_all()
            own, self._own_http = self._own_http, None
            if own is not None:
                await own.aclose()
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
        held = capacity.held()
        for target in held:
            self.reporter.note(target.note())
        return ScheduleOutcome(
            results=list(self._results),
            interrupted=self._interrupted,
            budget_exceeded=reason,
            stopped_early=self._failed and self.fail_fast,
            duration=time.monotonic() - started,
            capacity=held,
        )

    def _next(self, pending: Iterator[RunSpec], waiting: list[RunSpec]) -> RunSpec | None:
        """The first planned run whose target has room; runs for busy targets wait their turn."""
        room = self.capacity.has_room
        for i, spec in enumerate(waiting):
            if room(target_key(spec)):
                return waiting.pop(i)
        while len(waiting) < _LOOKAHEAD:
            new = next(pending, None)
            if new is None:
                return None
            if room(target_key(new)):
                return new
            waiting.append(new)
        return None

    async def _run_spec(self, spec: RunSpec) -> None:
        state = self._states[spec.suite_path]
        cannot = spec.cannot_run
        try:
            if self.early_stop is not None and self.early_stop.skip(spec):
                self.reporter.run_skipped(spec)
                return
            if cannot is not None:  # reported as validate warned, without hooks or retries
                self.reporter.run_started(spec)
                result = self.attempts.error_result(spec, cannot[0], cannot[1])
                await self._record(redact_result(result, self.redactor), None)
                return
            setup_error = state.setup_error if state.setup_done else await self._before_all(spec, state)
            try:
                result = await self.attempts.run(
                    spec, self, stopping=lambda: self._stop, setup_error=setup_error
                )
            except ClusterLost:
                self._stop = True  # nothing more can run; the runs in flight are redone by --resume
                raise
            if result.outcome == "failed" and self.fail_fast:
                self._failed = True
                self._stop = True
        finally:
            state.remaining -= 1
            if state.remaining == 0 and not self._interrupted:
                task = asyncio.create_task(self._teardown(spec.suite_path))
                self._teardowns.add(task)
                task.add_done_callback(self._teardowns.discard)

    def _over_budget(self) -> str | None:
        return self.attempts.over_budget()

    def started(self, spec: RunSpec, attempt: int) -> None:
        """An attempt begins (``AttemptSink``)."""
        self.reporter.run_started(spec)

    async def finished(self, result: RunResult, transcript: Transcript | None) -> None:
        """An attempt ended (``AttemptSink``): write it."""
        await self._record(result, transcript)

    async def _record(self, result: RunResult, transcript: Transcript | None) -> None:
        """Hand the (redacted) transcript and result to the writer thread (transcript file,
        results.jsonl, fsync); the result counts (and is reported) once it is durable.

        The run does not wait for the disk: its slot goes to the next run while the writer works,
        so a slow filesystem delays when results count, not the conversations. At most
        ``MAX_UNWRITTEN`` attempts wait to be written; beyond that a finishing run waits for room.
        A disk that fails therefore stops the invocation within ``MAX_UNWRITTEN + concurrency`` runs
        of the first attempt it could not write.
        """
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

    async def _before_all(self, spec: RunSpec, state: _SuiteState) -> str | None:
        """Run the suite's before_all once, before its first run; later runs wait for it."""
        if state.setup_done:
            return state.setup_error
        async with state.lock:
            if not state.setup_done:
                setup = self.suites.get(spec.suite_path)
                if setup is not None and setup.remote_agents:
                    state.setup_error = await self._serve_remote_agents(spec, setup, state)
                if state.setup_error is None and setup is not None and setup.before_all:
                    hooked = await run_hooks(
                        setup.before_all, **self.attempts.hook_args(setup, None, hook_env(suite=spec.suite))
                    )
                    if not hooked.ok:
                        state.setup_error = f"{hooked.hook}: {hooked.message}"
                        self.reporter.note(f"suite {spec.suite}: before_all hook failed: {state.setup_error}")
                state.setup_done = True
        return state.setup_error

    async def _serve_remote_agents(self, spec: RunSpec, setup: SuiteSetup, state: _SuiteState) -> str | None:
        """Serve the suite's remote agents for its lifetime, before ``before_all``, their URLs in the
        suite's scope (every hook) and for every run's target; why the suite cannot run, if it cannot."""
        from tamesu.remote_agents.suite_agents import SuiteRemoteAgents
        from tamesu.templates import Scope

        scope = setup.scope if setup.scope is not None else Scope()
        try:
            state.remote = await SuiteRemoteAgents.open(
                spec.suite_path, setup.remote_agents, scope=scope, limits=spec.limits, http=self._http()
            )
        except Exception as exc:
            state.remote_failed = True
            why = f"the suite's remote agents could not be served: {exc}"
            self.reporter.note(f"suite {spec.suite}: {why}")
            return why
        setup.scope = scope
        return None

    def _http(self) -> httpx.AsyncClient:
        if self.attempts.http is None:
            import httpx

            self.attempts.http = httpx.AsyncClient(trust_env=False)
            self._own_http = self.attempts.http
        return self.attempts.http

    async def _teardown(self, suite_path: str) -> None:
        state = self._states.get(suite_path)
        setup = self.suites.get(suite_path)
        if state is None or state.torn_down or not state.setup_done:
            return
        state.torn_down = True
        try:
            if setup is None or not setup.after_all or state.remote_failed:
                return  # (before_all never ran when the remote agents could not be served)
            hooked = await run_hooks(
                setup.after_all, **self.attempts.hook_args(setup, None, hook_env(suite=setup.name))
            )
            if not hooked.ok:
                self.reporter.note(
                    f"suite {setup.name}: after_all hook failed: {hooked.hook}: {hooked.message}"
                )
        finally:
            remote, state.remote = state.remote, None
            if remote is not None:
                await remote.close()
                for agent, count in sorted(remote.unattributed.items()):
                    self.reporter.note(
                        f"suite {setup.name if setup else suite_path}: remote agent {agent} got {count} "
                        "message(s) that could not be told apart between the runs in flight (send them in "
                        "the run's A2A context, or run the suite's tests one at a time with --per-target 1)"
                    )

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
