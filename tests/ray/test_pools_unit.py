"""The speech pool's parts without Ray: the batcher, the autoscaling policy, a replica, the seam."""

from __future__ import annotations

import asyncio

import pytest

from tamesu.actors.pools import (
    Autoscaler,
    Batcher,
    SpeechServer,
    SynthesisRequest,
    TranscriptionRequest,
    audio_of,
    transcription_of,
)
from tamesu.errors import ConfigError
from tamesu.speech_pool import LocalSpeechPool, local_speech_pool

from .engines import register

pytestmark = pytest.mark.unit

register()


async def test_requests_from_many_callers_travel_in_batches() -> None:
    sent: list[list[int]] = []

    async def send(batch: list[int]) -> list[int]:
        sent.append(batch)
        return [x * 10 for x in batch]

    batcher: Batcher[int, int] = Batcher(send, max_batch=4, max_wait=0.05)
    assert await asyncio.gather(*(batcher.submit(i) for i in range(10))) == [i * 10 for i in range(10)]
    assert sent == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert (batcher.batches, batcher.requests) == (3, 10)


async def test_a_lone_request_waits_at_most_max_wait_and_a_failed_batch_fails_each_caller() -> None:
    async def send(batch: list[int]) -> list[int]:
        if 13 in batch:
            raise RuntimeError("replica died")
        return batch

    batcher: Batcher[int, int] = Batcher(send, max_batch=100, max_wait=0.01)
    assert await asyncio.wait_for(batcher.submit(1), 1.0) == 1
    results = await asyncio.gather(batcher.submit(12), batcher.submit(13), return_exceptions=True)
    assert [type(r) for r in results] == [RuntimeError, RuntimeError]


def test_autoscaler_scales_up_at_once_and_down_slowly() -> None:
    policy = Autoscaler(min_replicas=1, max_replicas=4, target=8, cooldown=10)
    assert policy.desired([20.0], now=0) == 3
    assert policy.desired([30.0, 30.0, 30.0], now=1) == 4
    assert policy.desired([1.0, 0.0, 0.0, 0.0], now=2) == 4
    assert policy.desired([1.0, 0.0, 0.0, 0.0], now=11) == 4
    assert policy.desired([1.0, 0.0, 0.0, 0.0], now=12.5) == 3
    assert policy.desired([0.0, 0.0, 0.0], now=13) == 3
    assert policy.desired([0.0, 0.0, 0.0], now=23) == 2
    assert policy.desired([5.0, 5.0], now=24) == 2
    assert policy.desired([0.0], now=100) == 1


async def test_a_replica_serves_a_batch_of_both_kinds_and_reports_engine_errors_as_values() -> None:
    server = SpeechServer()
    replies = await server.synthesize_batch(
        [
            SynthesisRequest(text="one two three", engine="test-tone"),
            SynthesisRequest(text="x", engine="nope"),
        ]
    )
    audio = audio_of(replies[0])
    assert (audio.sample_rate, round(audio.duration, 2)) == (8000, 0.3)
    with pytest.raises(ConfigError, match="unknown TTS engine"):
        audio_of(replies[1])
    [heard] = await server.transcribe_batch(
        [TranscriptionRequest(pcm=audio.samples.tobytes(), sample_rate=8000, engine="test-count")]
    )
    assert transcription_of(heard).text == "3 words"
    assert server.load() == {"in_flight": 0, "served": 3, "batches": 2}


async def test_a_replica_sends_back_what_each_request_cost_and_the_caller_is_charged_it() -> None:
    from tamesu.engine_cpu import CpuAccount, CpuMeter, charging

    if not CpuMeter("probe").measures_cpu:
        pytest.skip("thread CPU clocks are read on Linux")
    server = SpeechServer()
    one, two = await server.synthesize_batch(
        [
            SynthesisRequest(text="one", engine="test-busy"),
            SynthesisRequest(text="one two", engine="test-busy"),
        ]
    )
    assert 0.08 <= one.cpu["test-busy"] <= 0.15 and 0.18 <= two.cpu["test-busy"] <= 0.27, (one.cpu, two.cpu)
    with charging(CpuAccount()) as account:
        audio_of(two)
    assert account.by_engine == two.cpu
    [tone] = await server.synthesize_batch([SynthesisRequest(text="one", engine="test-tone")])
    assert tone.cpu == {}, "an engine without workers spends nothing tamesu can see"


async def test_a_run_hands_its_calls_its_own_pool_and_the_local_engines_are_the_default() -> None:
    from tamesu.actors.services import RunServices
    from tamesu.voice.speech import render_speech

    services = RunServices.create()
    try:
        assert services.speech is local_speech_pool()
    finally:
        await services.aclose()

    class Recording(LocalSpeechPool):
        def __init__(self) -> None:
            self.said: list[str] = []

        async def synthesize(self, text: str, **kw: object):  # type: ignore[no-untyped-def, override]
            self.said.append(text)
            return await super().synthesize(text, engine="test-tone")

    pool = Recording()
    said = await render_speech("hello there", 8000, pool=pool)
    assert round(said.duration, 2) == 0.2 and pool.said == ["hello there"]
    assert await render_speech("hello there", 8000, pool=pool) is said, "one synthesis per pool and line"
    elsewhere = Recording()
    await render_speech("hello there", 8000, pool=elsewhere)
    assert elsewhere.said == ["hello there"], "a pool's utterances are its own"
