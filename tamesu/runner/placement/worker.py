"""A Ray worker's side of the placement, and what travels to and from it (no Ray here).

An actor call costs about a millisecond of CPU on each side, as much as a whole three-turn run, so
runs do not travel one per call. The driver sends the runs it starts in one event-loop tick to a
worker in one ``exchange`` call, and an exchange comes back with the outcomes finished by then. One
exchange per worker waits at the worker for the next outcome (the poller), so a run that finishes
later rides back on the next reply; under load each reply carries many outcomes, and when calls
are few an exchange carries one run out and its outcome back, as a call per run did.

A run's spec is split: the parts that repeat from run to run (target, test, assertions, models)
are sent to a worker once and named by a key; each run carries only its own small fields. An
outcome comes back as msgpack bytes (a tenth of the cost of pickling the structs).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from tamesu.kernel.outcome import GraphOutcome
from tamesu.runner.grading import GradedRun

if TYPE_CHECKING:
    from tamesu.actors.services import RunServices
    from tamesu.run_spec import RunSpec
    from tamesu.speech_pool import SpeechPool

__all__ = [
    "DONE",
    "FAILED",
    "NEED_PARTS",
    "OBJECT",
    "RunItem",
    "RunWorker",
    "SpecSplitter",
    "failed_outcome",
    "first_line",
    "read_outcome",
]

SHARED_FIELDS = ("target", "test", "assertions", "models", "counterpart_target")
"""The fields of a RunSpec that repeat across the runs of a test: sent to each worker once."""
_BLANK: dict[str, Any] = {
    "target": None,
    "test": None,
    "assertions": [],
    "models": None,
    "counterpart_target": None,
}
PARTS_LIMIT = 1024
"""Sets of shared parts a worker (and the driver) remembers; the oldest is forgotten first."""

RunItem = tuple[str, "RunSpec", str, "tuple[Any, ...] | None", "dict[str, str] | None", "float | None"]
"""One run on the wire: its key, the spec without its shared parts, the parts' key, the parts
(None once the worker holds them), the secret values, the timeout."""
Reply = tuple[str, int, Any]
"""What came of a run: its key, a kind (below) and the data."""

DONE = 0
"""The data is the outcome, msgpack-encoded."""
OBJECT = 1
"""The data is the outcome itself (it holds a value msgpack cannot carry)."""
NEED_PARTS = 2
"""The worker does not hold the run's shared parts (forgotten, or a new worker): send them again."""
FAILED = 3
"""The run raised (a bug, not anything the run did); the data is the error's text."""

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(GraphOutcome)


def pack_outcome(key: str, outcome: GraphOutcome) -> Reply:
    try:
        return (key, DONE, _encoder.encode(outcome))
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return (key, OBJECT, outcome)


def read_outcome(kind: int, data: Any) -> GraphOutcome:
    """The outcome of a DONE or OBJECT reply."""
    if kind == DONE:
        return _decoder.decode(data)
    if kind == OBJECT:
        return data  # type: ignore[no-any-return]
    raise ValueError(f"a reply of kind {kind} holds no outcome")


def failed_outcome(spec: RunSpec, message: str, kind: str, retryable: bool) -> GraphOutcome:
    """The outcome of a run the placement could not carry through (its worker died, its outcome
    did not decode): an error of ``kind``, with a transcript that says so."""
    from tamesu.kernel.events import RunError
    from tamesu.kernel.transcript import Transcript

    transcript = Transcript(
        run_id=spec.run_id, test=spec.test_id, target=spec.target_name, end_reason="error"
    )
    transcript.events.append(RunError(kind=kind, message=message))
    return GraphOutcome(transcript=transcript, error=message, error_kind=kind, retryable=retryable)


def first_line(exc: BaseException | str) -> str:
    """The first line of an error's text (its type's name when it has none)."""
    text = str(exc).strip()
    if text:
        return text.splitlines()[0]
    return type(exc).__name__ if isinstance(exc, BaseException) else ""


