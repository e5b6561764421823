"""A replayed run in the HTML report: the recorded call and the new one side by side."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from tamesu.config import Replay
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.reports.html_replay import replay_block
from tamesu.users.replay_user import replay_result

from .builders import run_result

pytestmark = pytest.mark.unit


def test_a_replayed_run_shows_the_recorded_and_the_new_agent_side_by_side(tmp_path: Path) -> None:
    recording = tmp_path / "call.wav"
    with wave.open(str(recording), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 1600)
    replay = Replay.model_validate(
        {"recording": "call.wav", "opening": "Hello, Mochi Shoes.",
         "turns": [{"say": "Where is ORD-1?", "start": 0.0, "end": 0.1, "agent": "It shipped."},
                   {"say": "<b>bye</b>", "start": 0.1, "end": 0.2, "agent": "Goodbye"}]}
    )  # fmt: skip
    t = Transcript(turns=[Turn(role="agent", text="Hi, Mochi Shoes.", index=1),
                          Turn(role="user", text="Where is ORD-1?", index=1),
                          Turn(role="agent", text="Out for delivery.", index=2)])  # fmt: skip
    t.end_reason = "diverged"
    r = run_result("call", "failed", assertions=[replay_result(replay, t, tmp_path)])
    page = replay_block(r, t, max_audio_bytes=10**6)
    assert "<tr><td>greeting</td><td></td><td>Hello, Mochi Shoes.</td><td>Hi, Mochi Shoes.</td></tr>" in page
    assert "<tr><td>1</td><td>Where is ORD-1?</td><td>It shipped.</td><td>Out for delivery.</td></tr>" in page
    assert "<td>&lt;b&gt;bye&lt;/b&gt;</td><td>Goodbye</td><td><em>not reached</em></td>" in page
    assert page.count('src="data:audio/wav;base64,') == 1
    (tmp_path / "call.wav").write_bytes(b"not a wav at all")
    assert "is not a WAV file" in replay_block(r, t, max_audio_bytes=10**6)
    assert replay_block(run_result("plain", "passed"), t, max_audio_bytes=10**6) == ""
