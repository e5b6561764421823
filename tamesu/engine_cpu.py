"""The CPU seconds a local speech engine spends on each request, for pricing a run's speech.

Seconds waited are no price: a request queued behind nine others waits ten times as long for the
same work, and Whisper decodes on CTranslate2's own threads, which the caller's thread clock never
sees. So every thread an engine's workers start (and every thread those start: Linux copies a
thread's name to the threads it creates) carries the engine's name, and an engine's clock is the
CPU of the threads of that name (``CLOCK_THREAD_CPUTIME_ID`` of each, nanoseconds), plus, for an
engine that runs a program per line (espeak-ng), what the process's finished children used. A
``CpuMeter`` shares that clock out between the requests in flight at each moment, so the shares
add up to what the engine spent.

Where threads cannot be named or read (not Linux), a request costs the seconds its worker spent
on it, queueing excluded: a floor, since an engine may use more than one core.

A request is charged to the ``CpuAccount`` in its context (``charging``): a run's ``MeteredSpeech``
opens one around each call it makes, and a Ray speech replica opens one per request and sends the
figure back with the answer.
"""

from __future__ import annotations

import contextvars
import itertools
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = [
    "CpuAccount",
    "CpuMeter",
    "charge",
    "charging",
    "engine_threads",
    "name_this_thread",
    "thread_name_for",
]

T = TypeVar("T")

_NAME_MAX = 15
"""Linux keeps 15 bytes of a thread's name."""


_numbers = itertools.count(1)


def thread_name_for(engine: str) -> str:
    """A new OS thread name for one engine instance's workers and the threads they start: numbered,
    so two instances (or two engines whose names share a start) never read each other's threads."""
    return f"tamesu{next(_numbers)}-{engine}".encode("ascii", "replace")[:_NAME_MAX].decode("ascii")


def _prctl() -> Callable[[str], bool] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None

    def set_name(name: str) -> bool:
        return bool(libc.prctl(15, name.encode("ascii", "replace")[:_NAME_MAX], 0, 0, 0) == 0)  # PR_SET_NAME

    return set_name


_set_name = _prctl()


def name_this_thread(name: str) -> bool:
    """Give the calling thread the OS name ``name`` (True when the system took it)."""
    return _set_name is not None and _set_name(name)


@contextmanager
def engine_threads(meter: CpuMeter) -> Iterator[None]:
    """Threads started inside (an engine's own pools, made as its model loads) are ``meter``'s,
    whichever thread loads it."""
    before = _comm(threading.get_native_id()) if _set_name is not None else ""
    name_this_thread(meter.thread_name)
    try:
        yield
    finally:
        if before:
            name_this_thread(before)


class _ThreadsClock:
    """CPU seconds used so far by this process's threads named ``name`` (and, for an engine that
    runs programs, by the process's finished children).

    A thread that ended keeps the last figure read of it (what it used after that reading is lost,
    a few milliseconds at most); a reused thread id reads lower than before and counts afresh. A
    thread of another name is looked at again for a while: a worker takes its name a moment after
    it starts.
    """

    RENAME_WINDOW_S = 0.5

    def __init__(self, name: str, *, children: bool) -> None:
        self.name = name
        self.children = children
        self._ours: dict[int, float] = {}
        self._others: dict[int, float] = {}
        self._ended = 0.0
        self._children0 = _children_cpu() if children else 0.0

    def __call__(self) -> float:
        try:
            tids = {int(t) for t in os.listdir("/proc/self/task")}
        except OSError:
            tids = set(self._ours)
        for tid in list(self._ours):
            if tid not in tids:
                self._ended += self._ours.pop(tid)
        moment = time.monotonic()
        self._others = {tid: seen for tid, seen in self._others.items() if tid in tids}
        settled = {tid for tid, seen in self._others.items() if moment - seen > self.RENAME_WINDOW_S}
        for tid in tids - settled - self._ours.keys():
            if _comm(tid) == self.name:
                self._ours[tid] = 0.0
                self._others.pop(tid, None)
            else:
                self._others.setdefault(tid, moment)
        total = self._ended
        for tid, last in list(self._ours.items()):
            try:
                now = time.clock_gettime((~tid << 3) | 6)  # CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD of tid
            except OSError:  # ended since the listing
                self._ended += self._ours.pop(tid)
                total += last
                continue
            if now < last:  # the id went to a new thread
                self._ended += last
                total += last
            self._ours[tid] = now
            total += now
        return total + (_children_cpu() - self._children0 if self.children else 0.0)


def _comm(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm", encoding="ascii", errors="replace") as f:
            return f.read().rstrip("\n")
    except OSError:
        return ""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _threads_readable() -> bool:
    if _set_name is None:
        return False
    try:
        time.clock_gettime((~threading.get_native_id() << 3) | 6)
        return os.path.isdir("/proc/self/task")
    except (OSError, AttributeError):
        return False


class CpuMeter:
    """One engine's CPU, shared out between the requests in flight while it was spent.

    Between two readings every open request gets an equal part of what the engine used; a request
    closed returns the sum of its parts. ``clock`` is None where threads cannot be read: a request
    then costs its own working seconds.
    """

    def __init__(self, engine: str, *, children: bool = False) -> None:
        self.thread_name = thread_name_for(engine)
        self._clock: Callable[[], float] | None = (
            _ThreadsClock(self.thread_name, children=children) if _threads_readable() else None
        )
        self._lock = threading.Lock()
        self._open: dict[int, float] = {}
        self._next = 0
        self._last = 0.0

    @property
    def measures_cpu(self) -> bool:
        return self._clock is not None

    def _advance(self) -> None:
        assert self._clock is not None
        now = self._clock()
        if self._open and now > self._last:
            share = (now - self._last) / len(self._open)
            for key in self._open:
                self._open[key] += share
        self._last = now

    def start(self) -> int:
        """Open a request (on the thread that does its work); the token closes it."""
        with self._lock:
            token = self._next
            self._next += 1
            if self._clock is None:
                self._open[token] = time.perf_counter()
            else:
                self._advance()
                self._open[token] = 0.0
            return token

    def stop(self, token: int) -> float:
        """Close a request: the CPU seconds that were its share."""
        with self._lock:
            if self._clock is None:
                return time.perf_counter() - self._open.pop(token)
            self._advance()
            return self._open.pop(token)

    def run(self, fn: Callable[[], T], spent: list[float]) -> T:
        """``fn()`` as one request; its CPU is appended to ``spent``, also when it raises."""
        token = self.start()
        try:
            return fn()
        finally:
            spent.append(self.stop(token))


class CpuAccount:
    """The CPU seconds a context's requests cost, by engine."""

    __slots__ = ("by_engine",)

    def __init__(self) -> None:
        self.by_engine: dict[str, float] = {}

    def add(self, engine: str, seconds: float) -> None:
        if seconds > 0:
            self.by_engine[engine] = self.by_engine.get(engine, 0.0) + seconds

    def total(self) -> float:
        return sum(self.by_engine.values())


_account: contextvars.ContextVar[CpuAccount | None] = contextvars.ContextVar(
    "tamesu_speech_cpu", default=None
)


@contextmanager
def charging(account: CpuAccount) -> Iterator[CpuAccount]:
    """Charge the engine work of the requests made inside (this task and tasks it starts) to ``account``."""
    token = _account.set(account)
    try:
        yield account
    finally:
        _account.reset(token)


def charge(engine: str, seconds: float) -> None:
    """Charge ``seconds`` of ``engine``'s CPU to the account of the current context, if any."""
    account = _account.get()
    if account is not None:
        account.add(engine, seconds)
