"""End to end: calls recorded from runs of the voice demo agent (and the same call as a Twilio-style
dual-channel mu-law file) import into a suite that passes against the same agent and fails against
a changed one (a 60-day returns window), with Piper and Whisper on both sides of the call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tamesu.calls import read_transcript

from ..example_agents import example_agent
from ..stored import stored_transcripts

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
SUITE = """\
suite: phone-calls
models: { embedder: local/minilm }
targets:
  phone:
    type: voice
    url: "${VOICE_AGENT_URL}/voice"
    idle: 1s
    transcript_source: agent
    messages:
      transcript: "$[?(@.type=='transcript')].text"
      tool_calls: "$[?(@.type=='tool_calls')].calls[*]"
      caller_transcript: "$[?(@.type=='user_transcript')].text"
      done: "$[?(@.type=='end')].type"
      close: { type: hangup }
tests:
  - name: returns
    target: phone
    tags: [recorded]
    persona: { voice: en-US-male }
    scenario:
      script:
        - say: "Hi! Can I return shoes I bought 40 days ago?"
        - say: "Okay, thanks. Bye!"
"""


def _speech_engines_installed() -> bool:
    from tamesu.audio.engines import available

    engines = available()
    return bool(engines["tts"]["piper"]["installed"] and engines["stt"]["whisper"]["installed"])


def _agent(*extra: str) -> Iterator[str]:
    yield from example_agent("voice_agent", *extra)


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    yield from _agent()


@pytest.fixture(scope="module")
def changed_agent() -> Iterator[str]:
    yield from _agent("--return-days", "60")


@pytest.fixture(scope="module")
def mishearing_agent() -> Iterator[str]:
    yield from _agent("--mishear", "40=14")


def tamesu(*args: str, url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VOICE_AGENT_URL": url, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "tamesu", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=400
    )


@pytest.mark.skipif(not _speech_engines_installed(), reason="needs the voice extra (Piper and Whisper)")
def test_recorded_calls_pass_against_the_same_agent_and_fail_against_a_changed_one(
    tmp_path: Path, agent: str, changed_agent: str
) -> None:
    (tmp_path / "suite.yaml").write_text(SUITE)
    recorded = tamesu("run", "suite.yaml", "--output", "runs", url=agent, cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-3000:]
    run_dir = (tmp_path / "runs" / "latest").resolve()
    [transcript] = stored_transcripts(run_dir)
    call = next(e for e in transcript["events"] if e["type"] == "voice_call")
    calls = tmp_path / "recorded"
    calls.mkdir()
    shutil.copy(run_dir / call["recording"], calls / "c1.wav")
    (calls / "c1.json").write_text(json.dumps(transcript))
    imported = tamesu("import", "calls", "recorded", "--into", "suite.yaml", "--target", "phone", "--no-judge",
                      url=agent, cwd=tmp_path)  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert "added  c1: 2 caller turn(s)" in imported.stdout
    replays = ["call c1"]

    if shutil.which("ffmpeg") is not None:
        # The same call as Twilio's dual-channel recording: 8 kHz mu-law, the agent's leg on the left,
        # with speaker turns as a transcription service gives them.
        twilio = tmp_path / "twilio"
        twilio.mkdir()
        cmd = ["ffmpeg", "-loglevel", "error", "-i", str(calls / "c1.wav"), "-af", "pan=stereo|c0=c1|c1=c0",
               "-ar", "8000", "-acodec", "pcm_mulaw", str(twilio / "RE42.wav")]  # fmt: skip
        subprocess.run(cmd, check=True)
        alone = tamesu("import", "calls", "twilio", "--out", "heard.yaml", "--target", "phone", "--caller", "right",
                       "--no-judge", url=agent, cwd=tmp_path)  # fmt: skip
        assert alone.returncode == 0, alone.stderr  # without a transcript: the VAD's turns, Whisper's words
        turns = yaml.safe_load((tmp_path / "heard.yaml").read_text())["tests"][0]["scenario"]["replay"][
            "turns"
        ]
        assert len(turns) == 2 and "40 days" in turns[0]["say"].replace("forty", "40")
        spoken = [{"speaker": t.speaker, "text": t.text, "start": t.start, "end": t.end}
                  for t in read_transcript(calls / "c1.json")]  # fmt: skip
        (twilio / "RE42.json").write_text(json.dumps({"turns": spoken}))
        into = tamesu("import", "calls", "twilio", "--into", "suite.yaml", "--target", "phone", "--caller", "right",
                      "--no-judge", url=agent, cwd=tmp_path)  # fmt: skip
        assert into.returncode == 0, into.stderr
        replays.append("call RE42")

    same = tamesu("run", "suite.yaml", "--tags", "replay", "--output", "runs", "--json", "same.json",
                  url=agent, cwd=tmp_path)  # fmt: skip
    assert same.returncode == 0, same.stdout[-3000:]
    passed = sorted(t["test_id"] for t in json.loads((tmp_path / "same.json").read_text())["tests"])
    assert passed == sorted(replays)
    changed = tamesu("run", "suite.yaml", "--tags", "replay", "--output", "runs", "--json", "changed.json",
                     url=changed_agent, cwd=tmp_path)  # fmt: skip
    assert changed.returncode == 1, changed.stdout[-3000:]
    for test in json.loads((tmp_path / "changed.json").read_text())["tests"]:
        [run] = test["runs"]
        failed = [a for a in run["assertions"] if not a["passed"]]
        assert [a["kind"] for a in failed] == ["similar_to"] and failed[0]["on_turn"] == 2, test["test_id"]
        assert "60 days" in failed[0]["actual"]["text"]

    page = tamesu("report", "runs/latest", "--out", "changed.html", url=agent, cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "changed.html").read_text()
    assert "<h4>Recorded and new agent</h4>" in html and "Recorded call (call.wav)" in html
    assert html.count('src="data:audio/wav;base64,') >= 2  # the recorded call and the new one


POLICY = """\
  - name: returns policy
    target: phone
    tags: [policy]
    persona: { voice: en-US-male }
    scenario:
      script:
        - say: "Hi! Can I return shoes I bought 40 days ago?"
    assert:
      - contains: "not possible"
"""


@pytest.mark.skipif(not _speech_engines_installed(), reason="needs the voice extra (Piper and Whisper)")
def test_a_call_the_agent_misheard_fails_as_heard_differently(tmp_path: Path, mishearing_agent: str) -> None:
    (tmp_path / "suite.yaml").write_text(SUITE + POLICY)
    proc = tamesu("run", "suite.yaml", "--tags", "policy", "--output", "runs", "--json", "r.json",
                  url=mishearing_agent, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["failures_by_cause"] == {"heard_differently": 1}
    [run] = report["tests"][0]["runs"]
    assert run["cause"] == "heard_differently"
