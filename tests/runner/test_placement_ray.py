"""The Ray placement against a local Ray of two CPUs: same results as local, and dead workers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator

import pytest

ray = pytest.importorskip("ray")

from tamesu.actors.services import RunServices  # noqa: E402
from tamesu.kernel.outcome import GraphOutcome  # noqa: E402
from tamesu.runner.placement.local import LocalPlacement  # noqa: E402
from tamesu.runner.placement.ray import RayPlacement, start_local_ray  # noqa: E402
from tests.actors import agents  # noqa: E402
from tests.actors.agents import make_spec, register  # noqa: E402

from .placed import specs, summary  # noqa: E402

pytestmark = pytest.mark.ray

register()


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray for the module; the test adapters travel to workers by value (they are not installed)."""
    ray.cloudpickle.register_pickle_by_value(sys.modules[agents.__name__])
    start_local_ray(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def placement(local_ray: None) -> Iterator[RayPlacement]:
    p = RayPlacement(num_workers=2, worker_setup=register, encode_boundary=True)
    yield p
    asyncio.run(p.aclose())


SECRETS = {"AGENT_TOKEN": "ray-secret-4242"}


async def test_the_same_specs_give_the_same_outcomes_on_ray_and_locally(placement: RayPlacement) -> None:
    services = RunServices.create()
    try:
        local = [
            await LocalPlacement(services, encode_boundary=True).run(s, secrets=SECRETS) for s in specs()
        ]
    finally:
        await services.aclose()
    remote = await asyncio.gather(*(placement.run(s, secrets=SECRETS) for s in specs()))
    assert [summary(o) for o in remote] == [summary(o) for o in local]
    story = remote[0]
    assert story.transcript.captures == {"order": "ORD-1234", "eta": "3 days"}
    assert [(r.name, r.passed) for r in story.results] == [
        ("contains", True),
        ("turns", False),
        ("last", True),
    ]
    assert (remote[2].error, remote[2].error_kind) == ("503 from agent (Authorization: Bearer ***)", "agent")


async def test_secret_values_travel_with_the_call_and_are_redacted(placement: RayPlacement) -> None:
    spec = make_spec(type="test-failing", say=["fail"])
    out = await placement.run(spec, secrets={"AGENT_TOKEN": "ray-secret-4242"})
    assert out.error == "503 from agent (Authorization: Bearer ***)"
    assert "ray-secret-4242" not in out.transcript.to_json().decode()


async def test_a_run_that_outlives_its_timeout_comes_back_with_its_partial_transcript(
    placement: RayPlacement,
) -> None:
    out = await placement.run(make_spec(type="test-hanging", say=["hi", "and?"]), timeout=0.5)
    assert out.error_kind == "timeout"
    assert [t.text for t in out.transcript.turns] == ["hi", "You said: hi", "and?", "Let me check that for y"]


async def busy_workers(placement: RayPlacement) -> list:
    """The workers with a run in flight, once there is one."""
    while True:
        workers = placement.workers
        counts = await asyncio.gather(*(w.active.remote() for w in workers))
        if any(counts):
            return [w for w, n in zip(workers, counts) if n]
        await asyncio.sleep(0.05)


async def test_cancelling_a_remote_run_hands_its_partial_outcome_to_the_sink(placement: RayPlacement) -> None:
    received: list[GraphOutcome] = []
    run = asyncio.create_task(
        placement.run(make_spec(type="test-hanging", say=["hi", "and?"]), sink=received.append)
    )
    await busy_workers(placement)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    [partial] = received
    assert partial.error_kind == "cancelled"
    assert partial.transcript.turns[0].text == "hi"


async def test_a_killed_worker_gives_a_retryable_error_outcome(placement: RayPlacement) -> None:
    run = asyncio.create_task(placement.run(make_spec(type="test-hanging", say=["hi", "and?"])))
    [busy] = await busy_workers(placement)
    ray.kill(busy)
    out = await asyncio.wait_for(run, 30)
    assert (out.error_kind, out.retryable) == ("worker", True)
    assert out.transcript.end_reason == "error"
    after = await placement.run(make_spec(say=["still there?"]))
    assert after.error is None and after.transcript.agent_turns()[0].text == "You said: still there?"


async def test_runs_started_together_each_get_their_own_outcome(placement: RayPlacement) -> None:
    runs = [make_spec(run_id=f"many#{i}", say=[f"line {i}"]) for i in range(24)]
    outs = await asyncio.gather(*(placement.run(s) for s in runs))
    assert [(o.transcript.run_id, o.transcript.agent_turns()[0].text) for o in outs] == [
        (f"many#{i}", f"You said: line {i}") for i in range(24)
    ]


async def both_busy(placement: RayPlacement) -> None:
    while len(await busy_workers(placement)) < 2:
        await asyncio.sleep(0.05)


async def test_runs_beyond_each_workers_limit_wait_in_the_driver(placement: RayPlacement) -> None:
    placement.max_per_worker = 1
    try:
        runs = [
            asyncio.create_task(
                placement.run(make_spec(type="test-hanging", say=["hi", "and?"], run_id=f"w#{i}"))
            )
            for i in range(3)
        ]
        await asyncio.wait_for(both_busy(placement), 30)
        assert sum(await asyncio.gather(*(w.active.remote() for w in placement.workers))) == 2
        assert not any(r.done() for r in runs)
    finally:
        placement.max_per_worker = 64
        for r in runs:
            r.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
    after = await placement.run(make_spec(say=["next"]))
    assert after.transcript.agent_turns()[0].text == "You said: next"
