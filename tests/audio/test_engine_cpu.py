"""A local engine's requests are charged the CPU the engine spent on them: its worker threads and
the threads those start (as CTranslate2 does), not the seconds a request waited in the queue."""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
import time

import pytest

from tamesu.audio.tts.workers import Workers
from tamesu.engine_cpu import CpuAccount, CpuMeter, charging

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or not CpuMeter("probe").measures_cpu,
        reason="thread CPU clocks are read on Linux",
    ),
]


def spin(seconds: float) -> None:
    """Burn ``seconds`` of this thread's CPU."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class DecoderPool:
    """An engine's own long-lived thread, started from its worker on first use, that does the work
    while the worker waits: how CTranslate2 decodes."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[tuple[float, threading.Event] | None] = queue.Queue()
        self.thread: threading.Thread | None = None

    def __call__(self, seconds: float) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._serve, daemon=True)
            self.thread.start()
        done = threading.Event()
        self.jobs.put((seconds, done))
        done.wait()

    def _serve(self) -> None:
        while (job := self.jobs.get()) is not None:
            spin(job[0])
            job[1].set()

    def close(self) -> None:
        self.jobs.put(None)


async def charged(workers: Workers, fn: object, *args: object) -> CpuAccount:
    with charging(CpuAccount()) as account:
        await workers.run(fn, *args)  # type: ignore[arg-type]
    return account


async def test_a_request_is_charged_the_cpu_of_threads_the_engine_starts() -> None:
    workers, decoder = Workers("probe", 1), DecoderPool()
    try:
        await workers.run(decoder, 0.01)  # the engine warms up: its thread exists from here on
        account = await charged(workers, decoder, 0.2)
    finally:
        decoder.close()
        workers.shutdown()
    assert 0.18 <= account.by_engine["probe"] <= 0.3, account.by_engine


async def test_queued_requests_are_charged_their_work_not_their_wait() -> None:
    workers = Workers("queue", 1)  # one worker: the second request waits for the first
    try:
        first, second = await asyncio.gather(charged(workers, spin, 0.15), charged(workers, spin, 0.15))
    finally:
        workers.shutdown()
    for account in (first, second):
        assert 0.13 <= account.by_engine["queue"] <= 0.22, account.by_engine


async def test_concurrent_requests_share_what_the_engine_spent() -> None:
    workers = Workers("shared", 2)
    started = time.process_time()
    try:
        accounts = await asyncio.gather(*(charged(workers, spin, 0.1) for _ in range(4)))
    finally:
        workers.shutdown()
    spent = time.process_time() - started
    total = sum(a.by_engine["shared"] for a in accounts)
    assert 0.38 <= total <= spent + 0.01, (total, spent)


async def test_another_engine_busy_at_the_same_time_is_not_charged() -> None:
    mine, other, decoder = Workers("mine", 1), Workers("other", 1), DecoderPool()
    try:
        await other.run(decoder, 0.01)
        account, _ = await asyncio.gather(charged(mine, spin, 0.05), other.run(decoder, 0.3))
    finally:
        decoder.close()
        mine.shutdown()
        other.shutdown()
    assert account.by_engine.keys() == {"mine"}
    assert account.by_engine["mine"] <= 0.12, account.by_engine


async def test_a_request_that_fails_is_still_charged() -> None:
    def fail_after_work() -> None:
        spin(0.1)
        raise RuntimeError("engine failed")

    workers = Workers("failing", 1)
    try:
        with charging(CpuAccount()) as account, pytest.raises(RuntimeError):
            await workers.run(fail_after_work)
    finally:
        workers.shutdown()
    assert account.by_engine["failing"] >= 0.09


async def test_without_an_account_nothing_is_charged_and_the_result_comes_back() -> None:
    workers = Workers("plain", 1)
    try:
        assert await workers.run(lambda: 42) == 42
    finally:
        workers.shutdown()


async def test_an_engine_that_runs_programs_is_charged_their_cpu_and_others_are_not() -> None:
    import subprocess

    def program() -> None:
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import time\nt=time.process_time()\nwhile time.process_time()-t<0.2: pass",
            ],
            check=True,
        )

    runner, bystander = Workers("programs", 1, runs_programs=True), Workers("bystander", 1)
    try:
        with charging(CpuAccount()) as account:
            await asyncio.gather(runner.run(program), bystander.run(spin, 0.05))
    finally:
        runner.shutdown()
        bystander.shutdown()
    assert account.by_engine["programs"] >= 0.2, account.by_engine
    assert account.by_engine["bystander"] <= 0.1, "another engine's child process is not its CPU"
