"""``tamesu import calls`` on real files: stereo and Twilio dual-channel recordings, mono pairs,
transcripts, and every kind of bad input, each one error while the other calls are imported."""

from __future__ import annotations

import json
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest
import yaml

from tamesu.calls import CallImport, ImportOptions, find_calls, import_call
from tamesu.cli import main
from tamesu.config.loader import load_suite

from ..voice.peers import register_engines, vowel

pytestmark = pytest.mark.integration

RATE = 16000
SUITE = """\
# the team's own suite: this comment stays
suite: phone-calls
targets:
  phone:
    type: voice
    url: ws://127.0.0.1:9/voice
tests:
  - name: hand written
    target: phone
    scenario:
      script:
        - say: hello
tags: [calls]
"""


@pytest.fixture(autouse=True)
def _engines() -> None:
    register_engines()


def write_wav(path: Path, channels: list[np.ndarray], rate: int = RATE) -> Path:
    n = max(len(c) for c in channels)
    data = np.zeros((n, len(channels)), dtype="<i2")
    for i, c in enumerate(channels):
        data[: len(c), i] = c
    with wave.open(str(path), "wb") as w:
        w.setnchannels(len(channels))
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(data.tobytes())
    return path


def conversation(rate: int = RATE) -> tuple[np.ndarray, np.ndarray]:
    """Agent greets 0.2-1.2 s; caller speaks 2.0-3.0 s (two bursts 0.3 s apart: one turn);
    agent answers 4.0-5.0 s; caller speaks again 6.0-6.8 s; agent answers 7.5-8.5 s."""
    caller = np.zeros(int(9.5 * rate), np.int16)
    agent = np.zeros_like(caller)
    for a, b in ((2.0, 2.4), (2.7, 3.0), (6.0, 6.8)):
        v = vowel(b - a, rate)
        caller[int(a * rate) : int(a * rate) + len(v)] = v
    for a, b in ((0.2, 1.2), (4.0, 5.0), (7.5, 8.5)):
        v = vowel(b - a, rate, f0=220)
        agent[int(a * rate) : int(a * rate) + len(v)] = v
    return caller, agent


def heard(text: str) -> float:
    """The seconds the test STT heard (its text is "heard 1.0 seconds")."""
    return float(text.split()[1])


def job(folder: Path, **opts: object) -> CallImport:
    return CallImport(suite_dir=folder, options=ImportOptions(target="phone", stt_engine="test-stt", **opts))  # type: ignore[arg-type]


async def test_a_stereo_call_becomes_turns_found_by_the_vad_with_clips_and_the_agents_answers(
    tmp_path: Path,
) -> None:
    caller, agent = conversation()
    (tmp_path / "in").mkdir()
    write_wav(tmp_path / "in" / "c1.wav", [caller, agent])
    [call] = find_calls([tmp_path / "in"])
    imported = await import_call(call, job(tmp_path))
    assert imported.error is None and imported.test is not None
    replay = imported.test["scenario"]["replay"]
    # the test STT hears how long each piece was: the bursts 0.3 s apart are one turn (VAD hangover aside)
    assert [heard(t["say"]) for t in replay["turns"]] == [
        pytest.approx(1.0, abs=0.2),
        pytest.approx(0.8, abs=0.2),
    ]
    assert heard(replay["opening"]) == pytest.approx(1.0, abs=0.2)
    assert [heard(t["agent"]) for t in replay["turns"]] == [pytest.approx(1.0, abs=0.2)] * 2
    clip = tmp_path / replay["turns"][0]["clip"]
    with wave.open(str(clip)) as w:
        assert w.getnchannels() == 1 and w.getnframes() / RATE == pytest.approx(1.0, abs=0.2)
    checks = imported.test["assert"]
    assert [c.get("on_turn") for c in checks if "similar_to" in c] == [2, 3]
    assert "judge" in checks[-1] and f"caller: {replay['turns'][0]['say']}" in checks[-1]["judge"]


