"""The cycle collector while calls are in flight: young generations paced by the pump, no full
collection in the middle of the calls, and the collector as it was once they end."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest

from tamesu.voice import CallAudio, FramePump
from tamesu.voice.collector import collector

pytestmark = pytest.mark.unit


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection that starts while the test runs."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.collect()
    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


async def _allocate_while_ticking(pump: FramePump, count: int) -> list[list[int]]:
    """``count`` small containers that stay alive, allocated between the pump's ticks."""
    kept: list[list[int]] = []
    ticks = pump.ticks
    for i in range(count):
        kept.append([i])
        if i % 4_000 == 0:
            await asyncio.sleep(0.021)
    assert pump.ticks > ticks + 5, "the pump ticked while the objects were made"
    return kept


async def test_no_full_collection_runs_while_calls_are_in_flight(
    collections: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collector, "old_growth", 10**9)
    assert gc.isenabled()
    pump = FramePump()
    call = CallAudio(rate=8000, send=lambda b: None)
    pump.attach(call, t0=0.0)
    # more than the quarter of the heap that makes CPython's own collector walk all of it
    kept = await _allocate_while_ticking(pump, len(gc.get_objects()) // 3 + 100_000)
    in_flight = list(collections)
    pump.detach(call)
    await asyncio.sleep(0.05)
    assert 2 not in in_flight, "a full collection ran while frames were due"
    assert in_flight.count(0) > 10 and 1 in in_flight, "the young generations were still collected"
    assert gc.isenabled() and collector.holders == 0, "automatic collection is back once the calls end"
    del kept


async def test_the_old_generation_is_collected_once_it_grows_past_the_bound(
    collections: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collector, "old_growth", 20_000)
    pump = FramePump()
    call = CallAudio(rate=8000, send=lambda b: None)
    pump.attach(call, t0=0.0)
    kept = await _allocate_while_ticking(pump, 100_000)
    in_flight = list(collections)
    pump.detach(call)
    await asyncio.sleep(0.05)
    assert 2 in in_flight, "a leak of cycles would otherwise grow without bound"
    del kept


async def test_a_collector_turned_off_by_the_process_stays_off() -> None:
    pump = FramePump()
    call = CallAudio(rate=8000, send=lambda b: None)
    gc.disable()
    try:
        pump.attach(call, t0=0.0)
        await asyncio.sleep(0.05)
        assert pump.ticks > 0 and not collector.owned
        pump.detach(call)
        await asyncio.sleep(0.05)
        assert not gc.isenabled()
    finally:
        gc.enable()
