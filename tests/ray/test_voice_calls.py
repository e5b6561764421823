"""A voice call on the Ray placement: the call's stages in a worker process, the speech engines in
the pool's replicas, and the same call as in one process."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from tamesu.actors.pools import Autoscaler  # noqa: E402
from tamesu.config.loader import load_suite  # noqa: E402
from tamesu.kernel.events import VoiceCall  # noqa: E402
from tamesu.runner.placement.ray import RayPlacement, start_local_ray  # noqa: E402
from tamesu.runner.plan import plan  # noqa: E402

from ..voice import peers  # noqa: E402
from ..voice.peers import AgentScript, Calls, calls  # noqa: E402

__all__ = ["calls"]

pytestmark = pytest.mark.ray

SUITE = """
suite: voice-on-ray
vars: {{ url: "{url}" }}
targets:
  phone:
    type: voice
    url: "{{{{vars.url}}}}/voice"
    idle: 400ms
    transcript_source: agent
    messages: {{ transcript: "$[?(@.type=='transcript')].text" }}
tests:
  - name: asks about returns
    target: phone
    persona: {{ voice: "test-vowel:plain" }}
    scenario: {{ script: [ {{ say: "one two three" }} ] }}
    assert:
      - contains: "30 days"
      - metric: {{ name: turn_latency_ms_p95, lt: 700 }}
"""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.cloudpickle.register_pickle_by_value(sys.modules[peers.__name__])
    start_local_ray(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    yield
    ray.shutdown()


async def test_a_call_speaks_through_the_pool_replicas_and_passes_as_in_one_process(
    local_ray: None, calls: Calls, tmp_path: Path
) -> None:
    _, url = await calls.agent(AgentScript(greeting=None, delay=0.3, reply=0.5))
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(url=url))
    [spec] = plan(load_suite(path, project=False))
    one = Autoscaler(min_replicas=1, max_replicas=1)
    placement = RayPlacement(
        num_workers=1,
        worker_setup=peers.register_engines,
        output_dir=tmp_path / "out",
        speech_pool={"setup": peers.register_engines, "cpus_per_replica": 0.1, "tts": one, "stt": one},
    )
    try:
        outcome = await placement.run(spec, timeout=60)
        assert placement.speech is not None
        replicas = placement.speech._groups["tts"].values()
        served = sum(load["served"] for load in await asyncio.gather(*(r.load.remote() for r in replicas)))
    finally:
        await placement.aclose()
    assert outcome.error is None, outcome.error
    assert all(r.passed for r in outcome.results), outcome.results
    greeting, user, answer = outcome.transcript.turns
    assert (greeting.role, user.role, answer.role) == ("agent", "user", "agent")
    assert user.text == "one two three" and answer.first_audio_at is not None
    assert served == 1, "the caller's line was synthesised by the pool's replica, not in the worker"
    recording = next(e for e in outcome.transcript.events if isinstance(e, VoiceCall)).recording
    assert recording is not None and (tmp_path / "out" / recording).is_file()
