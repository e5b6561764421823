"""``within``: a time limit on one await, without a task of its own."""

from __future__ import annotations

import asyncio

import pytest

from tamesu.clock import within

pytestmark = [pytest.mark.unit, pytest.mark.timing]


async def test_within_returns_the_value_or_raises_timeout_error() -> None:
    async def answer() -> int:
        return 42

    assert await within(answer(), 1.0) == 42
    assert await within(answer(), None) == 42
    never = asyncio.Event()
    with pytest.raises(TimeoutError):
        await within(never.wait(), 0.01)


async def test_within_runs_in_the_callers_task_and_passes_cancellation_on() -> None:
    seen: list[asyncio.Task[object] | None] = []
    started = asyncio.Event()

    async def record() -> None:
        seen.append(asyncio.current_task())
        started.set()
        await asyncio.Event().wait()

    async def caller() -> None:
        await within(record(), 5.0)

    task = asyncio.create_task(caller())
    await started.wait()
    assert seen == [task]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_deadlines_of_different_lengths_fire_in_their_own_order() -> None:
    never = asyncio.Event()
    order: list[str] = []

    async def limited(name: str, seconds: float) -> None:
        try:
            await within(never.wait(), seconds)
        except TimeoutError:
            order.append(name)

    await asyncio.gather(limited("long", 0.2), limited("short", 0.02), limited("middle", 0.08))
    assert order == ["short", "middle", "long"]


async def test_a_deadline_met_leaves_nothing_behind_and_an_outer_cancel_is_not_a_timeout() -> None:
    async def quick() -> str:
        await asyncio.sleep(0)
        return "done"

    assert [await within(quick(), 0.05) for _ in range(3)] == ["done"] * 3
    await asyncio.sleep(0.08)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    started = asyncio.Event()

    async def waits() -> None:
        started.set()
        await within(asyncio.Event().wait(), 10.0)

    inner = asyncio.create_task(waits())
    await started.wait()
    inner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await inner


async def test_nested_limits_report_the_one_that_expired() -> None:
    never = asyncio.Event()

    async def inner() -> str:
        try:
            await within(never.wait(), 0.02)
        except TimeoutError:
            return "inner timed out"
        return "no"

    assert await within(inner(), 5.0) == "inner timed out"
    with pytest.raises(TimeoutError):
        await within(within(never.wait(), 5.0), 0.02)


async def test_a_reader_whose_next_message_is_always_ready_still_ends_at_the_outer_limit() -> None:
    """asyncio.wait_for before Python 3.12 returns the message when the caller is cancelled as it
    arrives, losing the cancellation: an endless stream then outlived the run's timeout."""
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def feed() -> None:
        while True:
            queue.put_nowait(1)
            await asyncio.sleep(0)

    async def read() -> None:
        while True:
            await within(queue.get(), 5.0)

    feeder = asyncio.create_task(feed())
    try:
        started = asyncio.get_running_loop().time()
        with pytest.raises(TimeoutError):
            await within(read(), 0.05)
        assert asyncio.get_running_loop().time() - started < 2.0
    finally:
        feeder.cancel()
