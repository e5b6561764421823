"""The Ray placement: runs spread over a pool of async Ray worker actors.

This is the only module of tamesu that imports Ray. ``RunWorker`` is a plain class (testable
without Ray) that becomes an actor only here, with ``ray.remote(**options)(RunWorker)``. A run's
own actors are co-located in one worker process, where they talk through asyncio queues exactly
as in the local placement; only the ``RunSpec`` goes in and the ``GraphOutcome`` comes back.
Each worker holds its own ``RunServices`` (HTTP client, redactor); secret values travel with
each call. A worker that dies takes its runs with it: they come back as error outcomes with
``error_kind="worker"`` and ``retryable=True``, and the worker is replaced.

The speech engines are not per worker: ``RaySpeechPool`` runs them as two groups of replica
actors (TTS on CPUs, STT with ``num_gpus`` where the cluster has GPUs), sized by the
``Autoscaler`` from the requests in flight, and every worker's calls reach them through a
``RaySpeechClient`` installed as the worker's ``speech_pool()``; requests from many calls travel
to a replica in batches (``Batcher``), an utterance being one request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
import ray.exceptions

from tamesu.transcript import Transcript

from ..graph import GraphOutcome, OutcomeSink, RunGraph
from ..pools import (
    Autoscaler,
    Batcher,
    SpeechServer,
    SynthesisRequest,
    TranscriptionRequest,
    audio_of,
    transcription_of,
    use_speech_pool,
)

if TYPE_CHECKING:
    from tamesu.audio.stt import Transcription
    from tamesu.audio.tts import Audio
    from tamesu.runner.spec import RunSpec

    from ..services import RunServices

__all__ = ["RayPlacement", "RaySpeechClient", "RaySpeechPool", "RunWorker"]

CANCEL_GRACE = 10.0
"""Seconds a cancelled run's worker gets to hand back the partial outcome."""

_WORKER_GONE: tuple[type[BaseException], ...] = (
    ray.exceptions.RayActorError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.ObjectLostError,
    ray.exceptions.NodeDiedError,
)


class RunWorker:
    """One worker process: many runs at once, each a graph in this process's event loop.

    ``setup`` runs once when the worker starts (register plugin targets or assertions);
    ``speech`` is the client of the cluster's speech pool, installed as this process's pool;
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
        speech: RaySpeechClient | None = None,
    ) -> None:
        if setup is not None:
            setup()
        if speech is not None:
            use_speech_pool(speech)
        self.router_factory = router_factory
        self.update_golden = update_golden
        self.output_dir = output_dir
        self.encode_boundary = encode_boundary
        self._services: RunServices | None = None
        self._runs: dict[str, tuple[RunGraph, asyncio.Task[GraphOutcome]]] = {}

    def _shared(self) -> RunServices:
        """Made on first use, inside the worker's event loop (the HTTP client belongs to that loop)."""
        if self._services is None:
            from ..services import RunServices

            self._services = RunServices.create(
                update_golden=self.update_golden,
                output_dir=self.output_dir,
                router_factory=self.router_factory,
            )
        return self._services

    async def run(
        self,
        spec: RunSpec,
        secrets: Mapping[str, str] | None = None,
        timeout: float | None = None,
        key: str | None = None,
    ) -> GraphOutcome:
        key = key or uuid.uuid4().hex
        graph = RunGraph(spec, self._shared(), secrets=secrets, encode_boundary=self.encode_boundary)
        task = asyncio.ensure_future(graph.run(timeout=timeout))
        self._runs[key] = (graph, task)
        try:
            return await task
        finally:
            self._runs.pop(key, None)

    async def cancel(self, key: str) -> GraphOutcome | None:
        """Cancel one run (the caller gave up on it) and return what it had recorded."""
        entry = self._runs.get(key)
        if entry is None:
            return None
        graph, task = entry
        task.cancel()
        await asyncio.wait([task])
        return graph.outcome()

    def active(self) -> int:
        """Runs in flight in this worker."""
        return len(self._runs)

    async def aclose(self) -> None:
        for _, task in list(self._runs.values()):
            task.cancel()
        if self._services is not None:
            await self._services.aclose()
            self._services = None


