"""End to end: ``tamesu run`` phones a voice agent of our own (tamesu.testing.sip_agent) over SIP
on loopback, with the real Piper voice and Whisper on both sides of the call: a keypad step, a
wait_for step, a question answered, the agent's digits heard and the agent hanging up."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tamesu.spoken import says
from tamesu.testing.sip_agent import GREETING
from tamesu.voice.voice_metrics import wer

from ..stored import stored_transcripts

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SUITE = """\
suite: sip-e2e
targets:
  phone: {{ type: sip, to: "{uri}", idle: 1s, transcript_source: stt }}
tests:
  - name: returns by phone
    target: phone
    persona: {{ voice: en-US-male }}
    scenario:
      script:
        - wait_for: "press one for returns"
        - dtmf: "1"
        - wait_for: "you can return shoes within"
        - say: "Can you give me my code number please?"
        - say: "Thank you, bye."
    assert:
      - contains: "shoe shop"
      - contains: "30 days"
      - dtmf_received: {{ equals: "42#" }}
      - call_ended_by: [agent]
      - metric: {{ name: turn_latency_ms_p50, gt: 0 }}
"""


def _speech_engines_installed() -> bool:
    from tamesu.audio.engines import available

    engines = available()
    return bool(engines["tts"]["piper"]["installed"] and engines["stt"]["whisper"]["installed"])


@pytest.fixture
def agent() -> Iterator[str]:
    """The agent in its own process; its first line says where to call it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tamesu.testing.sip_agent", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # it exits (an empty line) if it cannot start
        assert line.startswith("listening on sip:"), line
        yield line.removeprefix("listening on ").strip()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not _speech_engines_installed(), reason="needs the voice extra (Piper and Whisper)")
def test_a_scripted_caller_phones_the_agent_over_sip(tmp_path: Path, agent: str) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(uri=agent))
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "tamesu", "run", str(suite), "--output", str(tmp_path / "runs")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.is_symlink()]
    [transcript] = stored_transcripts(run_dir)
    turns = [(t["role"], t["text"]) for t in transcript["turns"]]
    agent_turns = [text for role, text in turns if role == "agent"]
    first_user = next(i for i, (role, _) in enumerate(turns) if role == "user")
    greeting = " ".join(text for _, text in turns[:first_user])  # one turn, or more after a long breath
    assert wer(GREETING, greeting) <= 0.3, greeting  # our Whisper of its Piper, a margin kept
    assert any(says(text, "you can return shoes within 30 days") for text in agent_turns)  # the wait_for
    assert agent_turns[-1].strip(), turns  # it said something before it hung up
    assert transcript["dtmf_received"] == "42#"
    assert transcript["metrics"]["turn_latency_ms_p50"] > 0
    ended = [e for e in transcript["events"] if e["type"] == "call_ended"]
    assert [e["by"] for e in ended] == ["agent"]
