"""The Ray placement: runs spread over a pool of async Ray worker actors.

This is the only module of tamesu that imports Ray. ``RunWorker`` (``worker.py``) is a plain
class, testable without Ray, that becomes an actor only here, with ``ray.remote(**options)(RunWorker)``.
A run's own actors are co-located in one worker process, where they talk through asyncio queues
exactly as in the local placement; only the run's spec goes in and its outcome comes back, and
not one actor call per run: ``_Link`` sends the runs started in one event-loop tick to a worker
together and gets outcomes back in batches (see ``worker.py`` for the protocol and its costs).
Each worker holds its own ``RunServices`` (HTTP client, redactor); secret values travel with
each run. A worker that dies takes its runs with it: they come back as error outcomes with
``error_kind="worker"`` and ``retryable=True``, and the worker is replaced.

The speech engines are not per worker: ``RaySpeechPool`` runs them as two groups of replica
actors (TTS on CPUs, STT with ``num_gpus`` where the cluster has GPUs), sized by the
``Autoscaler`` from the requests in flight, and every worker's calls reach them through a
``RaySpeechClient``, the speech pool of the worker's run services; requests from many calls travel
to a replica in batches (``Batcher``), an utterance being one request.

A lost worker node only costs the runs it held. A lost head node costs the cluster: a
``HeadWatch`` (``head.py``) sees it, and every run in flight (and every later one) fails with
``ClusterLost``, which stops the invocation with what finished kept for ``--resume``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
import ray
import ray.exceptions

from tamesu.actors.pools import (
    Autoscaler,
    Batcher,
    SpeechServer,
    SynthesisRequest,
    TranscriptionRequest,
    audio_of,
    transcription_of,
)
from tamesu.errors import ClusterLost
from tamesu.kernel.outcome import GraphOutcome

from .head import HEAD_GRACE_S, HeadWatch
from .worker import (
    FAILED,
    NEED_PARTS,
    RunItem,
    RunWorker,
    SpecSplitter,
    failed_outcome,
    first_line,
    read_outcome,
)

if TYPE_CHECKING:
    from tamesu.actors.graph import Ready
    from tamesu.audio.stt import Transcription
    from tamesu.audio.tts import Audio
    from tamesu.run_spec import RunSpec
    from tamesu.runner.grading import OutcomeSink

__all__ = ["RayPlacement", "RaySpeechClient", "RaySpeechPool", "RunWorker", "start_local_ray"]

log = logging.getLogger(__name__)

CANCEL_GRACE = 10.0
"""Seconds a cancelled run's worker gets to hand back the partial outcome."""

LOCAL_HEAD_WAIT_S = 120
"""Seconds a local head started by tamesu gets to come up (Ray's own default is 30), unless the user set it."""
LOCAL_HEAD_TRIES = 2
"""Starts of a local head before its failure stands: Ray's raylet has a fixed 30 s to register,
which a busy machine can miss once."""


def start_local_ray(**init: Any) -> None:
    """``ray.init`` of a local head (no address), given time to come up and once more if it timed out.

    Ray raises a plain ``Exception`` ("The current node timed out during startup") when its raylet
    did not register within its fixed 30 s, and a ``TimeoutError`` when the GCS did not write its
    port in time; both are worth one more try after ``ray.shutdown``. The half-started node's
    processes are left to Ray's reaper, which ends them with this process. Any other error, or a
    second timeout, is raised."""
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", str(LOCAL_HEAD_WAIT_S))
    for attempt in range(1, LOCAL_HEAD_TRIES + 1):
        try:
            ray.init(**init)
            return
        except Exception as exc:
            if attempt == LOCAL_HEAD_TRIES or "timed out" not in str(exc).lower():
                raise
            why = str(exc).strip().partition("\n")[0][:200] or type(exc).__name__
            log.warning("the local Ray head did not come up (%s); starting it once more", why)
            ray.shutdown()


