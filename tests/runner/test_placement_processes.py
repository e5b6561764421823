"""The processes placement: worker processes of this machine run the graphs, with Ray's outcomes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tamesu.actors.services import RunServices
from tamesu.kernel.outcome import GraphOutcome
from tamesu.runner.placement.local import LocalPlacement
from tamesu.runner.placement.processes import ProcessPlacement, agent_on_this_machine, process_count
from tests.actors.agents import make_spec, register

from .placed import specs, summary

pytestmark = pytest.mark.integration

register()

SECRETS = {"AGENT_TOKEN": "process-secret-4242"}


@pytest.fixture
async def placement() -> AsyncIterator[ProcessPlacement]:
    p = ProcessPlacement(processes=2, worker_setup=register, encode_boundary=True)
    yield p
    await p.aclose()


async def in_flight(placement: ProcessPlacement, count: int) -> list[int]:
    """Runs in flight on each worker, once ``count`` are in flight in all."""
    while True:
        health = await placement.health()
        if health["alive"] == placement.processes and sum(health["in_flight"]) >= count:
            return list(health["in_flight"])
        await asyncio.sleep(0.05)


async def test_the_same_specs_give_the_same_outcomes_in_worker_processes_and_locally(
    placement: ProcessPlacement,
) -> None:
    services = RunServices.create()
    try:
        local = [
            await LocalPlacement(services, encode_boundary=True).run(s, secrets=SECRETS) for s in specs()
        ]
    finally:
        await services.aclose()
    remote = await asyncio.gather(*(placement.run(s, secrets=SECRETS) for s in specs()))
    assert [summary(o) for o in remote] == [summary(o) for o in local]
    assert remote[0].transcript.captures == {"order": "ORD-1234", "eta": "3 days"}
    assert (remote[2].error, remote[2].error_kind) == ("503 from agent (Authorization: Bearer ***)", "agent")
    assert "process-secret-4242" not in remote[2].transcript.to_json().decode()


async def test_runs_spread_over_the_workers_and_each_gets_its_own_outcome(
    placement: ProcessPlacement,
) -> None:
    hanging = [
        asyncio.create_task(
            placement.run(make_spec(type="test-hanging", say=["hi", "and?"], run_id=f"h#{i}"))
        )
        for i in range(4)
    ]
    try:
        assert await asyncio.wait_for(in_flight(placement, 4), 60) == [2, 2]
        runs = [make_spec(run_id=f"many#{i}", say=[f"line {i}"]) for i in range(40)]
        outs = await asyncio.gather(*(placement.run(s) for s in runs))
        assert [(o.transcript.run_id, o.transcript.agent_turns()[0].text) for o in outs] == [
            (f"many#{i}", f"You said: line {i}") for i in range(40)
        ]
    finally:
        for task in hanging:
            task.cancel()
        await asyncio.gather(*hanging, return_exceptions=True)
    cpu = await placement.cpu_seconds()
    assert len(cpu) == 2 and all(c is not None and c > 0 for c in cpu)


async def test_a_run_that_outlives_its_timeout_comes_back_with_its_partial_transcript(
    placement: ProcessPlacement,
) -> None:
    out = await placement.run(make_spec(type="test-hanging", say=["hi", "and?"]), timeout=0.5)
    assert out.error_kind == "timeout"
    assert [t.text for t in out.transcript.turns] == ["hi", "You said: hi", "and?", "Let me check that for y"]


async def test_cancelling_a_run_hands_its_partial_outcome_to_the_sink(placement: ProcessPlacement) -> None:
    received: list[GraphOutcome] = []
    run = asyncio.create_task(
        placement.run(make_spec(type="test-hanging", say=["hi", "and?"]), sink=received.append)
    )
    await asyncio.wait_for(in_flight(placement, 1), 60)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    [partial] = received
    assert partial.error_kind == "cancelled"
    assert partial.transcript.turns[0].text == "hi"


async def test_a_killed_worker_gives_a_retryable_error_outcome_and_is_replaced(
    placement: ProcessPlacement,
) -> None:
    run = asyncio.create_task(placement.run(make_spec(type="test-hanging", say=["hi", "and?"])))
    counts = await asyncio.wait_for(in_flight(placement, 1), 60)
    busy = placement.pids[counts.index(1)]
    assert busy is not None
    os.kill(busy, signal.SIGKILL)
    out = await asyncio.wait_for(run, 30)
    assert (out.error_kind, out.retryable) == ("worker", True)
    assert out.error is not None and out.error.startswith(
        "the worker process running this run died (exit -9)"
    )
    assert out.transcript.end_reason == "error"
    assert busy not in placement.pids and placement.replaced == 1
    after = await asyncio.gather(*(placement.run(make_spec(say=[f"still there {i}?"])) for i in range(4)))
    assert [o.transcript.agent_turns()[0].text for o in after] == [
        f"You said: still there {i}?" for i in range(4)
    ]
    assert (await placement.health())["alive"] == 2


async def test_runs_beyond_each_workers_limit_wait_in_the_driver(placement: ProcessPlacement) -> None:
    placement.max_per_worker = 1
    runs = [
        asyncio.create_task(
            placement.run(make_spec(type="test-hanging", say=["hi", "and?"], run_id=f"w#{i}"))
        )
        for i in range(3)
    ]
    try:
        assert await asyncio.wait_for(in_flight(placement, 2), 60) == [1, 1]
        assert not any(r.done() for r in runs)
    finally:
        for r in runs:
            r.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
    placement.max_per_worker = 64
    after = await placement.run(make_spec(say=["next"]))
    assert after.transcript.agent_turns()[0].text == "You said: next"


async def test_a_worker_that_cannot_start_fails_its_runs_with_what_it_printed(tmp_path: Path) -> None:
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named tamesu' >&2\nexit 1\n")
    broken.chmod(0o755)
    placement = ProcessPlacement(processes=2, python=str(broken))
    try:
        outs = [await asyncio.wait_for(placement.run(make_spec(say=["hi"])), 30) for _ in range(3)]
    finally:
        await placement.aclose()
    for out in outs:
        assert (
            out.error
            == "the worker process could not start (exit 1): ModuleNotFoundError: No module named tamesu"
        )
        assert out.error_kind == "worker"
    assert not outs[-1].retryable, "once no worker came up, a run is not worth retrying"
    assert placement.replaced == 0


def test_a_worker_setup_that_cannot_travel_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="give a module-level function"):
        ProcessPlacement(processes=2, worker_setup=lambda: None)


def test_auto_leaves_a_core_for_an_agent_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    from tamesu.config.target import parse_target
    from tamesu.runner.placement import processes

    monkeypatch.setattr(processes, "usable_cores", lambda: 8)
    local = make_spec().evolve(target=parse_target({"type": "rest", "url": "http://127.0.0.1:9/chat"}))
    named = make_spec().evolve(target=parse_target({"type": "rest", "url": "http://localhost:9/chat"}))
    remote = make_spec().evolve(
        target=parse_target({"type": "rest", "url": "https://agent.example.com/chat"})
    )
    spawned = make_spec().evolve(target=parse_target({"type": "mcp", "command": "./bin/orders-mcp"}))
    assert (
        agent_on_this_machine([local]) and agent_on_this_machine([named]) and agent_on_this_machine([spawned])
    )
    assert not agent_on_this_machine([remote])
    assert process_count("auto", [remote, local], peak=32) == 7
    assert process_count("auto", [remote], peak=32) == 8
    assert process_count("auto", [remote], peak=3) == 3, "never more workers than calls in flight"
    assert process_count(None, [remote], peak=32) == 1
    assert process_count(5, [local], peak=2) == 5


def test_the_worker_module_says_how_it_is_started() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "tamesu.runner.placement.process_worker"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "usage: python -m tamesu.runner.placement.process_worker FD" in done.stderr


async def test_what_a_dying_worker_printed_is_kept_within_bounds(tmp_path: Path) -> None:
    noisy = tmp_path / "python"
    noisy.write_text(
        "#!/bin/sh\nhead -c 300000 /dev/zero | tr '\\0' x\necho\nprintf 'Fatal: \\033[31mboom\\n'\nexit 3\n"
    )
    noisy.chmod(0o755)
    placement = ProcessPlacement(processes=1, python=str(noisy))
    try:
        out = await asyncio.wait_for(placement.run(make_spec(say=["hi"])), 30)
    finally:
        await placement.aclose()
    assert out.error == "the worker process could not start (exit 3): Fatal: \\x1b[31mboom"
