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

from tamesu.config.kinds import target_kinds
from tamesu.durations import parse_duration

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
        if noise and not _is_preset(noise):
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


def _is_preset(name: str) -> bool:
    from tamesu.audio.noise import noise_presets

    return name in noise_presets


def check_voice_test(
    test: Any, target: Any, *, language: str | None = None, suite_dir: Path | str = "."
) -> list[str]:
    """Why an audio test is wrong as written (empty when it is right); loads no model.

    The loader calls it for each expanded test whose target carries audio (a type registered with
    ``audio="always"``, or ``mode: audio`` on the target or the test), once per language. It checks that the
    persona's voice resolves, that the background noise is a preset or an existing file, and that
    ``mode: text`` is not asked of a target that only carries audio. Whether this machine's STT
    engine hears the language is a question about the machine, not the suite: ``stt_problem``.
    """
    problems: list[str] = []
    kind = str(getattr(target, "type", ""))
    persona = getattr(test, "persona", None)
    lang = language or getattr(persona, "language", None)
    if (
        kind in target_kinds
        and target_kinds.get(kind).audio == "always"
        and getattr(test, "mode", None) == "text"
    ):
        problems.append(f"mode: text does not apply to a {kind} target, which carries audio only")
    if kind == "twilio" and getattr(target, "transcript_source", "auto") == "agent":
        problems.append(
            "transcript_source: agent on a twilio target: Media Streams carry no transcript (use auto or stt)"
        )
    if persona is not None and (persona.voice or lang):
        from tamesu.audio.voices import check_voice

        why = check_voice(persona.voice, lang)
        if why:
            problems.append(why)
    noise = getattr(getattr(persona, "behaviors", None), "background_noise", None)
    if noise and not _is_preset(noise):
        path = Path(noise) if Path(noise).is_absolute() else Path(suite_dir) / noise
        if not path.is_file():
            from tamesu.audio.noise import noise_presets

            problems.append(
                f"background_noise {noise!r} is neither a preset ({', '.join(noise_presets)}) nor a file"
            )
    return problems


def stt_problem(target: Any, language: str | None) -> str | None:
    """Why the STT engine installed here cannot hear ``language`` on calls to ``target`` (None: it
    can, or the agent's own transcript is used); loads no model."""
    source = (
        target.get("transcript_source")
        if isinstance(target, dict)
        else getattr(target, "transcript_source", None)
    )
    if (source or "auto") == "agent" or not language:
        return None
    from tamesu.audio.engines import check_language

    return check_language(None, language)
