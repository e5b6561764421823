"""The load driver: calls arrive on the profile's schedule, each is a full run, graded like ``tamesu run``.

Calls are the planned runs taken in turn (call ``n`` is run ``n mod len(specs)``, its run id
suffixed ``@n``), started by arrivals (rate mode: an open model, where a new call never waits for
an old one) or held at a level of calls in flight (concurrency mode: a closed model). Each call's
attempts are ``tamesu.runner.attempt``'s, the same as ``tamesu run``'s: hooks, the placement under
the run's timeout (so a hung agent only ever holds its own calls), retries of retryable
infrastructure errors (a dead Ray worker included), the budgets.

Results are durable as they arrive: a writer task appends each attempt's RunResult to
results.jsonl and its CallSample to calls.jsonl, fsyncing once per batch, and checkpoints the
arrival clock to load.json; ``resume=`` continues an interrupted test from those files.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from tamesu.errors import ClusterLost, HookError
from tamesu.kernel.outcome import RunResult
from tamesu.load.samples import CallSample, LoadStats, sample_of
from tamesu.load.shapes import ArrivalSchedule, target_in_flight
from tamesu.runner.attempt import Attempts
from tamesu.runner.hooks import hook_env, run_hooks
from tamesu.runner.suite_setup import Budget
from tamesu.untrusted import json_bytes

if TYPE_CHECKING:
    import httpx

    from tamesu.clock import Clock
    from tamesu.config.load_profile import LoadProfile
    from tamesu.kernel.transcript import Transcript
    from tamesu.run_spec import RunSpec
    from tamesu.runner.results import ResultsStore
    from tamesu.runner.suite_setup import SuiteSetup
    from tamesu.secrets import Redactor

__all__ = ["CALLS_FILE", "CHECKPOINT_FILE", "LoadCheckpoint", "LoadDriver", "LoadOutcome", "read_samples"]

CALLS_FILE = "calls.jsonl"
CHECKPOINT_FILE = "load.json"
_TICK = 0.05
"""Seconds between looks at the concurrency target, and at most between writer flushes."""


class LoadCheckpoint(msgspec.Struct, kw_only=True):
    """Where the arrivals were when load.json was last written."""

    next_index: int = 0
    elapsed: float = 0.0
    """Seconds of the profile's time already played (the shape resumes from here)."""
    shed: int = 0


@dataclass
class LoadOutcome:
    stats: LoadStats
    samples: list[CallSample]
    """Every attempt, resumed ones first."""
    results: list[RunResult]
    """The final result of every call this invocation ran."""
    elapsed: float
    interrupted: bool = False
    budget_exceeded: str | None = None
    resumed: int = 0
    notes: list[str] = field(default_factory=list)
    """What went wrong without failing a call (an ``after_each`` hook that failed)."""


def read_samples(directory: os.PathLike[str] | str) -> list[CallSample]:
    """The samples of a run directory's calls.jsonl; a line cut short by a crash is skipped."""
    path = os.path.join(directory, CALLS_FILE)
    if not os.path.exists(path):
        return []
    decoder = msgspec.json.Decoder(CallSample)
    out: list[CallSample] = []
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                    out.append(decoder.decode(line))
    return out


@dataclass
class _Pending:
    result: RunResult
    transcript: Transcript | None
    sample: CallSample


@dataclass
class _Call:
    """One call's attempts as the driver hears them (``AttemptSink``): each is timed on the driver's
    clock and recorded."""

    driver: LoadDriver
    index: int
    start: float = 0.0

    def started(self, spec: RunSpec, attempt: int) -> None:
        self.start = self.driver.now()

    async def finished(self, result: RunResult, transcript: Transcript | None) -> None:
        self.driver.record(self.index, result, transcript, self.start, self.driver.now())


