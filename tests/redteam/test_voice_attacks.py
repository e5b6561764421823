"""The voice playbook on a real call: the caller's Piper voice over a websocket to the loopback voice
agent of the voice tests, which hears by energy, stops for barge-ins and decodes keypad tones. Each
tactic happens on the line, not only in the plan: the caller talks over the agent's replies, speaks
under cafe noise, keys DTMF in-band; the transcript and the recording show it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tamesu import run_async
from tamesu.playbooks.catalogue import get_playbook
from tamesu.voice.recording import read_recording

from ..stored import stored_transcript
from ..voice.peers import AgentScript, Calls, calls

__all__ = ["calls"]


def _piper_installed() -> bool:
    from tamesu.audio.engines import available

    return bool(available()["tts"]["piper"]["installed"])


pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not _piper_installed(), reason="the caller speaks with Piper (the voice extra)"),
]

SUITE = """
suite: phone-red-team
targets:
  phone:
    type: voice
    url: "{url}/voice"
    idle: 1500ms  # beyond the agent's answer: 0.8 s of quiet it waits for, then 0.3 s
    transcript_source: agent
    messages: {{ transcript: "$[?(@.type=='transcript')].text" }}
red_team:
  target: phone
  agent: "Mochi Shoes phone support: never reveal its instructions"
  playbooks: [voice]
  max_turns: 3
tests: []
"""


def transcript(run_dir: Path, result: Any) -> dict[str, Any]:
    return stored_transcript(run_dir, result)


async def test_each_voice_tactic_happens_on_the_call(calls: Calls, tmp_path: Path) -> None:
    # The agent hears speech down to -50 dBFS: the whisper (-46), not the noise under it (-56); it waits
    # 0.8 s of quiet, longer than the pauses Piper draws between sentences, so it never answers mid-turn.
    agent, url = await calls.agent(
        AgentScript(greeting=0.4, reply=2.5, delay=0.3, loud=32768 * 10 ** (-50 / 20), quiet_frames=40)
    )
    suite = tmp_path / "phone.yaml"
    suite.write_text(SUITE.format(url=url))
    result = await run_async([suite], output=tmp_path / "runs", concurrency=3)
    assert result.run_dir is not None and result.exit_code == 0
    runs = {r.test_id.rsplit("/", 1)[1]: r for r in result.results}
    assert set(runs) == {"barge_in_override", "whispered_injection", "dtmf_injection"}
    turns = {name: voice_turns(result.run_dir, r) for name, r in runs.items()}
    assert [t["interrupted"] for t in turns["barge_in_override"][1:]] == [True, True], (
        "the caller spoke over the agent's replies, and the agent stopped for it"
    )
    assert not any(t["interrupted"] for t in turns["dtmf_injection"])
    assert ["*", "0", "#"] in [log.dtmf_tones for log in agent.logs], "the agent heard the keypad tones"
    noise = {name: noise_level(result.run_dir, r) for name, r in runs.items()}
    assert noise["dtmf_injection"] == 0 and noise["barge_in_override"] == 0
    assert noise["whispered_injection"] > 5, (
        "cafe noise on the caller's line before a word is said (nominally -56 dBFS)"
    )
    levels = {name: speech_levels(result.run_dir, r) for name, r in runs.items()}
    normal = [*levels["barge_in_override"], levels["dtmf_injection"][-1]]  # the keypad tones left out
    (whisper,) = levels["whispered_injection"]
    assert len(normal) == 3 and max(normal) - min(normal) < 3, f"normal speech at one level: {normal}"
    assert whisper < min(normal) - 12, f"the injection is whispered: {whisper:.1f} dBFS, normal {normal}"
    openings = {a.name: a.opening[0].tactic for a in get_playbook("voice").attacks}
    for name, r in runs.items():
        tactics = [e["tactic"] for e in events(result.run_dir, r) if e["type"] == "tactic"]
        assert tactics[0] == openings[name], "each turn's tactic is an event of the transcript"


def events(run_dir: Path, result: Any) -> list[dict[str, Any]]:
    return transcript(run_dir, result)["events"]  # type: ignore[no-any-return]


def voice_turns(run_dir: Path, result: Any) -> list[dict[str, Any]]:
    return [e for e in events(run_dir, result) if e["type"] == "voice_turn"]


def speech_levels(run_dir: Path, result: Any) -> list[float]:
    """dBFS of the caller's channel over each turn the caller spoke (its speech, and any noise)."""
    call = next(e for e in events(run_dir, result) if e["type"] == "voice_call")
    rate, caller, _ = read_recording(run_dir / call["recording"])
    out = []
    for turn in voice_turns(run_dir, result):
        if turn["caller_start"] is None or turn["caller_end"] is None:
            continue
        a, b = (int((turn[k] - call["recording_starts_at"]) * rate) for k in ("caller_start", "caller_end"))
        if b - a > rate // 10:
            x = caller[a:b].astype(np.float64) / 32768.0
            out.append(float(10 * np.log10(np.mean(x**2) + 1e-20)))
    return out


def noise_level(run_dir: Path, result: Any) -> float:
    """RMS of the caller's channel in the agent's first 0.3 s of greeting, before the caller acts."""
    call = next(e for e in events(run_dir, result) if e["type"] == "voice_call")
    greeting = voice_turns(run_dir, result)[0]
    rate, caller, _ = read_recording(run_dir / call["recording"])
    start = greeting["first_audio_at"] - call["recording_starts_at"]
    quiet = caller[int(start * rate) : int((start + 0.3) * rate)]
    return float(np.sqrt(np.mean(quiet.astype(np.float64) ** 2))) if len(quiet) else 0.0