async def test_offsets_point_into_the_original_file_on_the_callers_channel(tmp_path: Path) -> None:
    caller, agent = conversation()
    write_wav(tmp_path / "c1.wav", [agent, caller])
    [call] = find_calls([tmp_path / "c1.wav"])
    imported = await import_call(call, job(tmp_path, clips=False, caller="right"))
    assert imported.test is not None and not imported.clips
    replay = imported.test["scenario"]["replay"]
    assert (replay["recording"], replay["caller"]) == ("c1.wav", "right")
    first = replay["turns"][0]
    assert abs(first["start"] - 2.0) < 0.15 and abs(first["end"] - 3.0) < 0.4


def to_mu_law(source: Path, out: Path) -> None:
    """``source`` as Twilio stores a dual-channel recording: 8 kHz mu-law WAV (written by ffmpeg)."""
    cmd = ["ffmpeg", "-loglevel", "error", "-i", str(source), "-ar", "8000", "-acodec", "pcm_mulaw", str(out)]
    subprocess.run(cmd, check=True)


async def test_a_twilio_dual_channel_recording_in_mu_law_is_read(tmp_path: Path) -> None:
    if shutil.which("ffmpeg") is None:
        pytest.skip("needs ffmpeg (Debian: ffmpeg) to write the mu-law file")
    caller, agent = conversation()
    write_wav(tmp_path / "pcm.wav", [caller, agent])
    twilio = tmp_path / "in" / "RE0123.wav"
    twilio.parent.mkdir()
    to_mu_law(tmp_path / "pcm.wav", twilio)
    with pytest.raises(wave.Error):
        wave.open(str(twilio))  # the standard library cannot read it; PyAV does
    [call] = find_calls([twilio.parent])
    imported = await import_call(call, job(tmp_path))
    assert imported.error is None and imported.test is not None
    assert len(imported.test["scenario"]["replay"]["turns"]) == 2
    with wave.open(str(tmp_path / imported.test["scenario"]["replay"]["turns"][0]["clip"])) as w:
        assert w.getframerate() == 8000


async def test_two_mono_files_make_one_call(tmp_path: Path) -> None:
    caller, agent = conversation()
    write_wav(tmp_path / "c7.caller.wav", [caller])
    write_wav(tmp_path / "c7-agent.wav", [agent])
    [call] = find_calls([tmp_path])
    assert (call.name, call.caller, call.agent) == (
        "c7",
        tmp_path / "c7.caller.wav",
        tmp_path / "c7-agent.wav",
    )
    imported = await import_call(call, job(tmp_path))
    assert imported.test is not None and len(imported.test["scenario"]["replay"]["turns"]) == 2


async def test_a_transcript_gives_the_words_and_is_checked_against_the_audio(tmp_path: Path) -> None:
    caller, agent = conversation()
    write_wav(tmp_path / "c1.wav", [caller, agent])
    turns = [
        {"speaker": "agent", "text": "Hello, Mochi Shoes.", "start": 0.2, "end": 1.2},
        {"speaker": "caller", "text": "Where is my order?", "start": 2.0, "end": 3.0},
        {"speaker": "agent", "text": "Which order number?", "start": 4.0, "end": 5.0},
        {"speaker": "caller", "text": "ORD-1001", "start": 6.0, "end": 6.8},
    ]
    (tmp_path / "c1.json").write_text(json.dumps({"turns": turns}))
    [call] = find_calls([tmp_path])
    imported = await import_call(call, job(tmp_path))
    assert imported.test is not None
    replay = imported.test["scenario"]["replay"]
    assert replay["opening"] == "Hello, Mochi Shoes."
    assert [(t["say"], t.get("agent")) for t in replay["turns"]] == [
        ("Where is my order?", "Which order number?"),
        ("ORD-1001", None),
    ]
    turns[3] = {
        "speaker": "caller",
        "text": "ORD-1001",
        "start": 8.8,
        "end": 9.4,
    }  # silence on the caller's side
    (tmp_path / "c1.json").write_text(json.dumps({"turns": turns}))
    bad = await import_call(call, job(tmp_path))
    assert bad.test is None and bad.error is not None
    assert "does not match the audio" in bad.error and "caller turn 4" in bad.error


