"""A voice test through the run graph: the recorder keeps the audio timings, segments, events and metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tamesu.actors.services import RunServices
from tamesu.config.loader import load_suite
from tamesu.kernel.events import VoiceCall, VoiceTurn
from tamesu.runner.grading import run_and_grade
from tamesu.runner.plan import plan
from tamesu.speech_pool import LocalSpeechPool

from ..virtual_time import LoopClock
from .peers import AgentScript, Calls, calls

__all__ = ["calls"]

pytestmark = [pytest.mark.integration, pytest.mark.timing, pytest.mark.virtual_time]

SUITE = """
suite: voice-graph
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
      - metric: {{ name: call_duration_s, gt: 1 }}
"""


class HeardPool(LocalSpeechPool):
    """The local engines, noting what they were asked to say."""

    def __init__(self) -> None:
        self.said: list[str] = []

    async def synthesize(self, text: str, **kw: Any) -> Any:
        self.said.append(text)
        return await super().synthesize(text, **kw)


async def test_a_voice_run_records_timings_segments_events_and_metrics(calls: Calls, tmp_path: Path) -> None:
    _, url = await calls.agent(AgentScript(greeting=0.4, delay=0.3, reply=0.5))
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(url=url))
    [spec] = plan(load_suite(path, project=False))
    pool = HeardPool()
    services = RunServices.create(output_dir=tmp_path / "out", speech=pool, clock_factory=LoopClock)
    try:
        outcome = await run_and_grade(spec, services, timeout=30)
    finally:
        await services.aclose()
    assert outcome.error is None, outcome.error
    assert pool.said == ["one two three"], "the caller spoke through the run's speech pool"
    assert all(r.passed for r in outcome.results), outcome.results
    t = outcome.transcript
    greeting, user, answer = t.turns
    assert (greeting.role, user.role, answer.role) == ("agent", "user", "agent")
    assert greeting.text == "Hello, this is the loopback agent." and greeting.first_audio_at is not None
    assert answer.first_audio_at is not None and answer.sent_at is not None
    assert 0.2 < answer.first_audio_at - answer.sent_at < 0.45
    assert {a.channel for a in answer.audio} == {"caller", "agent"}
    kinds = [type(e) for e in t.events]
    assert VoiceCall in kinds and kinds.count(VoiceTurn) == 2
    recording = next(e for e in t.events if isinstance(e, VoiceCall)).recording
    assert recording is not None and (tmp_path / "out" / recording).is_file()
    assert t.metrics["turn_latency_ms_p50"] == pytest.approx(
        1000 * (answer.first_audio_at - answer.sent_at), abs=1
    )
    assert t.metrics["talk_over_ms"] == 0 and t.end_reason == "done"