class RayPlacement:
    """The one wrapper around every Ray call tamesu makes.

    ``address=None`` starts an embedded local Ray (unless Ray is already initialised in this
    process, in which case it is used and left running); an address joins a cluster.
    ``num_workers`` defaults to the cluster's CPU count; each worker runs up to
    ``max_concurrency_per_worker`` runs at once. Runs go to the least-loaded worker.
    ``worker_setup`` (picklable) runs once in each worker, to register plugin targets and
    assertions there; ``router_factory`` makes each worker's model router.
    """

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
            ray.init(**init)
            self._started_ray = True
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        count = num_workers or max(1, int(cpus))
        self.speech: RaySpeechPool | None = None
        if speech_pool:
            options = dict(speech_pool) if isinstance(speech_pool, dict) else {}
            options.setdefault("setup", worker_setup)
            self.speech = RaySpeechPool(**options)
        self._options: dict[str, Any] = {
            "num_cpus": min(1.0, cpus / count) if cpus else 0,
            "max_concurrency": max_concurrency_per_worker,
            "max_restarts": 0,
        }
        self._worker_kwargs = {
            "setup": worker_setup,
            "update_golden": update_golden,
            "output_dir": None if output_dir is None else str(output_dir),
            "encode_boundary": encode_boundary,
            "router_factory": router_factory,
            "speech": self.speech.client() if self.speech is not None else None,
        }
        self._actor_cls = ray.remote(**self._options)(RunWorker)
        self._workers: list[Any] = [self._spawn() for _ in range(count)]
        self._inflight = [0] * count
        self._ready = [True] * count
        self._probes: set[asyncio.Future[None]] = set()
        self._next = 0
        self._closed = False
        self.replaced = 0
        """Workers replaced after they died."""

    @property
    def workers(self) -> list[Any]:
        """The worker actor handles (for diagnostics and tests)."""
        return list(self._workers)

    def _spawn(self) -> Any:
        return self._actor_cls.remote(**self._worker_kwargs)

    def _choose(self) -> int:
        """The least-loaded started worker; among equals, the next in round-robin order.

        A replacement that has not started yet (its node died and no other has room) gets runs
        only when no worker is ready, so runs do not queue behind an actor that may never start.
        """
        count = len(self._workers)
        order = [(self._next + i) % count for i in range(count)]
        ready = [i for i in order if self._ready[i]] or order
        best = min(ready, key=lambda i: self._inflight[i])
        self._next = (best + 1) % count
        return best

    async def run(
        self,
        spec: RunSpec,
        *,
        secrets: Mapping[str, str] | None = None,
        timeout: float | None = None,
        sink: OutcomeSink | None = None,
    ) -> GraphOutcome:
        if self._closed:
            raise RuntimeError("this Ray placement is closed")
        if self.speech is not None:
            self.speech.start()
        index = self._choose()
        worker = self._workers[index]
        key = uuid.uuid4().hex
        self._inflight[index] += 1
        try:
            return await worker.run.remote(spec, dict(secrets) if secrets else None, timeout, key)  # type: ignore[no-any-return]
        except asyncio.CancelledError:
            partial = await self._cancel(worker, key)
            if sink is not None and partial is not None:
                sink(partial)
            raise
        except _WORKER_GONE as exc:
            self._replace(index, worker)
            return _failed(spec, f"the Ray worker running this run died: {_first_line(exc)}", "worker", True)
        except ray.exceptions.RayError as exc:
            return _failed(spec, f"Ray could not run this run: {_first_line(exc)}", "internal", False)
        finally:
            self._inflight[index] -= 1

    async def _cancel(self, worker: Any, key: str) -> GraphOutcome | None:
        try:
            return await asyncio.wait_for(worker.cancel.remote(key), CANCEL_GRACE)  # type: ignore[no-any-return]
        except (asyncio.TimeoutError, ray.exceptions.RayError):
            return None

    def _replace(self, index: int, dead: Any) -> None:
        if not self._closed and self._workers[index] is dead:
            worker = self._workers[index] = self._spawn()
            self.replaced += 1
            self._ready[index] = False
            probe = asyncio.ensure_future(self._started(index, worker))
            self._probes.add(probe)
            probe.add_done_callback(self._probes.discard)

    async def _started(self, index: int, worker: Any) -> None:
        """Mark a replacement ready once it answers (it may wait for a node with room)."""
        with contextlib.suppress(ray.exceptions.RayError):
            await worker.active.remote()
            if self._workers and self._workers[index] is worker:
                self._ready[index] = True

    async def health(self, timeout: float = 2.0) -> dict[str, Any]:
        """Workers that answer within ``timeout``, runs in flight on each, workers replaced, nodes alive."""

        async def ping(worker: Any) -> int | None:
            try:
                return await asyncio.wait_for(worker.active.remote(), timeout)  # type: ignore[no-any-return]
            except (asyncio.TimeoutError, ray.exceptions.RayError):
                return None

        answers = await asyncio.gather(*(ping(w) for w in list(self._workers)))
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

    async def aclose(self) -> None:
        """Stop the workers; shut Ray down only when this placement started it."""
        if self._closed:
            return
        self._closed = True
        for probe in list(self._probes):
            probe.cancel()
        for worker in self._workers:
            try:
                await asyncio.wait_for(worker.aclose.remote(), CANCEL_GRACE)
            except (asyncio.TimeoutError, ray.exceptions.RayError):
                pass
            ray.kill(worker)
        self._workers = []
        if self.speech is not None:
            await self.speech.aclose()
        if self._started_ray:
            ray.shutdown()


def _failed(spec: RunSpec, message: str, kind: str, retryable: bool) -> GraphOutcome:
    transcript = Transcript(
        run_id=spec.run_id, test=spec.test_id, target=spec.target_name, end_reason="error"
    )
    transcript.events.append({"type": "error", "kind": kind, "message": message})
    return GraphOutcome(transcript=transcript, error=message, error_kind=kind, retryable=retryable)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
            want = self.scalers[kind].desired([alive[n]["in_flight"] for n in alive], time.monotonic())
            for _ in range(want - len(group)):
                self._add(kind)
            idle = [n for n in alive if alive[n]["in_flight"] == 0]
            for name in idle[: max(0, len(group) - want)]:
                ray.kill(group.pop(name))
        return self.replicas()

    async def _load(self, handle: Any) -> dict[str, float] | None:
        try:
            return await asyncio.wait_for(handle.load.remote(), 5.0)  # type: ignore[no-any-return]
        except (asyncio.TimeoutError, ray.exceptions.RayError):
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
