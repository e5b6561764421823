"""The speech pool on a local Ray: replicas shared by every worker, batches, autoscaling."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator

import pytest

ray = pytest.importorskip("ray")

from tamesu.actors.pools import Autoscaler  # noqa: E402
from tamesu.runner.placement.ray import RaySpeechClient, RaySpeechPool, start_local_ray  # noqa: E402

from . import engines  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.cloudpickle.register_pickle_by_value(sys.modules[engines.__name__])
    start_local_ray(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.fixture
async def pool(local_ray: None) -> object:
    scaler = {"min_replicas": 1, "max_replicas": 3, "target": 2.0, "cooldown": 0.0}
    p = RaySpeechPool(
        setup=engines.register,
        cpus_per_replica=0.1,
        tts=Autoscaler(**scaler),
        stt=Autoscaler(**scaler),
        interval=3600,
    )
    yield p
    await p.aclose()


class Caller:
    """Another process (like a RunWorker) whose calls use the pool it was handed."""

    def __init__(self, client: RaySpeechClient) -> None:
        engines.register()
        self.speech = client

    async def say_and_hear(self, text: str) -> str:
        audio = await self.speech.synthesize(text, engine="test-tone")
        heard = await self.speech.transcribe(audio, engine="test-count")
        return heard.text


async def test_calls_in_other_processes_share_the_replicas_through_batches(pool: RaySpeechPool) -> None:
    callers = [ray.remote(num_cpus=0.1)(Caller).remote(pool.client()) for _ in range(2)]
    texts = [" ".join(["w"] * (1 + i % 5)) for i in range(40)]
    heard = await asyncio.gather(*(callers[i % 2].say_and_hear.remote(t) for i, t in enumerate(texts)))
    assert heard == [f"{1 + i % 5} words" for i in range(40)]
    client = pool.client()
    audio = await client.synthesize("a b c d", engine="test-tone")
    assert (audio.sample_rate, round(audio.duration, 2)) == (8000, 0.4)
    stats = client.stats()
    assert stats["requests"] and all(stats["batches"][k] <= stats["requests"][k] for k in stats["requests"])


async def test_the_pool_grows_under_load_and_shrinks_when_idle(pool: RaySpeechPool) -> None:
    client = pool.client()
    busy = [
        asyncio.ensure_future(client.synthesize(f"line {i}", voice="slow", engine="test-tone"))
        for i in range(12)
    ]
    for _ in range(200):
        loads = await asyncio.gather(*(h.load.remote() for h in pool._groups["tts"].values()))
        if sum(x["in_flight"] for x in loads) >= 12:
            break
        await asyncio.sleep(0.02)
    grown = await pool.rescale()
    assert grown["tts"] == 3
    await asyncio.gather(*busy)
    assert (await pool.rescale())["tts"] == 2
    assert (await pool.rescale())["tts"] == 1
    again = await client.synthesize("still here", engine="test-tone")
    assert round(again.duration, 2) == 0.2


async def test_a_replica_slow_to_report_its_load_is_kept_not_forgotten(pool: RaySpeechPool) -> None:
    """A replica still starting (or on a loaded machine) that misses the load query stays in its
    group: dropping it would leak the actor and shrink the pool below what it runs."""
    before = {kind: list(group) for kind, group in pool._groups.items()}
    pool.load_timeout = 0.0
    assert await pool.rescale() == {"tts": 1, "stt": 1}
    assert {kind: list(group) for kind, group in pool._groups.items()} == before
