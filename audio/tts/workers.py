"""What every speech engine shares: a bounded worker pool, a model loaded once, retries and counters.

CPU engines (Piper, Whisper) release the GIL inside onnxruntime / CTranslate2, so a small thread
pool runs them in parallel without blocking the event loop; the pool is bounded so forty calls
queue for two cores instead of thrashing them. The pool and the model belong to the engine, and
``tamesu.audio.engines`` keeps one engine per process, so any number of event loops and calls
share them. Every worker thread carries the engine's name, so its CPU (and that of the threads
the engine starts from it) is what a request is charged (``tamesu.engine_cpu``).
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar

from tamesu.engine_cpu import CpuMeter, charge, name_this_thread
from tamesu.errors import ModelError

__all__ = ["EngineStats", "Lazy", "Retryable", "Workers", "default_workers", "usable_cores", "with_retries"]

T = TypeVar("T")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and Ray narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def default_workers(cap: int = 4) -> int:
    """One single-threaded worker per core, up to ``cap``: on two cores, two workers each on one
    thread transcribe about 30% more per CPU-second than one worker on two threads."""
    return min(usable_cores(), cap)


class Retryable(Exception):
    """A provider's transient failure (timeout, 408, 429, 5xx): the public method tries again."""


class Workers:
    """A bounded thread pool, created on first use, that any event loop can submit to; what each
    call cost in CPU is charged to the caller's ``CpuAccount``."""

    def __init__(self, name: str, size: int, *, runs_programs: bool = False) -> None:
        if size < 1:
            raise ValueError(f"{name}: workers must be at least 1, got {size}")
        self.name = name
        self.size = size
        self.meter = CpuMeter(name, children=runs_programs)
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self.size,
                    thread_name_prefix=f"tamesu-{self.name}",
                    initializer=name_this_thread,
                    initargs=(self.meter.thread_name,),
                )
            return self._executor

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on a worker thread; waits (without blocking the loop) for a free one."""
        loop = asyncio.get_running_loop()
        spent: list[float] = []
        try:
            return await loop.run_in_executor(
                self._pool(), self.meter.run, functools.partial(fn, *args, **kwargs), spent
            )
        finally:
            if spent:
                charge(self.name, spent[0])

    def shutdown(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)
                self._executor = None


class Lazy(Generic[T]):
    """A value built once, on first ``get``, by whichever thread asks first; the others wait."""

    def __init__(self, load: Callable[[], T]) -> None:
        self._load = load
        self._value: T | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._load()
        return self._value


@dataclass
class EngineStats:
    """Counters of one engine since it was created: what a run's metrics and ``doctor`` report.

    ``busy_s`` is wall time spent in the engine per request, summed; ``audio_s`` the seconds of
    audio produced (TTS) or transcribed (STT); their ratio is the mean real-time factor.
    """

    requests: int = 0
    cache_hits: int = 0
    errors: int = 0
    retries: int = 0
    audio_s: float = 0.0
    busy_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, *, audio_s: float, busy_s: float) -> None:
        with self._lock:
            self.requests += 1
            self.audio_s += audio_s
            self.busy_s += busy_s

    def count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    @property
    def real_time_factor(self) -> float | None:
        """Processing seconds per second of audio (below 1 is faster than real time)."""
        return self.busy_s / self.audio_s if self.audio_s else None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")
        }
        out["real_time_factor"] = self.real_time_factor
        return out


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    what: str,
    attempts: int,
    backoff: float,
    stats: EngineStats,
    max_backoff: float = 10.0,
) -> T:
    """Await ``call`` until it succeeds, retrying ``Retryable`` failures with jittered doubling waits."""
    delay = backoff
    for attempt in range(1, max(attempts, 1) + 1):
        try:
            return await call()
        except Retryable as exc:
            if attempt >= attempts:
                stats.count("errors")
                raise ModelError(f"{what} failed after {attempt} attempts: {exc}") from exc
            stats.count("retries")
            await asyncio.sleep(min(delay, max_backoff) * (0.5 + random.random() / 2))
            delay *= 2
        except Exception:
            stats.count("errors")
            raise
    raise AssertionError("unreachable")
