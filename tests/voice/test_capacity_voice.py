"""A capacity search of a voice agent: real calls (caller speech, line, VAD, the agent's audio)
against a loopback voice agent that answers later the more calls it holds.

A voice turn's latency also holds what hearing takes (the agent's end-of-speech wait, the line,
the VAD: some 0.6-1.2 s here), so the agent's delay grows by half a second a call: its own figure
(11 calls under 6 s) stays within a fifth of what the calls measure."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tamesu.load.load_test import LoadRequest, run_load

from .peers import AgentScript, Calls, LoopbackAgent, calls

__all__ = ["calls"]

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SUITE = """
suite: voice-capacity
defaults: {{ retries: 0, timeout: 30s }}
targets:
  phone: {{ type: voice, url: "{url}/voice", idle: 400ms, transcript_source: agent,
           messages: {{ transcript: "$[?(@.type=='transcript')].text" }} }}
tests:
  - name: asks about returns
    target: phone
    persona: {{ voice: "test-vowel:plain" }}
    scenario: {{ script: [ {{ say: "one two three" }} ] }}
    assert: [ {{ contains: "30 days" }} ]
"""


class CrowdedAgent(LoopbackAgent):
    """Replies ``base + per_call x calls connected`` after the caller stops speaking."""

    def __init__(self, *, base: float, per_call: float) -> None:
        super().__init__(AgentScript(greeting=None, delay=base, reply=0.3))
        self.base, self.per_call = base, per_call
        self.active = self.most = 0

    def capacity(self, *, turn_latency_ms: float) -> int:
        return int((turn_latency_ms / 1000 - self.base) / self.per_call + 1e-9)

    def _pace(self) -> None:
        self.script.delay = self.base + self.per_call * self.active

    async def _voice(self, request: Any) -> Any:
        self.active += 1
        self.most = max(self.most, self.active)
        self._pace()
        try:
            return await super()._voice(request)
        finally:
            self.active -= 1
            self._pace()


async def test_a_voice_agents_capacity_is_found_from_its_calls(calls: Calls, tmp_path: Path) -> None:
    agent = CrowdedAgent(base=0.1, per_call=0.5)
    url = await calls.serve(agent.app())
    (tmp_path / "suite.yaml").write_text(SUITE.format(url=url))
    out = io.StringIO()
    result = await run_load(
        LoadRequest(
            paths=[str(tmp_path / "suite.yaml")],
            overrides={
                "capacity": {
                    "start": 4,
                    "step_calls": 6,
                    "step_seconds": "1s",
                    "cool_down": "100ms",
                    "max_concurrency": 16,
                },
                "gates": {"slo": {"turn_latency_ms_p95": 6000}},
            },
            output=str(tmp_path / "runs"),
            transcripts="none",
            quiet=True,
            stream=out,
        )
    )
    found = result.report["capacity"]
    expected = agent.capacity(turn_latency_ms=6000)  # 11 calls in flight
    assert result.exit_code == 0, out.getvalue()
    assert abs(found["concurrency"] - expected) <= 0.2 * expected, found
    assert found["broke"]["gate"] == "slo/turn_latency_ms_p95"
    assert agent.most <= 16
