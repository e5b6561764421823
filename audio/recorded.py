"""Recorded calls read from disk: every channel as int16 at the file's own rate.

A PCM16 WAV (what tamesu records) is read with the standard library; anything else a call
recorder writes (a Twilio dual-channel recording in mu-law, an MP3 export) is decoded by PyAV,
the voice extra's FFmpeg binding. Either way a file that cannot be read is one ``RecordingError``
naming the file, never a half-read signal.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tamesu.errors import MissingExtraError, TamesuError

__all__ = ["MAX_RECORDING_S", "RecordedAudio", "RecordingError", "read_audio", "read_span"]

MAX_RECORDING_S = 4 * 3600
"""The longest recording read (a call longer than four hours is not a conversation to replay)."""
_MIN_RATE = 8000


class RecordingError(TamesuError):
    """A recording that cannot be used: unreadable, empty, too long, or at an unusable rate."""


@dataclass(frozen=True)
class RecordedAudio:
    """int16 samples, one row per channel, at ``rate``."""

    channels: np.ndarray
    rate: int

    @property
    def duration(self) -> float:
        return self.channels.shape[1] / self.rate if self.channels.size else 0.0


def read_audio(path: Path | str) -> RecordedAudio:
    """Every channel of a recording (PCM16 WAV directly, other formats through PyAV)."""
    path = Path(path)
    if not path.is_file():
        raise RecordingError(f"{path}: no such file")
    try:
        audio = _read_wav(path)
    except (wave.Error, EOFError):
        audio = _read_av(path)
    if audio.rate < _MIN_RATE:
        raise RecordingError(f"{path}: {audio.rate} Hz is below {_MIN_RATE} Hz, too low for speech")
    if audio.channels.shape[1] == 0:
        raise RecordingError(f"{path}: the recording holds no audio")
    if audio.duration > MAX_RECORDING_S:
        raise RecordingError(f"{path}: longer than {MAX_RECORDING_S // 3600} hours")
    return audio


def read_span(
    path: Path | str, *, channel: int | None, start: float | None = None, end: float | None = None
) -> tuple[np.ndarray, int]:
    """(samples, rate) of one channel (None: a mono file) from ``start`` to ``end`` seconds."""
    audio = read_audio(path)
    count = audio.channels.shape[0]
    if channel is None and count != 1:
        raise RecordingError(f"{path}: {count} channels, and no channel was named")
    row = 0 if channel is None else channel
    if row >= count:
        raise RecordingError(f"{path}: no channel {row + 1} (the file has {count})")
    a = 0 if start is None else round(start * audio.rate)
    b = audio.channels.shape[1] if end is None else round(end * audio.rate)
    if a >= audio.channels.shape[1] or b <= a:
        raise RecordingError(f"{path}: {start}-{end} s lies outside the recording ({audio.duration:.2f} s)")
    return audio.channels[row, a:b], audio.rate


def _read_wav(path: Path) -> RecordedAudio:
    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise wave.Error("not 16-bit PCM")
        n, count, rate = w.getnframes(), w.getnchannels(), w.getframerate()
        if n > MAX_RECORDING_S * rate:
            raise RecordingError(f"{path}: longer than {MAX_RECORDING_S // 3600} hours")
        data = np.frombuffer(w.readframes(n), dtype="<i2")
    usable = len(data) - len(data) % count
    return RecordedAudio(data[:usable].reshape(-1, count).T.astype(np.int16), rate)


def _av() -> Any:
    try:
        import av
    except ImportError as exc:
        raise MissingExtraError("PyAV (recordings other than PCM16 WAV)", extra="voice") from exc
    return av


def _read_av(path: Path) -> RecordedAudio:
    av = _av()
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise RecordingError(f"{path}: no audio stream")
            stream = container.streams.audio[0]
            rate = int(stream.rate or 0)
            count = int(stream.channels or 0)
            if rate <= 0 or count <= 0:
                raise RecordingError(f"{path}: no sample rate or channel count")
            resampler = av.AudioResampler(format="s16p", layout=stream.layout.name, rate=rate)
            parts: list[np.ndarray] = []
            total = 0
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    block = out.to_ndarray().reshape(count, -1)
                    total += block.shape[1]
                    if total > MAX_RECORDING_S * rate:
                        raise RecordingError(f"{path}: longer than {MAX_RECORDING_S // 3600} hours")
                    parts.append(block.astype(np.int16))
    except RecordingError:
        raise
    except Exception as exc:
        raise RecordingError(
            f"{path}: not a recording tamesu can read ({type(exc).__name__}: {exc})"
        ) from None
    channels = np.concatenate(parts, axis=1) if parts else np.zeros((count, 0), np.int16)
    return RecordedAudio(channels, rate)
