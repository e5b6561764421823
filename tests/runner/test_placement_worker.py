"""A Ray worker's side of the placement, in this process: batched exchanges, shared spec parts, the poller."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tamesu.actors.services import RunServices
from tamesu.kernel.events import CustomEvent
from tamesu.kernel.outcome import GraphOutcome
from tamesu.kernel.transcript import Transcript
from tamesu.run_spec import RunSpec
from tamesu.runner.placement.local import LocalPlacement
from tamesu.runner.placement.worker import (
    DONE,
    FAILED,
    NEED_PARTS,
    OBJECT,
    RunItem,
    RunWorker,
    SpecSplitter,
    pack_outcome,
    read_outcome,
)
from tests.actors.agents import Check, HangingAdapter, check, make_spec, register

pytestmark = [pytest.mark.unit, pytest.mark.timing]

register()


@pytest.fixture
async def worker() -> AsyncIterator[RunWorker]:
    w = RunWorker()
    yield w
    await w.aclose()


def item(splitter: SpecSplitter, key: str, spec: RunSpec, *, with_parts: bool = True) -> RunItem:
    parts_key, parts, light = splitter.split(spec)
    return (key, light, parts_key, parts if with_parts else None, None, None)


async def collect(worker: RunWorker, items: list[RunItem]) -> dict[str, GraphOutcome]:
    """Exchange until every item's outcome is back, as the driver does."""
    out: dict[str, GraphOutcome] = {}
    replies = await worker.exchange(items)
    while True:
        for key, kind, data in replies:
            out[key] = read_outcome(kind, data)
        if len(out) == len(items):
            return out
        replies = await asyncio.wait_for(worker.exchange([]), 10)


def summary(out: GraphOutcome) -> tuple:
    t = out.transcript
    return (
        t.run_id,
        [(turn.role, turn.text, turn.tool_calls, turn.raw) for turn in t.turns],
        t.end_reason,
        t.captures,
        [(r.name, r.passed, r.expected, r.actual) for r in out.results],
        (out.error, out.error_kind, out.retryable),
    )


async def test_runs_sent_together_come_back_as_a_local_run_would(worker: RunWorker) -> None:
    specs = [
        make_spec(
            run_id="story#1",
            say=["hi", "where is my order", "tool please", "bye"],
            session_id="s-1",
            capture=[{"name": "order", "regex": r"(ORD-\d+)"}],
            checks=[("contains", check({"contains": "ORD-1234"})), ("last", Check("test-last-reply", "x"))],
        ),
        make_spec(run_id="greet#1", type="test-greeter", say=["hello"], max_turns=1, session_id="s-2"),
        make_spec(run_id="fail#1", type="test-failing", say=["hi", "fail"], session_id="s-3"),
    ]
    splitter = SpecSplitter()
    remote = await collect(worker, [item(splitter, str(i), s) for i, s in enumerate(specs)])
    services = RunServices.create()
    try:
        local = [await LocalPlacement(services).run(s) for s in specs]
    finally:
        await services.aclose()
    assert [summary(remote[str(i)]) for i in range(3)] == [summary(o) for o in local]
    assert remote["0"].transcript.captures == {"order": "ORD-1234"}
    assert [(r.name, r.passed) for r in remote["0"].results] == [("contains", True), ("last", False)]
    assert worker.active() == 0


async def test_shared_parts_travel_once_and_a_worker_that_lost_them_asks_again() -> None:
    worker = RunWorker(parts_limit=1)
    splitter = SpecSplitter()
    first = make_spec(run_id="a#1", say=["one"])
    again = RunSpec(**{**first.__dict__, "run_id": "a#2"})
    other = make_spec(run_id="b#1", say=["two"])
    key_a, _, light = splitter.split(first)
    assert (light.target, light.test, light.run_id) == (None, None, "a#1")
    assert splitter.split(again)[0] == key_a and splitter.split(other)[0] != key_a
    try:
        assert await worker.exchange([item(splitter, "1", first, with_parts=False)]) == [
            ("1", NEED_PARTS, None)
        ]
        done = await collect(worker, [item(splitter, "1", first)])
        assert done["1"].transcript.turns[1].text == "You said: one"
        done = await collect(worker, [item(splitter, "2", again, with_parts=False)])
        assert done["2"].transcript.run_id == "a#2"
        await collect(worker, [item(splitter, "3", other)])
        assert await worker.exchange([item(splitter, "4", again, with_parts=False)]) == [
            ("4", NEED_PARTS, None)
        ]
    finally:
        await worker.aclose()


