"""One recorded call -> one replay test: the caller's turns and the recorded agent's answers.

Without a transcript, the caller's turns are what the VAD finds on its channel, merged across short
pauses, and both sides are transcribed offline by the run's speech pool (any registered STT engine).
With one, its turns are used, checked against the audio: a caller turn where the caller's channel
holds no speech means the transcript belongs to another recording. Each caller turn keeps its audio,
as a clip next to the suite or as an offset into the original file; the agent's answers become the
reference the new agent is compared with (``similar_to`` per turn, and a judge).
"""

from __future__ import annotations

import os
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from tamesu.calls.sources import CallFiles, SpokenTurn, read_transcript

if TYPE_CHECKING:
    from tamesu.audio.recorded import RecordedAudio
    from tamesu.speech_pool import SpeechPool

__all__ = ["AUDIO_TARGETS", "CallImport", "ImportOptions", "ImportedCall", "import_call", "test_name"]

AUDIO_TARGETS = frozenset({"voice", "twilio", "sip", "livekit", "pipecat", "realtime"})
"""Target types a replay plays as audio (the agent greets first there, as on the recorded call)."""
_MAX_RATE = 192000
_MIN_SPEECH_SHARE = 0.3
"""The share of a transcript's caller turn the VAD must hear as speech on the caller's channel."""


@dataclass(frozen=True)
class ImportOptions:
    """How calls are read and what the tests they become check."""

    target: str
    target_type: str = "voice"
    caller: Literal["left", "right"] = "left"
    clips: bool = True
    """Write each caller turn as a WAV clip (False: offsets into the original recording)."""
    pause: float = 1.0
    """Caller speech closer than this many seconds is one turn."""
    language: str | None = None
    stt_engine: str | None = None
    similar_min: float = 0.8
    judge: bool = True


@dataclass
class ImportedCall:
    """A call made a test, or why it could not be."""

    name: str
    test: dict[str, Any] | None = None
    error: str | None = None
    clips: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class CallImport:
    """Where the imported tests go: the suite's folder (clips and recordings are relative to it)."""

    suite_dir: Path
    options: ImportOptions
    pool: SpeechPool | None = None


def test_name(call: CallFiles) -> str:
    """The name of the test a call becomes."""
    return f"call {call.name}"


async def import_call(call: CallFiles, job: CallImport) -> ImportedCall:
    """``call`` as a replay test; every problem of this call is its ``error``, never an exception."""
    from tamesu.audio.recorded import RecordingError
    from tamesu.errors import TamesuError

    try:
        return await _import(call, job)
    except (RecordingError, ValueError, OSError) as exc:
        return ImportedCall(call.name, error=str(exc))
    except TamesuError as exc:
        return ImportedCall(call.name, error=f"{call.audio}: {exc}")


async def _import(call: CallFiles, job: CallImport) -> ImportedCall:
    opts = job.options
    caller, agent, rate, recording, channel = _channels(call, opts.caller)
    spoken = read_transcript(call.transcript) if call.transcript is not None else None
    if spoken is None:
        turns, opening = await _heard_turns(caller, agent, rate, job)
    else:
        turns, opening = _transcript_turns(spoken, caller, rate, call.transcript or Path(call.name))
    if not turns:
        raise ValueError(f"{call.audio}: no caller speech found")
    out = ImportedCall(call.name)
    replay: dict[str, Any] = {}
    if opts.clips:
        whole = job.suite_dir / "calls" / _safe(call.name) / "call.wav"
        _write_clip(whole, np.stack([caller, _fit(agent, len(caller))]), rate)
        out.clips.append(whole)
        replay["recording"] = _relative(whole, job.suite_dir)
    else:
        replay["recording"] = _relative(recording, job.suite_dir)
        replay["caller"] = "left" if channel == 0 else "right"
    if opening:
        replay["opening"] = opening
    items = []
    for k, turn in enumerate(turns, start=1):
        item: dict[str, Any] = {"say": turn.say}
        if opts.clips:
            clip = job.suite_dir / "calls" / _safe(call.name) / f"turn-{k}.wav"
            _write_clip(clip, caller[round(turn.start * rate) : round(turn.end * rate)], rate)
            out.clips.append(clip)
            item["clip"] = _relative(clip, job.suite_dir)
        else:
            item["start"], item["end"] = round(turn.start, 3), round(turn.end, 3)
        if turn.agent:
            item["agent"] = turn.agent
        items.append(item)
    replay["turns"] = items
    out.test = {
        "name": test_name(call),
        "target": opts.target,
        "tags": ["replay"],
        "scenario": {"replay": replay},
        "assert": _checks(turns, opening, opts),
    }
    return out


