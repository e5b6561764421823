"""One call's audio settings, read once from the target, the test and its persona.

Every audio target (voice, twilio; later pipecat, realtime, livekit, sip) hands its wire format to
``VoiceSettings.build`` and gets back everything the call pipeline needs: rates, idle and turn
timeouts, where the agent's words come from, the caller's voice and habits, and the seed that makes
the habits replay exactly. ``check_voice_test`` is the validate-time check of the same choices.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tamesu.durations import parse_duration
from tamesu.environment.audio_checks import check_voice_test, is_noise_preset, stt_problem

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext

__all__ = [
    "DEFAULT_IDLE",
    "TranscriptSource",
    "VoiceSettings",
    "check_voice_test",
    "stt_problem",
]

DEFAULT_IDLE = 2.0

TranscriptSource = Literal["auto", "agent", "stt"]


@dataclass(frozen=True)
class VoiceSettings:
    """What one call needs to know; built by ``build`` and never changed during the call."""

    encoding: str = "pcm16"
    rate: int = 16000
    idle: float = DEFAULT_IDLE
    turn_timeout: float = 60.0
    transcript_source: TranscriptSource = "auto"
    voice: str | None = None
    language: str | None = None
    tts_engine: str | None = None
    """Forces a TTS engine by name; the persona voice picks one otherwise."""
    stt_engine: str | None = None
    interrupt_probability: float = 0.0
    silence_after_turn_ms: tuple[int, int] | None = None
    background_noise: str | None = None
    noise_snr_db: float = 20.0
    line_quality: str | None = None
    seed: int = 0
    detect_dtmf: bool = False
    """Listen for keypad tones in the agent's audio (on when a test asserts dtmf_received)."""
    greeting_wait: float = DEFAULT_IDLE + 1.0
    """How long an agent that says nothing after the call connects is given to greet (idle + 1 s)."""
    recording_dir: Path | None = None

    @classmethod
    def build(
        cls, config: Any, ctx: TargetContext, *, encoding: str, rate: int, **overrides: Any
    ) -> VoiceSettings:
        """Settings of one call from the target's ``config``, the run's context and overrides."""
        persona = getattr(ctx.test, "persona", None)
        behaviors = getattr(persona, "behaviors", None)
        idle = parse_duration(config.idle) if getattr(config, "idle", None) else DEFAULT_IDLE
        language = ctx.language or getattr(persona, "language", None)
        seed = ctx.seed if ctx.seed is not None else zlib.crc32((ctx.run_id or ctx.session).encode())
        noise = getattr(behaviors, "background_noise", None)
        if noise and not is_noise_preset(noise):
            noise = str(Path(noise) if Path(noise).is_absolute() else Path(ctx.suite_dir) / noise)
        silence = getattr(behaviors, "silence_after_turn_ms", None)
        values: dict[str, Any] = {
            "encoding": encoding,
            "rate": rate,
            "idle": idle,
            "turn_timeout": ctx.turn_timeout,
            "transcript_source": getattr(config, "transcript_source", None) or "auto",
            "voice": getattr(persona, "voice", None),
            "language": language,
            "tts_engine": ctx.tts_engine,
            "stt_engine": ctx.stt_engine,
            "interrupt_probability": float(getattr(behaviors, "interrupt_probability", None) or 0.0),
            "silence_after_turn_ms": (int(silence[0]), int(silence[1])) if silence else None,
            "background_noise": noise,
            "noise_snr_db": float(getattr(behaviors, "background_noise_snr_db", None) or 20.0),
            "line_quality": getattr(behaviors, "line_quality", None),
            "seed": int(seed),
            "detect_dtmf": ctx.detect_dtmf,
            "greeting_wait": idle + 1.0,
            "recording_dir": ctx.output_dir / "recordings" if ctx.output_dir else None,
        }
        values.update(overrides)
        return cls(**values)

    @property
    def frame(self) -> int:
        """Samples per 20 ms frame at the wire's rate."""
        return self.rate // 50

    @property
    def wants_stt(self) -> bool:
        return self.transcript_source != "agent"
