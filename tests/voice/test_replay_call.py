"""A replayed call through the run graph: the caller sends the recorded clips, not synthesised speech,
each after the agent's turn, through the line a grid cell sets."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tamesu.actors.graph import run_graph
from tamesu.actors.services import RunServices
from tamesu.config.loader import load_suite
from tamesu.kernel.events import VoiceCall
from tamesu.runner.grid import expand_grid, parse_grid
from tamesu.runner.plan import plan
from tamesu.users.replay_user import replay_result

from ..virtual_time import LoopClock
from .peers import AgentScript, Calls, calls, vowel
from .test_graph import HeardPool

__all__ = ["calls"]

pytestmark = [pytest.mark.integration, pytest.mark.timing, pytest.mark.virtual_time]

SUITE = """
suite: replayed
targets:
  phone:
    type: voice
    url: "{url}/voice"
    idle: 400ms
    transcript_source: agent
    messages: {{ transcript: "$[?(@.type=='transcript')].text" }}
tests:
  - name: call 7
    target: phone
    scenario:
      replay:
        opening: "Hello, this is the loopback agent."
        turns:
          - {{ say: "where is my order", clip: calls/7/turn-1.wav }}
          - {{ say: "thanks bye", clip: calls/7/turn-2.wav }}
"""


def clip(path: Path, seconds: float, rate: int = 8000) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = np.concatenate(
        [np.zeros(rate // 10, np.int16), vowel(seconds, rate), np.zeros(rate // 10, np.int16)]
    )
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())


async def run(spec: Any, tmp_path: Path, pool: HeardPool) -> Any:
    services = RunServices.create(output_dir=tmp_path / "out", speech=pool, clock_factory=LoopClock)
    try:
        return await run_graph(spec, services, timeout=30)
    finally:
        await services.aclose()


async def test_the_caller_sends_the_recorded_clips_each_after_the_agents_turn(
    calls: Calls, tmp_path: Path
) -> None:
    agent, url = await calls.agent(AgentScript(greeting=0.4, delay=0.3, reply=0.5))
    clip(tmp_path / "calls/7/turn-1.wav", 1.2)
    clip(tmp_path / "calls/7/turn-2.wav", 0.6)
    (tmp_path / "suite.yaml").write_text(SUITE.format(url=url))
    loaded = load_suite(tmp_path / "suite.yaml", project=False)
    [spec] = plan(loaded)
    pool = HeardPool()
    outcome = await run(spec, tmp_path, pool)
    assert outcome.error is None, outcome.error
    assert pool.said == [], "a replayed caller says its recording, not synthesised text"
    t = outcome.transcript
    assert [turn.role for turn in t.turns] == ["agent", "user", "agent", "user", "agent"]
    assert [turn.text for turn in t.user_turns()] == ["where is my order", "thanks bye"]
    spoken = [next(a for a in turn.audio if a.channel == "caller") for turn in t.agent_turns()[1:]]
    assert [round(a.end - a.start, 1) for a in spoken] == [1.2, 0.6]  # the clips' speech, resampled
    assert len(agent.log.caller_ends) == 2 and t.end_reason == "done"
    assert replay_result(loaded.suite.tests[0].scenario.replay, t).passed  # type: ignore[union-attr]


async def test_a_grid_cell_puts_the_replayed_clips_through_its_line(calls: Calls, tmp_path: Path) -> None:
    _, url = await calls.agent(AgentScript(greeting=0.4, delay=0.3, reply=0.5))
    clip(tmp_path / "calls/7/turn-1.wav", 1.0)
    clip(tmp_path / "calls/7/turn-2.wav", 0.6)
    (tmp_path / "suite.yaml").write_text(SUITE.format(url=url))
    specs = expand_grid(
        plan(load_suite(tmp_path / "suite.yaml", project=False)), parse_grid(["line_quality=pstn"])
    )
    [spec] = specs
    outcome = await run(spec, tmp_path, HeardPool())
    assert outcome.error is None, outcome.error
    call = next(e for e in outcome.transcript.events if isinstance(e, VoiceCall))
    assert call.line == "pstn" and spec.run_id == "call 7 {line_quality=pstn}"