@dataclass(frozen=True)
class _Turn:
    say: str
    start: float
    end: float
    agent: str = ""


def _channels(call: CallFiles, caller_side: str) -> tuple[np.ndarray, np.ndarray, int, Path, int]:
    """(caller, agent, rate, the file replay offsets point into, the caller's channel in it)."""
    from tamesu.audio.recorded import RecordingError, read_audio
    from tamesu.audio.resample import resample

    if call.stereo is not None:
        audio = read_audio(call.stereo)
        _usable_rate(audio, call.stereo)
        if audio.channels.shape[0] != 2:
            raise RecordingError(
                f"{call.stereo}: {audio.channels.shape[0]} channel(s); a call needs the caller and the agent "
                "apart (a stereo file, or NAME.caller.wav with NAME.agent.wav)"
            )
        row = 0 if caller_side == "left" else 1
        return audio.channels[row], audio.channels[1 - row], audio.rate, call.stereo, row
    if call.caller is None or call.agent is None:
        missing = "caller" if call.caller is None else "agent"
        raise RecordingError(f"{call.audio}: the {missing} side of call {call.name} is missing")
    sides = []
    for path in (call.caller, call.agent):
        audio = read_audio(path)
        _usable_rate(audio, path)
        if audio.channels.shape[0] != 1:
            raise RecordingError(
                f"{path}: a side of a call is one mono file, not {audio.channels.shape[0]} channels"
            )
        sides.append(audio)
    them, us = sides
    agent = us.channels[0] if us.rate == them.rate else resample(us.channels[0], us.rate, them.rate)
    return them.channels[0], agent, them.rate, call.caller, 0


def _usable_rate(audio: RecordedAudio, path: Path) -> None:
    from tamesu.audio.recorded import RecordingError

    if audio.rate > _MAX_RATE:
        raise RecordingError(f"{path}: {audio.rate} Hz is above {_MAX_RATE} Hz")


async def _heard_turns(
    caller: np.ndarray, agent: np.ndarray, rate: int, job: CallImport
) -> tuple[list[_Turn], str]:
    from tamesu.audio.timing import merge
    from tamesu.audio.vad import speech_segments

    segments = merge(speech_segments(caller, rate), gap=job.options.pause)
    bounds = [(s.start, s.end) for s in segments if s.duration >= 0.2]
    said = [await _words(caller, rate, a, b, job) for a, b in bounds]
    agent_spans = speech_segments(agent, rate)
    replies = []
    for k, (_, end) in enumerate(bounds):
        until = bounds[k + 1][0] if k + 1 < len(bounds) else len(agent) / rate
        replies.append(await _reply(agent, rate, agent_spans, end, until, job))
    opening = await _reply(agent, rate, agent_spans, 0.0, bounds[0][0], job) if bounds else ""
    turns = [
        _Turn(text, a, b, reply) for (a, b), text, reply in zip(bounds, said, replies, strict=True) if text
    ]
    return turns, opening


async def _reply(
    agent: np.ndarray, rate: int, spans: list[Any], start: float, until: float, job: CallImport
) -> str:
    inside = [s for s in spans if s.end > start and s.start < until]
    if not inside:
        return ""
    return await _words(agent, rate, max(start, inside[0].start), min(until, inside[-1].end), job)


