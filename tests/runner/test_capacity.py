"""A target that refuses sessions for capacity gets a lower concurrency and its runs wait for a slot."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest

from tamesu.kernel.outcome import GraphOutcome
from tamesu.runner.target_capacity import HeldConcurrency, TargetCapacity

from .test_scheduler import Events, Outcome, ScriptedPlacement, make_spec, passed, schedule, transcript

pytestmark = pytest.mark.unit


def full(spec: Any, *, retry_after: float | None = None) -> GraphOutcome:
    return Outcome(
        transcript(spec.run_id),
        [],
        "the agent at ws://127.0.0.1:1 refused the session (it closed the websocket with 1013 Try Again Later)",
        error_kind="capacity",
        retryable=True,
        retry_after=retry_after,
    )


class OneAtATime:
    """An agent that serves one session at a time and refuses the others for capacity; a session it
    accepts lasts until ``others`` sessions were refused while it was open."""

    def __init__(self, others: int = 1) -> None:
        self.others = others
        self.open = 0
        self.peak = 0
        self.refused: Counter[str] = Counter()
        self.refused_at: list[float] = []
        self.started_at: list[float] = []
        self.changed = asyncio.Event()

    async def __call__(self, spec: Any, n: int) -> GraphOutcome:
        if self.open >= 1:
            self.refused[spec.run_id] += 1
            self.refused_at.append(time.monotonic())
            self.changed.set()
            return full(spec)
        self.open += 1
        self.peak = max(self.peak, self.open)
        self.started_at.append(time.monotonic())
        try:
            while sum(self.refused.values()) < self.others:
                self.changed.clear()
                await self.changed.wait()
        finally:
            self.open -= 1
        return Outcome(transcript(spec.run_id, "hi", "ok"), [passed()])


async def test_a_target_that_refuses_for_capacity_is_lowered_and_every_run_passes() -> None:
    agent = OneAtATime(others=2)
    events = Events()
    specs = [make_spec(f"t{i}", timeout=30.0) for i in range(3)]
    out = await schedule(ScriptedPlacement(agent), specs, concurrency=4, reporter=events)
    assert sorted((r.run_id, r.outcome, r.attempt) for r in out.results) == [
        ("t0", "passed", 1),
        ("t1", "passed", 1),
        ("t2", "passed", 1),
    ], "a refusal is no attempt: nothing of it is recorded"
    assert agent.peak == 1
    assert out.capacity == [
        HeldConcurrency(suite="s", target="api", started_at=4, held=1, refusals=sum(agent.refused.values()))
    ]
    notes = [line for line in events.log if line.startswith("note ")]
    lowered = [line for line in notes if "now gets at most" in line]
    assert lowered[0].startswith("note target api refused a session for capacity: it now gets at most ")
    assert "(was 4) for the rest of this invocation" in lowered[0]
    assert "at most 1 at once" in lowered[-1]
    assert notes[-1].startswith("note target api (s) refused sessions for capacity ")
    assert notes[-1].endswith("it held 1 at once (of 4 allowed), and its runs waited for a free slot")


async def test_the_refused_run_keeps_its_retries_for_real_errors() -> None:
    agent = OneAtATime(others=1)
    specs = [make_spec(f"t{i}", timeout=30.0, retries=0) for i in range(2)]
    out = await schedule(ScriptedPlacement(agent), specs, concurrency=2)
    assert [r.outcome for r in out.results] == ["passed", "passed"]


@pytest.mark.timing
async def test_a_refused_run_waits_for_the_agents_retry_after() -> None:
    refused_at: list[float] = []
    started_at: list[float] = []

    def behave(spec: Any, n: int) -> Any:
        if n == 1:
            refused_at.append(time.monotonic())
            return full(spec, retry_after=0.4)
        started_at.append(time.monotonic())
        return Outcome(transcript(spec.run_id, "hi", "ok"), [passed()])

    out = await schedule(ScriptedPlacement(behave), [make_spec("t", timeout=30.0)])
    assert [(r.outcome, r.attempt) for r in out.results] == [("passed", 1)]
    assert started_at[0] - refused_at[0] >= 0.4, "the second try came after Retry-After"


@pytest.mark.timing
async def test_a_target_that_never_has_room_is_an_error_when_the_runs_timeout_runs_out() -> None:
    placement = ScriptedPlacement(lambda spec, n: full(spec))
    out = await schedule(placement, [make_spec("t", timeout=1.0)])
    [result] = out.results
    assert (result.outcome, result.error_kind, result.final) == ("error", "capacity", True)
    assert result.error.endswith(
        "; no session of api freed within the run's timeout (1s, at most 1 at once)"
    ), result.error
    assert len(placement.calls) >= 2, "it was tried again while the timeout allowed"
    assert out.capacity[0].held == 1


async def test_per_target_stays_a_cap_and_other_targets_are_not_lowered() -> None:
    agent = OneAtATime(others=1)

    def behave(spec: Any, n: int) -> Any:
        if spec.target_name == "other":
            return Outcome(transcript(spec.run_id, "hi", "ok"), [passed()])
        return agent(spec, n)

    specs = [make_spec("a0", timeout=30.0), make_spec("a1", timeout=30.0), make_spec("b", target="other")]
    out = await schedule(ScriptedPlacement(behave), specs, concurrency=4, per_target=2)
    assert sorted(r.outcome for r in out.results) == ["passed"] * 3
    assert [(h.target, h.started_at, h.held) for h in out.capacity] == [("api", 2, 1)]


async def test_a_new_run_does_not_take_the_slot_a_refused_run_waits_for() -> None:
    capacity = TargetCapacity(1)
    spec = make_spec("t")
    key = (spec.suite_path, spec.target_name)
    capacity.take(key)
    capacity.take(key)  # two in flight: the second was refused
    assert capacity.refused(spec, None) is None, "already at one: nothing lower"
    waiting = asyncio.create_task(capacity.wait_for_slot(spec, time.monotonic() + 5))
    await asyncio.sleep(0)
    assert not capacity.has_room(key)
    capacity.give(key)  # the first run ended
    assert not capacity.has_room(key), "the freed slot is the waiting run's"
    assert await asyncio.wait_for(waiting, 5) is True
    assert capacity.load[key] == 1


async def test_a_full_target_that_then_refuses_connections_for_a_moment_is_waited_for() -> None:
    """A one-session server restarting between sessions refuses connections briefly."""
    agent = OneAtATime(others=1)
    restarting = {"left": 1}

    async def behave(spec: Any, n: int) -> Any:
        if spec.run_id == "t1" and agent.refused["t1"] and restarting["left"]:
            restarting["left"] -= 1
            refused = "connection refused at ws://127.0.0.1:1 after 3 attempts"
            return Outcome(transcript(spec.run_id), [], refused, error_kind="agent", retryable=True)
        return await agent(spec, n)

    specs = [make_spec(f"t{i}", timeout=30.0) for i in range(2)]
    out = await schedule(ScriptedPlacement(behave), specs, concurrency=2)
    assert sorted((r.run_id, r.outcome, r.attempt) for r in out.results) == [
        ("t0", "passed", 1),
        ("t1", "passed", 1),
    ]
    assert restarting["left"] == 0


async def test_a_target_that_never_refused_for_capacity_keeps_its_errors() -> None:
    refused = "connection refused at ws://127.0.0.1:1 after 3 attempts"
    placement = ScriptedPlacement(
        lambda spec, n: Outcome(transcript(spec.run_id), [], refused, error_kind="agent", retryable=True)
    )
    out = await schedule(placement, [make_spec("t", timeout=30.0)])
    assert [(r.outcome, r.error) for r in out.results] == [("error", refused)]
    assert out.capacity == []


def test_a_target_that_refuses_even_alone_for_long_is_hopeless_until_it_serves_again() -> None:
    from tamesu.runner.target_capacity import ALONE_LIMIT

    now = [100.0]
    capacity = TargetCapacity(4, clock=lambda: now[0])
    spec = make_spec("t")
    key = (spec.suite_path, spec.target_name)
    capacity.take(key)
    capacity.refused(spec, None)
    assert not capacity.hopeless(spec), "a moment's refusal (a bot restarting) is waited for"
    now[0] += ALONE_LIMIT
    assert capacity.hopeless(spec), "a service that refuses one session at a time for long is down"
    capacity.served(spec)
    assert not capacity.hopeless(spec)