_WORKER_GONE: tuple[type[BaseException], ...] = (
    ray.exceptions.RayActorError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.ObjectLostError,
    ray.exceptions.NodeDiedError,
)


class _Link:
    """The driver's side of one worker: runs waiting to go, runs at the worker, exchanges in flight."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.known: set[str] = set()
        """Keys of the shared spec parts this worker holds."""
        self.reset()

    def reset(self) -> None:
        """Forget the runs (of an event loop that is gone); the worker keeps the parts it holds."""
        self.queue: list[RunItem] = []
        self.waiting: dict[str, tuple[RunSpec, asyncio.Future[GraphOutcome]]] = {}
        self.sent: set[str] = set()
        self.calls = 0
        self.flushing = False
        self.dead = False


class RayPlacement:
    """The one wrapper around every Ray call tamesu makes.

    ``address=None`` starts an embedded local Ray (unless Ray is already initialised in this
    process, in which case it is used and left running); an address joins a cluster.
    ``num_workers`` defaults to the cluster's CPU count; each worker runs up to
    ``max_concurrency_per_worker`` runs at once (more wait here). Runs go to the least-loaded worker.
    ``worker_setup`` (picklable) runs once in each worker, to register plugin targets and
    assertions there; ``router_factory`` makes each worker's model router.
    """

    calls_ready: ClassVar[bool] = False
    """The graphs run in the workers: a run's hooks come before it, without its remote agents' URLs."""

    def __init__(
        self,
        *,
        address: str | None = None,
        num_workers: int | None = None,
        max_concurrency_per_worker: int = 64,
        num_cpus: int | None = None,
        working_dir: str | Path | None = None,
        worker_setup: Callable[[], object] | None = None,
        router_factory: Callable[[Any], Any] | None = None,
        update_golden: bool = False,
        output_dir: str | Path | None = None,
        encode_boundary: bool = False,
        speech_pool: bool | dict[str, Any] = False,
        head_grace: float = HEAD_GRACE_S,
    ) -> None:
        self._started_ray = False
        if not ray.is_initialized():
            init: dict[str, Any] = {
                "address": address or None,
                "include_dashboard": False,
                "logging_level": logging.WARNING,
                "log_to_driver": False,
            }
            if working_dir is not None:
                init["runtime_env"] = {"working_dir": str(working_dir)}
            if address is None and num_cpus is not None:
                init["num_cpus"] = num_cpus
            if address is None:
                start_local_ray(**init)
            else:
                ray.init(**init)
            self._started_ray = True
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        count = num_workers or max(1, int(cpus))
        gcs = _gcs_address()
        self.head = HeadWatch(*gcs, grace=head_grace) if gcs is not None else None
        """The head's GCS the watch connects to; None where Ray does not say (a Ray client)."""
        self.address = address if address and address != "auto" else (self.head.address if self.head else "")
        """The cluster as the user named it (else its GCS address), for messages."""
        self.lost: ClusterLost | None = None
        self._watch: asyncio.Task[None] | None = None
        self.speech: RaySpeechPool | None = None
        if speech_pool:
            options = dict(speech_pool) if isinstance(speech_pool, dict) else {}
            options.setdefault("setup", worker_setup)
            self.speech = RaySpeechPool(**options)
        self.max_per_worker = max(1, max_concurrency_per_worker)
        self._options: dict[str, Any] = {
            "num_cpus": min(1.0, cpus / count) if cpus else 0,
            "max_concurrency": max_concurrency_per_worker + 8,
            "max_restarts": 0,
        }
        self._worker_kwargs = {
            "setup": worker_setup,
            "update_golden": update_golden,
            "output_dir": None if output_dir is None else str(output_dir),
            "encode_boundary": encode_boundary,
            "router_factory": router_factory,
            "speech": self.speech.client() if self.speech is not None else None,
            "own_process": True,
        }
        self._actor_cls = ray.remote(**self._options)(RunWorker)
        self._links = [_Link(self._spawn()) for _ in range(count)]
        self._inflight = [0] * count
        self._ready = [True] * count
        self._probes: set[asyncio.Future[None]] = set()
        self._receiving: set[asyncio.Future[None]] = set()
        self._splitter = SpecSplitter()
        self._keys = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._room = asyncio.Event()
        self._next = 0
        self._closed = False
        self.replaced = 0
        """Workers replaced after they died."""

    @property
    def workers(self) -> list[Any]:
        """The worker actor handles (for diagnostics and tests)."""
        return [link.worker for link in self._links]

    def _spawn(self) -> Any:
        return self._actor_cls.remote(**self._worker_kwargs)

    def _bind(self) -> None:
        """Runs belong to one event loop; a new loop (a later ``asyncio.run``) starts afresh."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            if self.head is not None and self.lost is None:
                self._watch = loop.create_task(self.head.watch(self._lose), name="tamesu-ray-head")
            self._room = asyncio.Event()
            self._inflight = [0] * len(self._links)
            for index, link in enumerate(self._links):
                link.reset()
                if not self._ready[index]:
                    self._probe(index, link)

    def _choose(self) -> int:
        """The least-loaded started worker; among equals, the next in round-robin order.

        A replacement that has not started yet (its node died and no other has room) gets runs
        only when no worker is ready, so runs do not queue behind an actor that may never start.
        """
        count = len(self._links)
        order = [(self._next + i) % count for i in range(count)]
        ready = [i for i in order if self._ready[i]] or order
        best = min(ready, key=lambda i: self._inflight[i])
        self._next = (best + 1) % count
        return best

    async def _slot(self) -> int:
        """A worker with room for one more run, waiting while every worker is full."""
        while True:
            if self.lost is not None:
                raise self._loss()
            index = self._choose()
            if self._inflight[index] < self.max_per_worker:
                return index
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
            raise ValueError("a Ray placement runs graphs in its workers: it takes no ready (calls_ready)")
        if self._closed:
            raise RuntimeError("this Ray placement is closed")
        if self.lost is not None:
            raise self._loss()
        self._bind()
        if self.speech is not None:
            self.speech.start()
        index = await self._slot()
        link = self._links[index]
        key = str(next(self._keys))
        future: asyncio.Future[GraphOutcome] = asyncio.get_running_loop().create_future()
        self._inflight[index] += 1
        try:
            link.waiting[key] = (spec, future)
            self._enqueue(link, key, spec, dict(secrets) if secrets else None, timeout)
            return await future
        except asyncio.CancelledError:
            sent = key in link.sent
            self._forget(link, key)
            if sent:
                partial = await self._cancel(link.worker, key)
                if sink is not None and partial is not None:
                    sink(partial)
            raise
        finally:
            self._inflight[index] -= 1
            self._room.set()

    def _enqueue(
        self, link: _Link, key: str, spec: RunSpec, secrets: dict[str, str] | None, timeout: float | None
    ) -> None:
        parts_key, parts, light = self._splitter.split(spec)
        link.queue.append(
            (key, light, parts_key, None if parts_key in link.known else parts, secrets, timeout)
        )
        if not link.flushing:
            link.flushing = True
            asyncio.get_running_loop().call_soon(self._flush, link)

    def _forget(self, link: _Link, key: str) -> None:
        link.waiting.pop(key, None)
        link.sent.discard(key)
        link.queue = [item for item in link.queue if item[0] != key]

    def _flush(self, link: _Link) -> None:
        """Send what is queued for the worker: every run started in this tick, in one exchange."""
        link.flushing = False
        items, link.queue = link.queue, []
        if items and not link.dead:
            self._send(link, items)

    def _send(self, link: _Link, items: list[RunItem]) -> None:
        try:
            ref = link.worker.exchange.remote(items)
        except Exception as exc:  # a spec that cannot be pickled fails its own run, not the batch
            if len(items) == 1:
                self._settle(link, items[0][0], exc)
                self._keep_polling(link)
            else:
                for item in items:
                    self._send(link, [item])
            return
        link.sent.update(item[0] for item in items)
        link.calls += 1
        task = asyncio.ensure_future(self._receive(link, ref, items))
        self._receiving.add(task)
        task.add_done_callback(self._receiving.discard)

    async def _receive(self, link: _Link, ref: Any, items: list[RunItem]) -> None:
        try:
            replies = await ref
        except _WORKER_GONE as exc:
            link.calls -= 1
            if self.head is None or await self.head.answering():
                self._lost(link, exc)
            return
        except ray.exceptions.RayError as exc:
            link.calls -= 1
            message = f"Ray could not run this run: {first_line(exc)}"
            failed = [item[0] for item in items] or list(link.sent)
            for key in failed:
                link.sent.discard(key)
                self._settle(link, key, message)
            self._keep_polling(link)
            return
        link.calls -= 1
        link.known.update(item[2] for item in items if item[3] is not None)
        for key, kind, data in replies:
            link.sent.discard(key)
            if kind == NEED_PARTS:
                self._resend(link, key, items)
            elif kind == FAILED:
                self._settle(link, key, f"Ray could not run this run: {data}")
            else:
                self._settle(link, key, None, kind, data)
        self._keep_polling(link)

    def _settle(
        self, link: _Link, key: str, error: str | BaseException | None, kind: int = 0, data: Any = None
    ) -> None:
        """Hand a run its outcome (or its failure); a run no longer waited for is dropped."""
        entry = link.waiting.pop(key, None)
        if entry is None or entry[1].done():
            return
        spec, future = entry
        if isinstance(error, BaseException):
            future.set_exception(error)
            return
        if error is None:
            try:
                future.set_result(read_outcome(kind, data))
                return
            except (msgspec.DecodeError, ValueError) as exc:
                error = f"Ray could not run this run: its outcome did not decode: {exc}"
        future.set_result(failed_outcome(spec, error, "internal", False))

    def _resend(self, link: _Link, key: str, items: list[RunItem]) -> None:
        item = next((i for i in items if i[0] == key), None)
        if item is None or key not in link.waiting:
            return
        parts_key = item[2]
        link.known.discard(parts_key)
        spec = link.waiting[key][0]
        _, parts, light = self._splitter.split(spec)
        link.queue.append((key, light, parts_key, parts, item[4], item[5]))
        if not link.flushing:
            link.flushing = True
            asyncio.get_running_loop().call_soon(self._flush, link)

    def _keep_polling(self, link: _Link) -> None:
        """While the worker holds runs, one exchange is always waiting there for their outcomes."""
        if link.sent and link.calls == 0 and not link.queue and not link.dead:
            self._send(link, [])

    def _lost(self, link: _Link, exc: BaseException) -> None:
        """The worker died: every run it held or was about to get fails as retryable, and it is replaced."""
        if link.dead:
            return
        link.dead = True
        message = f"the Ray worker running this run died: {first_line(exc)}"
        waiting, link.waiting = link.waiting, {}
        link.queue, link.sent = [], set()
        for spec, future in waiting.values():
            if not future.done():
                future.set_result(failed_outcome(spec, message, "worker", True))
        if link in self._links:
            self._replace(self._links.index(link))

    async def _cancel(self, worker: Any, key: str) -> GraphOutcome | None:
        try:
            return await asyncio.wait_for(worker.cancel.remote(key), CANCEL_GRACE)  # type: ignore[no-any-return]
        except (asyncio.TimeoutError, ray.exceptions.RayError):
            return None

    def _replace(self, index: int) -> None:
        if self._closed:
            return
        link = self._links[index] = _Link(self._spawn())
        self.replaced += 1
        self._ready[index] = False
        self._probe(index, link)

    def _probe(self, index: int, link: _Link) -> None:
        probe = asyncio.ensure_future(self._started(index, link))
        self._probes.add(probe)
        probe.add_done_callback(self._probes.discard)

    async def _started(self, index: int, link: _Link) -> None:
        """Mark a replacement ready once it answers (it may wait for a node with room)."""
        with contextlib.suppress(ray.exceptions.RayError):
            await link.worker.active.remote()
            if self._links and self._links[index] is link:
                self._ready[index] = True
                self._room.set()

    def _loss(self) -> ClusterLost:
        assert self.lost is not None
        return ClusterLost(self.lost.address, silent_for=self.lost.silent_for)

    def _lose(self, silent_for: float) -> None:
        """The cluster is gone: every run waiting here fails with ``ClusterLost`` (a worker lost with
        the head is not a retryable worker error: ``--resume`` must redo its runs); no Ray call is
        made again."""
        assert self.head is not None
        self.lost = ClusterLost(self.address, silent_for=round(silent_for))
        for link in self._links:
            link.dead = True
            waiting, link.waiting = link.waiting, {}
            link.queue, link.sent = [], set()
            for _, future in waiting.values():
                if not future.done():
                    future.set_exception(self._loss())
        for task in [*self._probes, *self._receiving]:
            task.cancel()
        self._room.set()

    async def health(self, timeout: float = 2.0) -> dict[str, Any]:
        """Workers that answer within ``timeout``, runs in flight on each, workers replaced, nodes alive."""
        if self.lost is not None:
            return {"placement": "ray", "workers": len(self._links), "alive": 0, "lost": str(self.lost)}

        async def ping(worker: Any) -> int | None:
            try:
                return await asyncio.wait_for(worker.active.remote(), timeout)  # type: ignore[no-any-return]
            except (asyncio.TimeoutError, ray.exceptions.RayError):
                return None

        answers = await asyncio.gather(*(ping(w) for w in self.workers))
        nodes = await asyncio.to_thread(lambda: sum(1 for n in ray.nodes() if n.get("Alive")))
        report: dict[str, Any] = {
            "placement": "ray",
            "workers": len(answers),
            "alive": sum(1 for a in answers if a is not None),
            "in_flight": [a for a in answers if a is not None],
            "replaced": self.replaced,
            "nodes": nodes,
        }
        if self.speech is not None:
            report["speech"] = self.speech.replicas()
        return report

    async def cpu_seconds(self, timeout: float = 2.0) -> list[float | None]:
        """Each worker's CPU seconds so far (None for one that did not answer within ``timeout``)."""
        if self.lost is not None:
            return []

        async def ask(worker: Any) -> float | None:
            try:
                return float(await asyncio.wait_for(worker.cpu_seconds.remote(), timeout))
            except (asyncio.TimeoutError, ray.exceptions.RayError):
                return None

        return list(await asyncio.gather(*(ask(w) for w in self.workers)))

    async def aclose(self) -> None:
        """Stop the workers; shut Ray down only when this placement started it."""
        if self._closed:
            return
        self._closed = True
        for task in [*self._probes, *self._receiving, *([self._watch] if self._watch else [])]:
            task.cancel()
        if self.lost is not None:  # nothing there to stop, and Ray calls would wait for the head
            self._links = []
            if self._started_ray:
                ray.shutdown()
            return
        for link in self._links:
            link.dead = True
            try:
                await asyncio.wait_for(link.worker.aclose.remote(), CANCEL_GRACE)
            except (asyncio.TimeoutError, ray.exceptions.RayError):
                pass
            ray.kill(link.worker)
        self._links = []
        if self.speech is not None:
            await self.speech.aclose()
        if self._started_ray:
            ray.shutdown()