class SpecSplitter:
    """The driver's names for the shared parts of its specs, by identity.

    Runs of one test share the same config objects (the planner makes them once), so the identity
    of the parts says whether a worker has seen them; the splitter holds the objects it names, so
    an id is never reused while its key lives.
    """

    def __init__(self, limit: int = PARTS_LIMIT) -> None:
        self.limit = limit
        self._keys: OrderedDict[tuple[int, ...], tuple[str, tuple[Any, ...]]] = OrderedDict()
        self._serial = itertools.count(1)

    def split(self, spec: RunSpec) -> tuple[str, tuple[Any, ...], RunSpec]:
        """The parts' key, the parts, and the spec without them."""
        parts = tuple(getattr(spec, name) for name in SHARED_FIELDS)
        ids = tuple(map(id, parts))
        entry = self._keys.get(ids)
        if entry is None:
            entry = self._keys[ids] = (str(next(self._serial)), parts)
            if len(self._keys) > self.limit:
                self._keys.popitem(last=False)
        else:
            self._keys.move_to_end(ids)
        return entry[0], entry[1], spec.evolve(**_BLANK)


class RunWorker:
    """One worker process: many runs at once, each a graph in this process's event loop, graded
    here (``tamesu.runner.grading``), so judge-model calls spread across the workers.

    ``setup`` runs once when the worker starts (register plugin targets or assertions);
    ``speech`` is the client of the cluster's speech pool, which the worker's runs use;
    ``own_process``: the worker is a Ray actor, a process that exists for its runs, and sets the
    cycle collector up for them for good (a worker made in a test's process leaves it alone);
    ``router_factory`` makes the worker's model router for a ``models:`` configuration
    (credentials, providers, cache), else a plain one is made per configuration.
    """

    def __init__(
        self,
        *,
        setup: Callable[[], object] | None = None,
        update_golden: bool = False,
        output_dir: str | None = None,
        encode_boundary: bool = False,
        router_factory: Callable[[Any], Any] | None = None,
        speech: SpeechPool | None = None,
        parts_limit: int = PARTS_LIMIT,
        own_process: bool = False,
    ) -> None:
        if setup is not None:
            setup()
        self.own_process = own_process
        """The worker is a process of its own (a Ray actor): it sets the collector up for runs."""
        self.speech = speech
        self.router_factory = router_factory
        self.update_golden = update_golden
        self.output_dir = output_dir
        self.encode_boundary = encode_boundary
        self.parts_limit = parts_limit
        self._services: RunServices | None = None
        self._runs: dict[str, tuple[GradedRun, asyncio.Task[Any]]] = {}
        self._parts: OrderedDict[str, tuple[Any, ...]] = OrderedDict()
        self._done: list[Reply] = []
        self._poller: asyncio.Future[bool] | None = None
        self._cancelled: OrderedDict[str, None] = OrderedDict()
        """Keys cancelled before their run arrived (an exchange and a cancel may cross)."""
        self.on_done: Callable[[], None] | None = None
        """Called when an outcome is ready to take (or the runs ran out): a worker of the
        ``processes`` placement sends outcomes as they finish instead of being polled."""

    def _shared(self) -> RunServices:
        """Made on first use, inside the worker's event loop (the HTTP client belongs to that loop);
        then a worker in a process of its own sets the collector for runs (``tamesu.cycle_collector``)."""
        if self._services is None:
            from tamesu.actors.services import RunServices
            from tamesu.cycle_collector import set_for_worker

            self._services = RunServices.create(
                update_golden=self.update_golden,
                output_dir=self.output_dir,
                router_factory=self.router_factory,
                speech=self.speech,
            )
            if self.own_process:
                set_for_worker()
        return self._services

    async def run(
        self,
        spec: RunSpec,
        secrets: Mapping[str, str] | None = None,
        timeout: float | None = None,
        key: str | None = None,
    ) -> GraphOutcome:
        """One run in one call, its outcome as the result (the placement uses ``exchange``)."""
        key = key or uuid.uuid4().hex
        run = GradedRun(spec, self._shared(), secrets=secrets, encode_boundary=self.encode_boundary)
        task = asyncio.ensure_future(run.run(timeout=timeout))
        self._runs[key] = (run, task)
        try:
            return await task
        finally:
            self._runs.pop(key, None)

    async def exchange(self, items: list[RunItem]) -> list[Reply]:
        """Start ``items``; return the outcomes finished so far, waiting for one if there are none.

        Only the latest exchange waits: an earlier one still waiting is let go with nothing, so
        outcomes never ride on a reply its sender has stopped reading.
        """
        replies = self.start(items)
        if replies or self._done or not self._runs:
            return replies + self.take()
        if self._poller is not None and not self._poller.done():
            self._poller.set_result(False)
        poller = self._poller = asyncio.get_running_loop().create_future()
        try:
            woken = await poller
        finally:
            if self._poller is poller:
                self._poller = None
        if not woken:
            return []
        await asyncio.sleep(0)
        return self.take()

    def start(self, items: list[RunItem]) -> list[Reply]:
        """Start ``items``; the replies of those that could not start (parts unknown, or an error)."""
        replies: list[Reply] = []
        for item in items:
            key = item[0]
            try:
                spec = self._spec(item)
                if spec is None:
                    replies.append((key, NEED_PARTS, None))
                elif key in self._cancelled:
                    del self._cancelled[key]
                else:
                    self._start(key, spec, item[4], item[5])
            except Exception as exc:  # one run that cannot start fails alone
                replies.append((key, FAILED, f"{type(exc).__name__}: {exc}"))
        return replies

    def take(self) -> list[Reply]:
        """The outcomes finished since the last take."""
        done, self._done = self._done, []
        return done

    def _spec(self, item: RunItem) -> RunSpec | None:
        _, light, key, parts, _, _ = item
        if parts is None:
            parts = self._parts.get(key)
            if parts is None:
                return None
            self._parts.move_to_end(key)
        else:
            self._parts[key] = parts
            if len(self._parts) > self.parts_limit:
                self._parts.popitem(last=False)
        return dataclasses.replace(light, **dict(zip(SHARED_FIELDS, parts)))

    def _start(
        self, key: str, spec: RunSpec, secrets: Mapping[str, str] | None, timeout: float | None
    ) -> None:
        run = GradedRun(spec, self._shared(), secrets=secrets, encode_boundary=self.encode_boundary)
        self._runs[key] = (run, asyncio.ensure_future(self._one(key, run, timeout)))

    async def _one(self, key: str, run: GradedRun, timeout: float | None) -> None:
        try:
            reply = pack_outcome(key, await run.run(timeout=timeout))
        except asyncio.CancelledError:
            return
        except Exception as exc:
            reply = (key, FAILED, f"{type(exc).__name__}: {exc}")
        finally:
            self._runs.pop(key, None)
        self._done.append(reply)
        self._wake()

    def _wake(self) -> None:
        if self._poller is not None and not self._poller.done():
            self._poller.set_result(True)
        if self.on_done is not None:
            self.on_done()

    async def cancel(self, key: str) -> GraphOutcome | None:
        """Cancel one run (the caller gave up on it) and return what it had recorded."""
        entry = self._runs.get(key)
        if entry is None:
            self._cancelled[key] = None
            if len(self._cancelled) > 1024:
                self._cancelled.popitem(last=False)
            return None
        run, task = entry
        task.cancel()
        await asyncio.wait([task])
        if not self._runs:
            self._wake()
        return run.outcome()

    def active(self) -> int:
        """Runs in flight in this worker."""
        return len(self._runs)

    def cpu_seconds(self) -> float:
        """CPU seconds this worker's process has used (a capacity search reads how busy it was)."""
        import time

        return time.process_time()

    async def aclose(self) -> None:
        for _, task in list(self._runs.values()):
            task.cancel()
        self._wake()
        if self._services is not None:
            await self._services.aclose()
            self._services = None