async def test_only_the_latest_exchange_waits_and_a_cancel_wakes_it(worker: RunWorker) -> None:
    spec = make_spec(type="test-hanging", say=["hi", "and?"], run_id="hang#1")
    first = asyncio.create_task(worker.exchange([item(SpecSplitter(), "h", spec)]))
    await asyncio.sleep(0)
    assert worker.active() == 1 and not first.done()
    while "hang#1" not in HangingAdapter.live:
        await asyncio.sleep(0)
    await asyncio.wait_for(HangingAdapter.live["hang#1"].hanging.wait(), 5)
    second = asyncio.create_task(worker.exchange([]))
    assert await asyncio.wait_for(first, 5) == []
    assert not second.done()
    partial = await worker.cancel("h")
    assert partial is not None and partial.error_kind == "cancelled"
    assert [t.text for t in partial.transcript.turns] == [
        "hi",
        "You said: hi",
        "and?",
        "Let me check that for y",
    ]
    assert await asyncio.wait_for(second, 5) == []
    assert worker.active() == 0


async def test_a_cancel_that_overtakes_its_run_keeps_the_run_from_starting(worker: RunWorker) -> None:
    assert await worker.cancel("late") is None
    assert await worker.exchange([item(SpecSplitter(), "late", make_spec(say=["hi"]))]) == []
    assert worker.active() == 0


def test_an_outcome_msgpack_cannot_carry_travels_as_the_object() -> None:
    plain = GraphOutcome(transcript=Transcript(run_id="r", metrics={"x": 1.5}))
    key, kind, data = pack_outcome("k", plain)
    assert (key, kind) == ("k", DONE) and read_outcome(kind, data) == plain
    huge = GraphOutcome(transcript=Transcript(run_id="r", events=[CustomEvent(name="n", data={"n": 2**70})]))
    assert pack_outcome("k", huge) == ("k", OBJECT, huge)
    with pytest.raises(ValueError):
        read_outcome(NEED_PARTS, None)


async def test_a_run_that_cannot_start_fails_alone(worker: RunWorker) -> None:
    splitter = SpecSplitter()
    good = item(splitter, "good", make_spec(say=["hi"]))
    bad: RunItem = ("bad", None, good[2], good[3], None, None)  # type: ignore[assignment]
    replies = await worker.exchange([bad, good])
    assert [(k, kind) for k, kind, _ in replies] == [("bad", FAILED)]
    assert "TypeError" in replies[0][2]
    done: dict[str, GraphOutcome] = {}
    while "good" not in done:
        for key, kind, data in await asyncio.wait_for(worker.exchange([]), 10):
            done[key] = read_outcome(kind, data)
    assert done["good"].transcript.agent_turns()[0].text == "You said: hi"


async def test_the_runs_of_a_worker_use_the_speech_pool_it_was_given() -> None:
    from tamesu.speech_pool import LocalSpeechPool

    class ClusterPool(LocalSpeechPool):
        """Stands in for the client of a speech pool on other nodes."""

    w = RunWorker(speech=ClusterPool())
    try:
        out = await w.run(make_spec(type="test-speech"))
    finally:
        await w.aclose()
    assert out.error is None and out.transcript.turns[-1].text == "ClusterPool"
    local = RunWorker()
    try:
        assert (await local.run(make_spec(type="test-speech"))).transcript.turns[-1].text == "LocalSpeechPool"
    finally:
        await local.aclose()