def test_bad_calls_are_one_error_each_and_the_others_are_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls"
    calls.mkdir()
    caller, agent = conversation()
    write_wav(calls / "good.wav", [caller, agent])
    write_wav(calls / "mono.wav", [caller])
    write_wav(calls / "slow.wav", [caller[::4], agent[::4]], rate=4000)
    (calls / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot audio at all")
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    code = main(
        ["import", "calls", str(calls), "--into", str(suite), "--target", "phone", "--stt-engine", "test-stt"]
    )
    out, err = capsys.readouterr()
    assert code == 1
    assert "added  good: 2 caller turn(s)" in out
    errors = dict(line.split(": ", 1) for line in err.splitlines() if line.startswith("error  "))
    assert set(errors) == {"error  broken", "error  mono", "error  slow"}
    assert "1 channel(s)" in errors["error  mono"]
    assert "4000 Hz is below 8000 Hz" in errors["error  slow"]
    assert "not a recording tamesu can read" in errors["error  broken"]
    text = suite.read_text()
    assert text.startswith("# the team's own suite: this comment stays\n") and "tags: [calls]" in text
    loaded = load_suite(suite)
    assert [t.name for t in loaded.suite.tests] == ["hand written", "call good"]
    assert loaded.suite.tests[1].scenario is not None and loaded.suite.tests[1].scenario.replay is not None


def test_a_suite_without_the_target_takes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    caller, agent = conversation()
    write_wav(tmp_path / "good.wav", [caller, agent])
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    code = main(["import", "calls", str(tmp_path / "good.wav"), "--into", str(suite), "--target", "desk"])
    assert code == 2
    assert "defines no target 'desk' (targets: phone)" in capsys.readouterr().err
    assert suite.read_text() == SUITE


def test_out_writes_a_new_suite_with_a_target_stub(tmp_path: Path) -> None:
    caller, agent = conversation()
    write_wav(tmp_path / "good.wav", [caller, agent])
    new = tmp_path / "replays.yaml"
    code = main(
        [
            "import",
            "calls",
            str(tmp_path / "good.wav"),
            "--out",
            str(new),
            "--target",
            "phone",
            "--stt-engine",
            "test-stt",
            "--no-judge",
        ]
    )
    assert code == 0
    data = yaml.safe_load(new.read_text())
    assert data["targets"]["phone"]["type"] == "voice" and data["models"] == {"embedder": "local/minilm"}
    assert not any("judge" in c for c in data["tests"][0]["assert"])
    assert load_suite(new).suite.tests[0].name == "call good"


def test_a_call_imported_twice_is_an_error_the_second_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    caller, agent = conversation()
    write_wav(tmp_path / "good.wav", [caller, agent])
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    args = [
        "import",
        "calls",
        str(tmp_path / "good.wav"),
        "--into",
        str(suite),
        "--target",
        "phone",
        "--stt-engine",
        "test-stt",
    ]
    assert main(args) == 0
    once = suite.read_text()
    capsys.readouterr()
    assert main(args) == 1
    assert "error  good: the suite has a test named 'call good' already" in capsys.readouterr().err
    assert suite.read_text() == once


def test_a_replay_offset_into_a_mu_law_recording_plays_at_the_calls_rate(tmp_path: Path) -> None:
    from tamesu.errors import TargetError
    from tamesu.kernel.messages import AudioClip
    from tamesu.voice.clips import clip_utterance

    if shutil.which("ffmpeg") is None:
        pytest.skip("needs ffmpeg (Debian: ffmpeg) to write the mu-law file")
    caller, agent = conversation()
    write_wav(tmp_path / "pcm.wav", [agent, caller])
    twilio = tmp_path / "RE1.wav"
    to_mu_law(tmp_path / "pcm.wav", twilio)
    spoken = clip_utterance(AudioClip(path=str(twilio), channel=1, start=2.0, end=3.0), 16000, text="hi")
    assert spoken.rate == 16000 and len(spoken.samples) == pytest.approx(16000, abs=200)
    assert spoken.spans and spoken.spans[0][0] < 0.1  # the caller's speech, from the right channel
    with pytest.raises(TargetError, match=r"the replayed caller: .* lies outside the recording"):
        clip_utterance(AudioClip(path=str(twilio), channel=1, start=20.0, end=21.0), 16000)
