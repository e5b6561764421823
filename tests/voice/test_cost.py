"""A voice run's cost: the characters its caller spoke, the audio it transcribed, its minutes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.actors.services import RunServices
from tamesu.config.loader import load_suite
from tamesu.config.prices import Prices
from tamesu.runner.grading import run_and_grade
from tamesu.runner.plan import plan
from tamesu.speech_pool import LocalSpeechPool

from ..virtual_time import LoopClock
from .peers import AgentScript, Calls, calls
from .test_graph import SUITE

__all__ = ["calls"]

pytestmark = [pytest.mark.integration, pytest.mark.timing, pytest.mark.virtual_time]


async def test_a_voice_run_prices_its_speech_and_minutes(calls: Calls, tmp_path: Path) -> None:
    _, url = await calls.agent(AgentScript(greeting=0.4, delay=0.3, reply=0.5))
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(url=url).replace("transcript_source: agent", "transcript_source: stt"))
    [spec] = plan(load_suite(path, project=False))
    prices = Prices(
        call_minute={"voice": 0.6}, tts_million_characters={"test-vowel": 1e6}, local_speech_second=0.01
    )
    spec = spec.evolve(prices=prices)
    services = RunServices.create(
        output_dir=tmp_path / "out", speech=LocalSpeechPool(), clock_factory=LoopClock
    )
    try:
        outcome = await run_and_grade(spec, services, timeout=30)
    finally:
        await services.aclose()
    assert outcome.error is None, outcome.error
    m = outcome.transcript.metrics
    assert m["tts_characters"] == len("one two three")
    assert m["stt_seconds"] > 0, "the agent's speech went to STT"
    # test-vowel (hosted, as far as prices go) at $1 a character; whisper (local) by its CPU seconds
    assert m["local_speech_cpu_s"] > 0 and "speech_unpriced" not in m
    assert m["speech_cost_usd"] == pytest.approx(13.0 + m["local_speech_cpu_s"] * 0.01)
    assert m["call_minutes"] == pytest.approx(m["call_duration_s"] / 60)
    assert m["call_minutes_cost_usd"] == pytest.approx(m["call_minutes"] * 0.6)
    parts = m.get("llm_cost_usd", 0.0) + m["speech_cost_usd"] + m["call_minutes_cost_usd"]
    assert m["cost_usd"] == pytest.approx(parts)
