"""The processes placement: runs spread over N worker processes on this machine, without Ray.

One driver process (the scheduler or the load driver, their results, reports, live view and
gates) and N workers, each a ``RunWorker``, the same class a Ray worker is, in a process of its own
(``process_worker.py``), so a run is graded in a worker exactly as on Ray. The traffic is Ray's
too, over a Unix socket pair instead of actor calls: the runs started in one event-loop tick go to
a worker in one frame, the parts their specs share (target, test, assertions, models) once per
worker; outcomes come back as they finish, those of one tick in one frame, as msgpack.

A worker that dies takes its runs with it: they come back as error outcomes with
``error_kind="worker"`` and ``retryable=True`` (the last line the worker printed in the message),
and the worker is replaced. Workers ignore Ctrl-C: the driver cancels the runs and each worker
hands back what its cancelled runs recorded.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import os
import pickle
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tamesu.kernel.outcome import GraphOutcome
from tamesu.untrusted import printable

from .process_worker import frame, read_frame
from .worker import FAILED, NEED_PARTS, RunItem, SpecSplitter, failed_outcome, read_outcome

if TYPE_CHECKING:
    from tamesu.actors.graph import Ready
    from tamesu.run_spec import RunSpec
    from tamesu.runner.grading import OutcomeSink

__all__ = [
    "CANCEL_GRACE",
    "ProcessPlacement",
    "agent_on_this_machine",
    "process_count",
    "usable_cores",
]

CANCEL_GRACE = 10.0
"""Seconds a cancelled run's worker gets to hand back the partial outcome."""
WORKER_MODULE = "tamesu.runner.placement.process_worker"
_TAIL = 20
"""Lines of a worker's own output kept, for the message when it dies."""
_PICKLE_ERRORS = (pickle.PicklingError, TypeError, ValueError, AttributeError)