def _gcs_address() -> tuple[str, int] | None:
    """The head's GCS address of the connected cluster, as (host, port)."""
    try:
        host, port = str(ray.get_runtime_context().gcs_address).rsplit(":", 1)
        return host, int(port)
    except Exception:  # a Ray client connection, or a Ray that does not say
        return None


_WAIT = 0.005
"""Seconds a speech request waits for others to share its trip to a replica."""


class RaySpeechClient:
    """A worker's view of the speech pool: it finds the replicas by name and batches to them.

    Picklable (it holds only names), so it travels to every worker with its constructor. Each
    request goes to the replica with the fewest of this client's requests in flight; a replica
    that died (or was scaled away) is forgotten and the batch is sent again to another.
    """

    def __init__(self, prefix: str, namespace: str | None = None, *, max_batch: int = 32) -> None:
        self.prefix = prefix
        self.namespace = namespace
        self.max_batch = max_batch
        self._replicas: dict[str, dict[str, Any]] = {"tts": {}, "stt": {}}
        self._batchers: dict[tuple[str, str], Batcher[Any, Any]] = {}
        self._load: dict[str, int] = {}
        self._seen = 0.0

    def __getstate__(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "namespace": self.namespace, "max_batch": self.max_batch}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["prefix"], state["namespace"], max_batch=state["max_batch"])  # type: ignore[misc]

    async def synthesize(
        self, text: str, *, voice: str | None = None, language: str | None = None, engine: str | None = None
    ) -> Audio:
        request = SynthesisRequest(text=text, voice=voice, language=language, engine=engine)
        return audio_of(await self._submit("tts", "synthesize_batch", request))

    async def transcribe(
        self, audio: Audio, *, language: str | None = None, engine: str | None = None
    ) -> Transcription:
        request = TranscriptionRequest(
            pcm=audio.samples.tobytes(), sample_rate=audio.sample_rate, language=language, engine=engine
        )
        return transcription_of(await self._submit("stt", "transcribe_batch", request))

    def stats(self) -> dict[str, Any]:
        return {
            "pool": "ray",
            "replicas": {kind: sorted(r) for kind, r in self._replicas.items()},
            "batches": {f"{k[0]}:{k[1]}": b.batches for k, b in self._batchers.items()},
            "requests": {f"{k[0]}:{k[1]}": b.requests for k, b in self._batchers.items()},
        }

    async def _refresh(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._seen < 5.0 and all(self._replicas.values()):
            return
        names = await asyncio.to_thread(ray.util.list_named_actors, all_namespaces=False)
        for kind in ("tts", "stt"):
            start = f"{self.prefix}-{kind}-"
            found = {n for n in names if isinstance(n, str) and n.startswith(start)}
            current = self._replicas[kind]
            for name in list(current):
                if name not in found:
                    del current[name]
            for name in found - set(current):
                with contextlib.suppress(ValueError):
                    current[name] = ray.get_actor(name, namespace=self.namespace)
        self._seen = time.monotonic()

    async def _submit(self, kind: str, method: str, request: Any) -> Any:
        for attempt in range(3):
            await self._refresh(force=attempt > 0)
            replicas = self._replicas[kind]
            if not replicas:
                raise RuntimeError(f"the {kind} speech pool {self.prefix} has no replica")
            name = min(replicas, key=lambda n: self._load.get(n, 0))
            batcher = self._batcher(name, kind, method)
            self._load[name] = self._load.get(name, 0) + 1
            try:
                return await batcher.submit(request)
            except _WORKER_GONE:
                replicas.pop(name, None)
                self._batchers.pop((name, method), None)
            finally:
                self._load[name] -= 1
        raise RuntimeError(f"the {kind} speech pool {self.prefix} lost every replica it tried")

    def _batcher(self, name: str, kind: str, method: str) -> Batcher[Any, Any]:
        key = (name, method)
        if key not in self._batchers:
            handle = self._replicas[kind][name]

            async def send(batch: list[Any]) -> list[Any]:
                return await getattr(handle, method).remote(batch)  # type: ignore[no-any-return]

            self._batchers[key] = Batcher(send, max_batch=self.max_batch, max_wait=_WAIT)
        return self._batchers[key]


class RaySpeechPool:
    """The replicas of the speech pool (named actors) and the loop that sizes them.

    ``stt_gpus`` is what each STT replica asks for: default 0.5 GPU when the cluster has GPUs
    (two replicas share one), else none. ``tts`` and ``stt`` autoscalers size each group between
    their bounds every ``interval`` seconds from the requests in flight on its replicas.
    """

    def __init__(
        self,
        *,
        setup: Callable[[], object] | None = None,
        stt_gpus: float | None = None,
        cpus_per_replica: float = 0.5,
        tts: Autoscaler | None = None,
        stt: Autoscaler | None = None,
        interval: float = 2.0,
        max_concurrency: int = 256,
    ) -> None:
        self.prefix = f"tamesu-speech-{uuid.uuid4().hex[:8]}"
        self.namespace = ray.get_runtime_context().namespace
        gpus = float(ray.cluster_resources().get("GPU", 0.0))
        self.stt_gpus = stt_gpus if stt_gpus is not None else (0.5 if gpus >= 1 else 0.0)
        self.scalers = {"tts": tts or Autoscaler(), "stt": stt or Autoscaler()}
        self.interval = interval
        self.load_timeout = 5.0
        """Seconds a replica has to report its load; one that does not (still starting, or on a busy
        machine) is kept as it is, neither counted idle nor forgotten."""
        self._setup = setup
        self._cpus = cpus_per_replica
        self._max_concurrency = max_concurrency
        self._groups: dict[str, dict[str, Any]] = {"tts": {}, "stt": {}}
        self._serial = 0
        for kind, scaler in self.scalers.items():
            for _ in range(max(1, scaler.min_replicas)):
                self._add(kind)
        self._task: asyncio.Task[None] | None = None

    def client(self) -> RaySpeechClient:
        return RaySpeechClient(self.prefix, self.namespace)

    def replicas(self) -> dict[str, int]:
        return {kind: len(group) for kind, group in self._groups.items()}

    def _add(self, kind: str) -> None:
        self._serial += 1
        name = f"{self.prefix}-{kind}-{self._serial}"
        options: dict[str, Any] = {
            "name": name,
            "num_cpus": self._cpus,
            "max_concurrency": self._max_concurrency,
            "max_restarts": 0,
        }
        if kind == "stt" and self.stt_gpus:
            options["num_gpus"] = self.stt_gpus
        self._groups[kind][name] = ray.remote(**options)(SpeechServer).remote(setup=self._setup)

    def start(self) -> None:
        """Start sizing the pool (needs a running event loop); ``aclose`` stops it."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._autoscale())

    async def rescale(self) -> dict[str, int]:
        """One sizing step: read each replica's load, then add or remove replicas."""
        for kind, group in self._groups.items():
            names = list(group)
            loads = await asyncio.gather(*(self._load(group[n]) for n in names))
            alive = {n: load for n, load in zip(names, loads) if load is not None}
            for name in set(names) - set(alive):
                group.pop(name, None)
            in_flight = [alive[n].get("in_flight", 0.0) for n in alive]
            want = self.scalers[kind].desired(in_flight, time.monotonic())
            for _ in range(want - len(group)):
                self._add(kind)
            idle = [n for n in alive if alive[n].get("in_flight") == 0]
            for name in idle[: max(0, len(group) - want)]:
                ray.kill(group.pop(name))
        return self.replicas()

    async def _load(self, handle: Any) -> dict[str, float] | None:
        """A replica's load; ``{}`` when it did not answer in time, None when it is gone."""
        try:
            return await asyncio.wait_for(handle.load.remote(), self.load_timeout)  # type: ignore[no-any-return]
        except asyncio.TimeoutError:
            return {}
        except ray.exceptions.RayError:
            return None

    async def _autoscale(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            with contextlib.suppress(Exception):
                await self.rescale()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for group in self._groups.values():
            for handle in group.values():
                with contextlib.suppress(Exception):
                    ray.kill(handle)
            group.clear()