async def _words(samples: np.ndarray, rate: int, start: float, end: float, job: CallImport) -> str:
    from tamesu.voice.speech import transcribe

    piece = samples[round(start * rate) : round(end * rate)]
    heard = await transcribe(
        piece, rate, pool=job.pool, language=job.options.language, engine=job.options.stt_engine
    )
    return " ".join(heard.text.split())


def _transcript_turns(
    spoken: list[SpokenTurn], caller: np.ndarray, rate: int, path: Path
) -> tuple[list[_Turn], str]:
    """The transcript's caller turns with the agent's answers, checked against the caller's audio."""
    from tamesu.audio.vad import speech_segments

    duration = len(caller) / rate
    heard = speech_segments(caller, rate)
    turns: list[_Turn] = []
    opening: list[str] = []
    replies: list[str] = []
    for i, t in enumerate(spoken, start=1):
        if t.speaker == "agent":
            (replies if turns else opening).append(t.text)
            continue
        if t.start is None or t.end is None or t.end <= t.start:
            raise ValueError(
                f"{path}: caller turn {i} needs a start before its end (seconds into the recording)"
            )
        if t.end > duration + 0.5:
            raise ValueError(
                f"{path}: caller turn {i} ends at {t.end:.2f} s, past the recording's {duration:.2f} s"
            )
        covered = sum(max(0.0, min(s.end, t.end) - max(s.start, t.start)) for s in heard)
        if covered < _MIN_SPEECH_SHARE * (t.end - t.start):
            raise ValueError(
                f"{path}: caller turn {i} ({t.start:.2f}-{t.end:.2f} s) has no caller speech there: "
                "the transcript does not match the audio"
            )
        if turns:
            turns[-1] = _Turn(turns[-1].say, turns[-1].start, turns[-1].end, " ".join(replies))
        replies = []
        turns.append(_Turn(" ".join(t.text.split()), t.start, min(t.end, duration)))
    if turns:
        turns[-1] = _Turn(turns[-1].say, turns[-1].start, turns[-1].end, " ".join(replies))
    return turns, " ".join(opening)


def _checks(turns: list[_Turn], opening: str, opts: ImportOptions) -> list[dict[str, Any]]:
    """A ``similar_to`` per recorded answer (on the agent turn that answers it) and a judge."""
    first = 2 if opening and opts.target_type in AUDIO_TARGETS else 1
    checks: list[dict[str, Any]] = [
        {"similar_to": {"text": t.agent, "min": opts.similar_min}, "on_turn": first + k}
        for k, t in enumerate(turns)
        if t.agent
    ]
    if opts.judge:
        lines = [f"agent: {opening}"] if opening else []
        for t in turns:
            lines.append(f"caller: {t.say}")
            if t.agent:
                lines.append(f"agent: {t.agent}")
        checks.append(
            {
                "judge": "The agent answers the caller as the recorded agent did, or better (as correct, "
                "as complete, as polite). The recorded call:\n" + "\n".join(lines)
            }
        )
    return checks


def _write_clip(path: Path, samples: np.ndarray, rate: int) -> None:
    """A PCM16 WAV: mono samples, or rows of channels (the whole call: caller left, agent right)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = np.atleast_2d(np.asarray(samples, dtype="<i2"))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(rows.shape[0])
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.ascontiguousarray(rows.T).tobytes())


def _fit(samples: np.ndarray, n: int) -> np.ndarray:
    """``samples`` cut or padded with silence to ``n`` (two mono sides of a call rarely end together)."""
    return samples[:n] if len(samples) >= n else np.pad(samples, (0, n - len(samples)))


def _relative(path: Path, folder: Path) -> str:
    return Path(os.path.relpath(path.resolve(), folder.resolve())).as_posix()


def _safe(name: str) -> str:
    """A call's name as one folder name (no separators, no leading dots)."""
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".")
    return cleaned or "call"
