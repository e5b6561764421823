"""End to end: the quickstart's phone test through ``tamesu run``, against the voice demo agent,
with the real Piper voice and Whisper on both sides of the call."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tamesu.voice.recording import read_recording

from ..stored import stored_transcripts

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _speech_engines_installed() -> bool:
    from tamesu.audio.engines import available

    engines = available()
    return bool(engines["tts"]["piper"]["installed"] and engines["stt"]["whisper"]["installed"])


@pytest.mark.skipif(not _speech_engines_installed(), reason="needs the voice extra (Piper and Whisper)")
def test_the_quickstart_phone_test_passes(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHON": sys.executable, "NO_COLOR": "1"}
    proc = subprocess.run(
        [
            "bash",
            str(ROOT / "examples" / "quickstart" / "run.sh"),
            "--filter",
            "returns policy on the phone",
            "--output",
            str(tmp_path / "runs"),
            "--json",
            str(report),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.is_symlink()]
    [transcript] = stored_transcripts(run_dir)
    turns = transcript["turns"]
    assert [t["role"] for t in turns][-2:] == ["user", "agent"]  # the greeting (one turn or more) came first
    answer = turns[-1]
    assert answer["text"].strip()  # the suite's own asserts grade the words
    assert answer["first_audio_at"] > answer["sent_at"]
    assert {a["channel"] for a in answer["audio"]} == {"caller", "agent"}
    assert transcript["metrics"]["turn_latency_ms_p50"] > 0
    call = next(e for e in transcript["events"] if e["type"] == "voice_call")
    rate, caller, heard = read_recording(run_dir / call["recording"])
    assert rate == 16000 and len(caller) / rate > 5
    assert abs(caller).max() > 1000 and abs(heard).max() > 1000
