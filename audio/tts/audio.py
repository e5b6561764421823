"""``Audio``: one utterance as mono int16 samples and their rate, the currency of the speech engines.

TTS engines return it and STT engines take it, so the voice pipeline never guesses a rate. It is
immutable (the samples are read-only) because a synthesised prompt is cached and shared by every
call that says it. WAV reading tolerates the streaming headers espeak-ng and hosted APIs write
(sizes of 0 or 0xFFFFFFFF): the data chunk then runs to the end of the bytes.
"""

from __future__ import annotations

import io
import struct
import wave
from dataclasses import dataclass

import numpy as np

from ..pcm import from_bytes, to_bytes
from ..resample import resample as _resample

__all__ = ["Audio", "read_wav_bytes"]


@dataclass(frozen=True, eq=False)
class Audio:
    """Mono PCM16 samples at ``sample_rate``; ``samples`` is a read-only int16 array."""

    samples: np.ndarray
    sample_rate: int

    def __post_init__(self) -> None:
        x = np.asarray(self.samples)
        if x.ndim != 1:
            raise ValueError(f"Audio is mono: expected a 1-D array, got shape {x.shape}")
        if x.dtype != np.int16:
            raise ValueError(f"Audio samples are int16, got {x.dtype}")
        if self.sample_rate <= 0:
            raise ValueError(f"sample rate must be positive, got {self.sample_rate}")
        if x.flags.writeable:
            x = x.copy()
            x.flags.writeable = False
        object.__setattr__(self, "samples", x)

    @classmethod
    def from_float(cls, samples: np.ndarray, sample_rate: int) -> Audio:
        """Float samples (full scale 1.0), clipped to int16."""
        scaled = np.rint(np.asarray(samples, dtype=np.float32) * np.float32(32767.0))
        return cls(np.clip(scaled, -32768, 32767).astype(np.int16), sample_rate)

    @classmethod
    def from_pcm(cls, data: bytes | bytearray | memoryview, sample_rate: int) -> Audio:
        """Little-endian PCM16 mono bytes."""
        return cls(from_bytes(data), sample_rate)

    @classmethod
    def from_wav(cls, data: bytes) -> Audio:
        """A PCM16 WAV file's bytes (mono, or stereo averaged to mono)."""
        return read_wav_bytes(data)

    @classmethod
    def silence(cls, seconds: float, sample_rate: int) -> Audio:
        return cls(np.zeros(round(seconds * sample_rate), dtype=np.int16), sample_rate)

    @property
    def duration(self) -> float:
        """Seconds of audio."""
        return len(self.samples) / self.sample_rate

    @property
    def nbytes(self) -> int:
        return int(self.samples.nbytes)

    def resample(self, rate: int) -> Audio:
        """The same utterance at ``rate`` (soxr, high quality); itself when the rate already matches."""
        if rate == self.sample_rate:
            return self
        return Audio(_resample(self.samples, self.sample_rate, rate), rate)

    def to_float(self) -> np.ndarray:
        """float32 samples in [-1, 1), what STT models take."""
        return self.samples.astype(np.float32) * np.float32(1.0 / 32768.0)

    def to_bytes(self) -> bytes:
        """Little-endian PCM16 bytes (what ``AudioFrame.pcm`` carries)."""
        return to_bytes(self.samples)

    def to_wav(self) -> bytes:
        """A complete WAV file (for uploads, recordings and the disk cache)."""
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(self.sample_rate)
            w.writeframes(self.to_bytes())
        return buf.getvalue()

    def __len__(self) -> int:
        return len(self.samples)

    def __repr__(self) -> str:
        return f"Audio({self.duration:.2f}s at {self.sample_rate} Hz)"


def read_wav_bytes(data: bytes) -> Audio:
    """Parse RIFF/WAVE PCM16 bytes, trusting the data chunk's size only when it fits."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("not a WAV file (no RIFF/WAVE header)")
    pos, rate, channels, bits, fmt = 12, 0, 0, 0, 0
    while pos + 8 <= len(data):
        chunk, size = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        body = pos + 8
        if chunk == b"fmt ":
            fmt, channels, rate = struct.unpack_from("<HHI", data, body)
            bits = struct.unpack_from("<H", data, body + 14)[0]
        elif chunk == b"data":
            if not rate:
                raise ValueError("WAV data chunk before its fmt chunk")
            if fmt not in (1, 0xFFFE) or bits != 16:
                raise ValueError(f"WAV is not PCM16 (format {fmt}, {bits} bits)")
            end = body + size if 0 < size <= len(data) - body else len(data)
            raw = data[body:end]
            raw = raw[: len(raw) - len(raw) % (2 * channels)]
            samples = from_bytes(raw)
            if channels > 1:
                samples = samples.reshape(-1, channels).mean(axis=1).round().astype(np.int16)
            return Audio(samples, rate)
        pos = body + size + (size & 1)
    raise ValueError("WAV file has no data chunk")
