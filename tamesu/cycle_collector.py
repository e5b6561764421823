"""The cycle collector set up for a process while it runs conversations.

Python's default collects the youngest generation every 700 allocations, and each full collection
walks every object of the process again: the modules, the loaded suites, the plan, and in a Ray
worker all of Ray. While runs go on, what existed before them is frozen (left alone by the
collector) and the youngest objects are collected every ``YOUNG_THRESHOLD`` allocations.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = [
    "YOUNG_THRESHOLD",
    "before_exit",
    "freeze_what_runs_left",
    "one_command_process",
    "paused",
    "set_for_runs",
    "set_for_worker",
]

YOUNG_THRESHOLD = 7000
"""Allocations between two collections of the youngest generation while runs go on (Python's
default, 700, collects every few runs: each time it walks every object of the runs in flight)."""

_LOCK = threading.Lock()
"""Invocations in several threads: the first one sets the collector up, and puts it back."""
_WORKER_SET = False
_ENDING = False
_RUNS = 0
"""Invocations inside ``set_for_runs`` that froze (and will unfreeze) the collector."""


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No collection while a command loads and checks suites (``tamesu validate``): building the
    config models allocates hundreds of thousands of objects that live on and make no garbage
    worth a walk, and the full collections they set off cost a sixth of its CPU. Put back after."""
    with _LOCK:
        enabled = gc.isenabled()
        gc.disable()
    try:
        yield
    finally:
        if enabled and not _ENDING:
            with _LOCK:
                gc.enable()


def one_command_process() -> None:
    """This process runs one command and ends: a collector paused for the command stays off (its
    first collection would walk everything the command built: 20 ms after validate)."""
    global _ENDING
    _ENDING = True


def before_exit() -> None:
    """The process is about to end: freeze what it holds, so the interpreter's last collection
    does not walk all of it (a tenth of ``tamesu validate``'s CPU)."""
    gc.freeze()


@contextlib.contextmanager
def set_for_runs() -> Iterator[None]:
    """For the runs of one invocation, then put back. Nothing changes when something in the
    process froze objects already (a server about to fork) or turned the collector off."""
    global _RUNS
    with _LOCK:
        if gc.get_freeze_count() or not gc.isenabled():
            thresholds = None
        else:
            thresholds = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
            _RUNS += 1
    try:
        yield
    finally:
        if thresholds is not None:
            with _LOCK:
                _RUNS -= 1
                gc.set_threshold(*thresholds)
                gc.unfreeze()


def freeze_what_runs_left() -> None:
    """The runs are over and their results, samples and transcripts live on until the reports are
    written, making no garbage: inside ``set_for_runs`` (which unfreezes them on its way out) they
    are frozen too, so the reports' passes do not walk them at every collection (a third of the
    end of a 60,000-call load test). Outside it, nothing is done: frozen objects would never be
    collected."""
    with _LOCK:
        if _RUNS:
            gc.freeze()


def set_for_worker() -> None:
    """For a process that exists to run conversations (a Ray worker), once, for good: what it
    loaded before its first run is frozen and the youngest objects are collected less often."""
    global _WORKER_SET
    with _LOCK:
        if _WORKER_SET or not gc.isenabled():
            return
        _WORKER_SET = True
        gc.freeze()
        first, *rest = gc.get_threshold()
        gc.set_threshold(max(first, YOUNG_THRESHOLD), *rest)