@dataclass
class LoadDriver:
    """Drives ``specs`` through ``placement`` as ``profile`` says; ``run()`` once, ``interrupt()`` any time."""

    placement: Any
    specs: Sequence[RunSpec]
    profile: LoadProfile
    store: ResultsStore | None = None
    setups: Mapping[str, SuiteSetup] = field(default_factory=dict)
    clock: Clock | None = None
    seed: int | None = None
    redactor: Redactor | None = None
    http: httpx.AsyncClient | None = None
    budget: Budget = field(default_factory=Budget)
    transcripts: str = "all"
    """all, failed (only calls that did not pass) or none."""
    health_interval: float = 2.0
    on_result: Callable[[RunResult], None] | None = None
    until: Callable[[LoadStats, float], bool] | None = None
    """Also stop the arrivals once this says so, given the stats and the profile's time (the capacity
    search ends a step with it)."""
    suite_hooks: bool = True
    """Run the suites' before_all / after_all around the calls (a search runs them once, around all
    its steps, with ``before_all()`` / ``after_all()``)."""

    def __post_init__(self) -> None:
        if self.clock is None:
            from tamesu.clock import MonotonicClock

            self.clock = MonotonicClock()
        self.stats = LoadStats()
        self._t0 = 0.0
        self._stop = False
        self._interrupted = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()
        self._queue: list[_Pending] = []
        self._wake = asyncio.Event()
        self._finals: list[RunResult] = []
        self._next = 0
        self._redo: list[int] = []
        self._resumed = 0
        self._elapsed = 0.0
        self._body: asyncio.Future[None] | None = None
        self.lost: ClusterLost | None = None
        """Set when the Ray cluster was lost: the test stopped as if interrupted, and ``run`` raises it."""
        self.notes: list[str] = []
        self.attempts = Attempts(
            self.placement,
            setups=self.setups,
            budget=self.budget,
            redactor=self.redactor,
            http=self.http,
            note=self.notes.append,
        )

    def interrupt(self) -> None:
        """Start nothing more and cancel the calls in flight (a resume redoes them)."""
        self._interrupted = True
        self._stop = True
        if self._body is not None:
            self._body.cancel()
        for task in list(self._tasks):
            task.cancel()
        self._changed.set()

    def now(self) -> float:
        """Seconds of the profile's time (a resumed test continues where it stopped)."""
        assert self.clock is not None
        return self.clock.now() - self._t0

    def resume(self, checkpoint: LoadCheckpoint, samples: Sequence[CallSample]) -> None:
        """Continue from an earlier invocation: its finished calls count, unfinished ones are redone."""
        done = {s.index for s in samples if s.final}
        for s in samples:
            self.stats.add(s)
        self._next = max([checkpoint.next_index, *(s.index + 1 for s in samples)])
        self._redo = [i for i in range(self._next) if i not in done]
        self.stats.shed = checkpoint.shed
        self.stats.started = len(done)
        self._resumed = len(done)
        self._elapsed = checkpoint.elapsed

    def start_at(self, index: int, elapsed: float) -> None:
        """Number the calls from ``index`` and start the profile's clock at ``elapsed`` (a step of a
        capacity search continues the calls and the timeline of the steps before it)."""
        self._next = index
        self._elapsed = elapsed

    @property
    def next_index(self) -> int:
        """The index the next new call would take."""
        return self._next

    async def run(self) -> LoadOutcome:
        """Drive the calls to the end of the profile (or an interruption) and return what happened."""
        assert self.clock is not None
        self._t0 = self.clock.now() - self._elapsed
        writer = asyncio.create_task(self._writer())
        health = asyncio.create_task(self._health())
        self._body = asyncio.ensure_future(self._drive())
        try:
            await self._body
        except asyncio.CancelledError:
            self.interrupt()
        finally:
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            health.cancel()
            self._stop = True
            self._wake.set()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
            await asyncio.gather(health, return_exceptions=True)
            if not self._interrupted and self.suite_hooks:
                await self.after_all()
        if self.lost is not None:
            raise self.lost
        return LoadOutcome(
            stats=self.stats,
            samples=list(self.stats.samples),
            results=list(self._finals),
            elapsed=self.now(),
            interrupted=self._interrupted,
            budget_exceeded=self.attempts.over_budget(),
            resumed=self._resumed,
            notes=list(self.notes),
        )

    async def _drive(self) -> None:
        if self.suite_hooks:
            await self.before_all()
        if self.profile.mode == "rate":
            await self._arrivals()
        else:
            await self._closed_loop()
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    def _arrived(self) -> int:
        return self._next + self.stats.shed - len(self._redo)

    def _over(self, t: float) -> bool:
        """No more arrivals: stopped, budget spent, call count reached or duration passed (or there is
        nothing to call: every test of the load test is one this environment cannot run)."""
        if self._stop or self.attempts.over_budget() or not self.specs:
            return True
        if self.until is not None and self.until(self.stats, t):
            return True
        total, duration = self.profile.total_calls, self.profile.seconds("duration")
        if total is not None and self._arrived() >= total and not self._redo:
            return True
        return duration is not None and t >= duration

    def _take_index(self) -> int:
        if self._redo:
            return self._redo.pop(0)
        index, self._next = self._next, self._next + 1
        return index

    async def _closed_loop(self) -> None:
        assert self.clock is not None
        while not self._over(self.now()):
            target = target_in_flight(self.profile, self.now())
            while self.stats.active < target and not self._over(self.now()):
                self._start(self._take_index())
            self._changed.clear()
            sleep = asyncio.ensure_future(self.clock.sleep(_TICK))
            changed = asyncio.ensure_future(self._changed.wait())
            await asyncio.wait({sleep, changed}, return_when=asyncio.FIRST_COMPLETED)
            for f in (sleep, changed):
                f.cancel()

    async def _arrivals(self) -> None:
        assert self.clock is not None
        while self._redo and not self._stop and self.stats.active < self.profile.max_in_flight:
            self._start(self._take_index())
        schedule = ArrivalSchedule(self.profile, seed=self.seed, offset=self._elapsed)
        for at in schedule:
            wait = at - self.now()
            if wait > 0:
                await self.clock.sleep(wait)
            if self._over(at):
                return
            if self.stats.active >= self.profile.max_in_flight:
                self.stats.shed += 1
                continue
            self._start(self._take_index())

    def _start(self, index: int) -> None:
        self.stats.active += 1
        self.stats.started += 1
        task = asyncio.create_task(self._call(index))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self.stats.active -= 1
        self._changed.set()

    def spec_of(self, index: int) -> RunSpec:
        """Call ``index``'s run: the planned runs in turn, the run id suffixed ``@index``."""
        base = self.specs[index % len(self.specs)]
        return base.evolve(run_id=f"{base.run_id}@{index}")

    async def _call(self, index: int) -> None:
        try:
            await self.attempts.run(self.spec_of(index), _Call(self, index), stopping=lambda: self._stop)
        except ClusterLost as exc:
            self.lost = self.lost or exc
            self.interrupt()

    def record(
        self, index: int, result: RunResult, transcript: Transcript | None, start: float, end: float
    ) -> None:
        """Count one (redacted) attempt of call ``index`` and queue it for the writer."""
        sample = sample_of(index, result, transcript, start=start, end=end, in_flight=self.stats.active)
        self.stats.add(sample)
        if result.final:
            self._finals.append(result)
        keep = self.transcripts == "all" or (self.transcripts == "failed" and result.outcome != "passed")
        self._queue.append(_Pending(result, transcript if keep else None, sample))
        self._wake.set()
        if self.on_result is not None:
            self.on_result(result)

    async def _writer(self) -> None:
        """Group commit: every batch of results is written and fsync'd together, then load.json.

        A batch goes at most every ``_TICK``: each one is a hand-off to a thread (the fsync must
        not stop the event loop), and under load a hand-off per few calls costs the loop more than
        the writing; a result is still on disk within a twentieth of a second."""
        last_checkpoint = 0.0
        while True:
            stopping = self._stop and not self._tasks
            if self._queue and self.store is not None:
                batch, self._queue = self._queue, []
                wrote = time.monotonic()
                await asyncio.to_thread(self._persist, batch)
                if not stopping:
                    await asyncio.sleep(max(0.0, _TICK - (time.monotonic() - wrote)))
            elif self._queue:
                self._queue = []
            if self.store is not None and (stopping or time.monotonic() - last_checkpoint > 1.0):
                last_checkpoint = time.monotonic()
                await asyncio.to_thread(self._checkpoint)
            if stopping and not self._queue:
                return
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), _TICK * 4)

    def _persist(self, batch: list[_Pending]) -> None:
        store = self.store
        assert store is not None
        store.append_transcripts(
            [
                (item.result, store.transcript_line(item.transcript, self.redactor))
                for item in batch
                if item.transcript is not None
            ]
        )
        lines: list[bytes] = []
        calls: list[bytes] = []
        for item in batch:
            lines.append(json_bytes(item.result) + b"\n")
            calls.append(json_bytes(item.sample) + b"\n")
        store.append_lines("results.jsonl", b"".join(lines))
        store.append_lines(CALLS_FILE, b"".join(calls))

    def _checkpoint(self) -> None:
        assert self.store is not None
        point = LoadCheckpoint(next_index=self._next, elapsed=self.now(), shed=self.stats.shed)
        self.store.write_json(
            CHECKPOINT_FILE,
            {"checkpoint": msgspec.to_builtins(point), "profile": self.profile.model_dump(by_alias=True)},
        )

    async def _health(self) -> None:
        """The placement's worker health every few seconds, for the live view (never fatal)."""
        probe = getattr(self.placement, "health", None)
        while True:
            if probe is None:
                self.stats.workers = {"placement": "local", "alive": 1, "workers": 1}
            else:
                with contextlib.suppress(Exception):
                    self.stats.workers = await probe()
            await asyncio.sleep(self.health_interval)

    async def before_all(self) -> None:
        """The suites' before_all hooks; a failed one raises ``HookError``."""
        for path in {s.suite_path for s in self.specs}:
            setup = self.setups.get(path)
            if setup is not None and setup.before_all:
                hooked = await run_hooks(
                    setup.before_all, **self.attempts.hook_args(setup, None, hook_env(suite=setup.name))
                )
                if not hooked.ok:
                    raise HookError(
                        f"suite {setup.name}: before_all hook failed: {hooked.hook}: {hooked.message}"
                    )

    async def after_all(self) -> None:
        """The suites' after_all hooks (their failures are not the calls' business)."""
        for path in {s.suite_path for s in self.specs}:
            setup = self.setups.get(path)
            if setup is not None and setup.after_all:
                await run_hooks(
                    setup.after_all, **self.attempts.hook_args(setup, None, hook_env(suite=setup.name))
                )