class _Worker:
    """The driver's side of one worker process: its runs waiting to go, at the worker, and its calls."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.process: asyncio.subprocess.Process | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.known: set[str] = set()
        """Keys of the shared spec parts this worker holds."""
        self.queue: list[RunItem] = []
        self.waiting: dict[str, tuple[RunSpec, asyncio.Future[GraphOutcome]]] = {}
        self.items: dict[str, RunItem] = {}
        """The runs at the worker, as sent (a NEED_PARTS reply sends one again with its parts)."""
        self.answers: dict[int, asyncio.Future[Any]] = {}
        self.inflight = 0
        self.flushing = False
        self.dead = False
        self.ready = asyncio.Event()
        self.starting: asyncio.Task[None] | None = None
        self.death: str | None = None
        """Why the worker is gone, once it is."""
        self.tail: collections.deque[str] = collections.deque(maxlen=_TAIL)


class ProcessPlacement:
    """``processes`` worker processes on this machine, each running up to
    ``max_concurrency_per_worker`` runs at once (more wait here); runs go to the least-loaded one.

    ``worker_setup`` (a module-level function, pickled by name) runs once in each worker, to
    register plugin targets and assertions there; ``router_factory`` makes each worker's model
    router (it travels pickled, as to a Ray worker).
    """

    calls_ready: ClassVar[bool] = False
    """The graphs run in the workers: a run's hooks come before it, without its remote agents' URLs."""

    def __init__(
        self,
        *,
        processes: int,
        max_concurrency_per_worker: int = 64,
        worker_setup: Callable[[], object] | None = None,
        router_factory: Callable[[Any], Any] | None = None,
        update_golden: bool = False,
        output_dir: str | Path | None = None,
        encode_boundary: bool = False,
        python: str | None = None,
    ) -> None:
        if processes < 1:
            raise ValueError("a processes placement needs at least one process")
        self.processes = processes
        self.max_per_worker = max(1, max_concurrency_per_worker)
        self.python = python or sys.executable
        self._init = (
            "init",
            {
                "setup": worker_setup,
                "update_golden": update_golden,
                "output_dir": None if output_dir is None else str(output_dir),
                "encode_boundary": encode_boundary,
                "router_factory": router_factory,
                "own_process": True,
            },
            [p for p in sys.path if p],
        )
        try:
            self._init_frame = frame(self._init)
        except _PICKLE_ERRORS as exc:
            raise TypeError(
                "the processes placement pickles worker_setup and router_factory for its workers: "
                f"give a module-level function ({exc})"
            ) from None
        self._workers: list[_Worker] = []
        self._splitter = SpecSplitter()
        self._keys = itertools.count(1)
        self._calls = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._room = asyncio.Event()
        self._next = 0
        self._closed = False
        self.replaced = 0
        """Workers replaced after they died."""

    # -- the workers' lives ------------------------------------------------------------------

    @property
    def pids(self) -> list[int | None]:
        """The worker processes' ids (None for one still starting), for diagnostics and tests."""
        return [w.process.pid if w.process is not None else None for w in self._workers]

    def _bind(self) -> None:
        """Runs belong to one event loop; a new loop (a later ``asyncio.run``) starts new workers."""
        loop = asyncio.get_running_loop()
        if loop is self._loop:
            return
        for old in self._workers:
            self._kill(old)
        self._loop = loop
        self._room = asyncio.Event()
        self._workers = [self._spawn(i) for i in range(self.processes)]

    def _spawn(self, index: int) -> _Worker:
        worker = _Worker(index)
        worker.starting = asyncio.ensure_future(self._start(worker))
        return worker

    async def _start(self, worker: _Worker) -> None:
        ours, theirs = socket.socketpair()
        try:
            worker.process = await asyncio.create_subprocess_exec(
                self.python,
                "-m",
                WORKER_MODULE,
                str(theirs.fileno()),
                pass_fds=(theirs.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as exc:
            ours.close()
            self._lost(worker, f"the worker process could not start: {exc}")
            return
        finally:
            theirs.close()
        reader, worker.writer = await asyncio.open_connection(sock=ours, limit=1 << 20)
        worker.writer.write(self._init_frame)
        for job in (self._read(worker, reader), self._drain_output(worker)):
            task = asyncio.ensure_future(job)
            worker.tasks.add(task)
            task.add_done_callback(worker.tasks.discard)
        if worker.queue and not worker.flushing:
            worker.flushing = True
            asyncio.get_running_loop().call_soon(self._flush, worker)

    async def _drain_output(self, worker: _Worker) -> None:
        """What the worker prints (libraries' warnings, a traceback as it dies): its last lines are
        kept for the message if it dies; with TAMESU_DEBUG set they are shown as they come."""
        assert worker.process is not None and worker.process.stdout is not None
        debug = bool(os.environ.get("TAMESU_DEBUG"))
        stdout = worker.process.stdout
        while True:
            try:
                line = await stdout.readline()
            except ValueError:  # a line over the reader's limit, which the reader drops
                worker.tail.append("(a line too long to keep)")
                continue
            if not line:
                return
            text = printable(line.decode("utf-8", "replace").rstrip()[:500])
            if text:
                worker.tail.append(text)
                if debug:
                    sys.stderr.write(f"[worker {worker.index}] {text}\n")

    async def _read(self, worker: _Worker, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                message = await read_frame(reader)
            except Exception as exc:  # a frame that does not unpickle: the link cannot be trusted
                message = None
                worker.tail.append(f"a message from the worker did not decode: {exc}")
            if message is None:
                break
            if message[0] == "done":
                for key, kind, data in message[1]:
                    self._reply(worker, key, kind, data)
            elif message[0] == "answer":
                future = worker.answers.pop(message[1], None)
                if future is not None and not future.done():
                    future.set_result(message[2])
            elif message[0] == "ready":
                worker.ready.set()
        if not worker.dead:
            self._lost(worker, await self._death(worker))

    async def _death(self, worker: _Worker) -> str:
        code: int | None = None
        if worker.process is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                code = await asyncio.wait_for(worker.process.wait(), 2.0)
        for task in list(worker.tasks):
            if task is not asyncio.current_task():
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(task), 1.0)
        last = worker.tail[-1] if worker.tail else "it printed nothing"
        status = "" if code is None else f" (exit {code})"
        if not worker.ready.is_set():
            return f"the worker process could not start{status}: {last}"
        return f"the worker process running this run died{status}: {last}"

    def _lost(self, worker: _Worker, message: str) -> None:
        """Every run the worker held or was about to get fails as retryable, and it is replaced,
        unless it never came up: then its slot stays dead (a worker that cannot start would only be
        started again and again), and the runs given to it fail at once with the reason."""
        if worker.dead:
            return
        worker.dead = True
        worker.death = message
        waiting, worker.waiting = worker.waiting, {}
        worker.queue, worker.items = [], {}
        for spec, future in waiting.values():
            if not future.done():
                future.set_result(failed_outcome(spec, message, "worker", True))
        for answer in worker.answers.values():
            if not answer.done():
                answer.set_result(None)
        self._kill(worker)
        if not self._closed and worker.ready.is_set() and worker in self._workers:
            self._workers[self._workers.index(worker)] = self._spawn(worker.index)
            self.replaced += 1
        self._room.set()

    def _kill(self, worker: _Worker) -> None:
        worker.dead = True
        if worker.writer is not None:
            worker.writer.close()
        if worker.process is not None and worker.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()

    # -- runs --------------------------------------------------------------------------------

    def _choose(self) -> _Worker:
        """The least-loaded live worker; among equals, the next in round-robin order (a dead one
        only when none lives)."""
        count = len(self._workers)
        order = [self._workers[(self._next + i) % count] for i in range(count)]
        best = min([w for w in order if not w.dead] or order, key=lambda w: w.inflight)
        self._next = (best.index + 1) % count
        return best

    async def _slot(self) -> _Worker:
        """A worker with room for one more run, waiting while every worker is full."""
        while True:
            worker = self._choose()
            if worker.inflight < self.max_per_worker or worker.dead:
                return worker
            self._room.clear()
            await self._room.wait()

    async def run(
        self,
        spec: RunSpec,
        *,
        secrets: Mapping[str, str] | None = None,
        timeout: float | None = None,
        sink: OutcomeSink | None = None,
        ready: Ready | None = None,
    ) -> GraphOutcome:
        if ready is not None:
            raise ValueError("a processes placement runs graphs in its workers: it takes no ready")
        if self._closed:
            raise RuntimeError("this processes placement is closed")
        self._bind()
        worker = await self._slot()
        if worker.dead:
            return failed_outcome(spec, worker.death or "no worker process is running", "worker", False)
        key = str(next(self._keys))
        future: asyncio.Future[GraphOutcome] = asyncio.get_running_loop().create_future()
        worker.inflight += 1
        try:
            worker.waiting[key] = (spec, future)
            parts_key, parts, light = self._splitter.split(spec)
            known = parts_key in worker.known
            worker.known.add(parts_key)
            item = (
                key,
                light,
                parts_key,
                None if known else parts,
                dict(secrets) if secrets else None,
                timeout,
            )
            self._enqueue(worker, item)
            return await future
        except asyncio.CancelledError:
            sent = key in worker.items
            self._forget(worker, key)
            if sent and not worker.dead:
                partial = await self._call(worker, "cancel", key, timeout=CANCEL_GRACE)
                if sink is not None and partial is not None:
                    with contextlib.suppress(Exception):
                        sink(read_outcome(partial[1], partial[2]))
            raise
        finally:
            worker.inflight -= 1
            self._room.set()

    def _enqueue(self, worker: _Worker, item: RunItem) -> None:
        worker.queue.append(item)
        if not worker.flushing and worker.writer is not None:
            worker.flushing = True
            asyncio.get_running_loop().call_soon(self._flush, worker)

    def _forget(self, worker: _Worker, key: str) -> None:
        worker.waiting.pop(key, None)
        worker.items.pop(key, None)
        worker.queue = [item for item in worker.queue if item[0] != key]

    def _flush(self, worker: _Worker) -> None:
        """Send what is queued for the worker: every run started in this tick, in one frame."""
        worker.flushing = False
        items, worker.queue = worker.queue, []
        if items and not worker.dead:
            self._send(worker, items)

    def _send(self, worker: _Worker, items: list[RunItem]) -> None:
        assert worker.writer is not None
        try:
            data = frame(("start", items))
        except _PICKLE_ERRORS as exc:  # a spec that cannot be pickled fails its own run, not the batch
            if len(items) == 1:
                worker.known.discard(items[0][2])
                text = f"this run cannot travel to a worker process: {type(exc).__name__}: {exc}"
                self._settle(worker, items[0][0], text)
            else:
                for item in items:
                    self._send(worker, [item])
            return
        for item in items:
            worker.items[item[0]] = item
        worker.writer.write(data)

    def _reply(self, worker: _Worker, key: str, kind: int, data: Any) -> None:
        item = worker.items.pop(key, None)
        if kind == NEED_PARTS:
            entry = worker.waiting.get(key)
            if entry is not None and item is not None:
                _, parts, _ = self._splitter.split(entry[0])
                self._enqueue(worker, (*item[:3], parts, *item[4:]))  # type: ignore[arg-type]
            return
        if kind == FAILED:
            self._settle(worker, key, f"the worker process could not run this run: {data}")
        else:
            self._settle(worker, key, None, kind, data)

    def _settle(self, worker: _Worker, key: str, error: str | None, kind: int = 0, data: Any = None) -> None:
        """Hand a run its outcome (or its failure); a run no longer waited for is dropped."""
        entry = worker.waiting.pop(key, None)
        if entry is None or entry[1].done():
            return
        spec, future = entry
        if error is None:
            try:
                future.set_result(read_outcome(kind, data))
                return
            except Exception as exc:
                error = f"the worker process could not run this run: its outcome did not decode: {exc}"
        future.set_result(failed_outcome(spec, error, "internal", False))

    async def _call(self, worker: _Worker, method: str, *args: Any, timeout: float) -> Any:
        """One call of the worker's ``method``; None when it does not answer within ``timeout``."""
        if worker.dead or worker.writer is None:
            return None
        call_id = next(self._calls)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        worker.answers[call_id] = future
        worker.writer.write(frame(("call", call_id, method, args)))
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            return None
        finally:
            worker.answers.pop(call_id, None)

    # -- what the load driver and the capacity search read ------------------------------------

    async def health(self, timeout: float = 2.0) -> dict[str, Any]:
        """Workers that answer within ``timeout``, runs in flight on each, workers replaced."""
        self._bind()
        answers = await asyncio.gather(*(self._call(w, "active", timeout=timeout) for w in self._workers))
        return {
            "placement": "processes",
            "workers": len(answers),
            "alive": sum(1 for a in answers if a is not None),
            "in_flight": [a for a in answers if a is not None],
            "replaced": self.replaced,
        }

    async def cpu_seconds(self, timeout: float = 2.0) -> list[float | None]:
        """Each worker's CPU seconds so far (None for one that did not answer within ``timeout``);
        a worker still starting is waited for up to ``timeout``."""
        self._bind()

        async def ask(worker: _Worker) -> float | None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(worker.ready.wait(), timeout)
            value = await self._call(worker, "cpu_seconds", timeout=timeout)
            return None if value is None else float(value)

        return list(await asyncio.gather(*(ask(w) for w in self._workers)))

    async def aclose(self) -> None:
        """Ask every worker to end its runs and exit; one that does not within the grace is killed."""
        if self._closed:
            return
        self._closed = True
        workers, self._workers = self._workers, []
        for worker in workers:
            if worker.starting is not None:
                with contextlib.suppress(Exception):
                    await worker.starting
        for worker in workers:
            worker.dead = True
            if worker.writer is not None and not worker.writer.is_closing():
                with contextlib.suppress(Exception):
                    worker.writer.write(frame(("close",)))
        for worker in workers:
            if worker.process is not None and worker.process.returncode is None:
                try:
                    await asyncio.wait_for(worker.process.wait(), CANCEL_GRACE)
                except asyncio.TimeoutError:
                    self._kill(worker)
                    await worker.process.wait()
            self._kill(worker)
            for task in list(worker.tasks):
                task.cancel()
            await asyncio.gather(*worker.tasks, return_exceptions=True)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_LOOPBACK = {"localhost", "ip6-localhost", "0.0.0.0", "::", "::1"}


def agent_on_this_machine(specs: Sequence[RunSpec]) -> bool:
    """Whether some run's agent is served from this machine: an address of its target on loopback
    (or this host's name), or an agent process its target starts (``command``)."""
    from urllib.parse import urlsplit

    host_names = {socket.gethostname().lower(), *_LOOPBACK}

    def local(value: Any, key: str = "") -> bool:
        if isinstance(value, dict):
            return any(local(v, str(k)) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return any(local(v, key) for v in value)
        if not isinstance(value, str) or not value:
            return False
        if key == "command":
            return True
        text = value if "://" in value else f"//{value}" if key in ("address", "host", "uri") else ""
        if not text:
            return False
        with contextlib.suppress(ValueError):
            host = (urlsplit(text).hostname or "").lower()
            return host in host_names or host.startswith("127.")
        return False

    for spec in specs:
        target = spec.target
        dump = target.model_dump() if hasattr(target, "model_dump") else {}
        if local(dump):
            return True
    return False


def process_count(requested: int | str | None, specs: Sequence[RunSpec], peak: int) -> int:
    """How many worker processes ``--processes`` asks for: a number as given; ``auto``: the cores
    the agent leaves free (one fewer than this process may use when an agent runs on this
    machine), never more than the runs that can be in flight at once. 1 or less: none (the runs
    stay in the driver's process)."""
    if requested is None:
        return 1
    if isinstance(requested, int):
        return requested
    free = usable_cores() - (1 if agent_on_this_machine(specs) else 0)
    return max(1, min(free, peak))
