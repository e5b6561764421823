"""The Ray placement: runs spread over a pool of async Ray worker actors.

This is the only module of tamesu that imports Ray. ``RunWorker`` is a plain class (testable
without Ray) that becomes an actor only here, with ``ray.remote(**options)(RunWorker)``. A run's
own actors are co-located in one worker process, where they talk through asyncio queues exactly
as in the local placement; only the ``RunSpec`` goes in and the ``GraphOutcome`` comes back.
Each worker holds its own ``RunServices`` (HTTP client, redactor); secret values travel with
each call. A worker that dies takes its runs with it: they come back as error outcomes with
``error_kind="worker"`` and ``retryable=True``, and the worker is replaced.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
import ray.exceptions

from tamesu.transcript import Transcript

from ..graph import GraphOutcome, OutcomeSink, RunGraph

if TYPE_CHECKING:
    from tamesu.runner.spec import RunSpec

    from ..services import RunServices

__all__ = ["RayPlacement", "RunWorker"]

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
    ) -> None:
        if setup is not None:
            setup()
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
        }
        self._actor_cls = ray.remote(**self._options)(RunWorker)
        self._workers: list[Any] = [self._spawn() for _ in range(count)]
        self._inflight = [0] * count
        self._next = 0
        self._closed = False

    @property
    def workers(self) -> list[Any]:
        """The worker actor handles (for diagnostics and tests)."""
        return list(self._workers)

    def _spawn(self) -> Any:
        return self._actor_cls.remote(**self._worker_kwargs)

    def _choose(self) -> int:
        """The least-loaded worker; among equals, the next in round-robin order."""
        count = len(self._workers)
        order = [(self._next + i) % count for i in range(count)]
        best = min(order, key=lambda i: self._inflight[i])
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
            self._workers[index] = self._spawn()

    async def aclose(self) -> None:
        """Stop the workers; shut Ray down only when this placement started it."""
        if self._closed:
            return
        self._closed = True
        for worker in self._workers:
            try:
                await asyncio.wait_for(worker.aclose.remote(), CANCEL_GRACE)
            except (asyncio.TimeoutError, ray.exceptions.RayError):
                pass
            ray.kill(worker)
        self._workers = []
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
