"""PCM16 frames as numpy arrays: conversions, 20 ms framing and levels.

Audio travels between actors as little-endian PCM16 bytes (``AudioFrame.pcm``); every signal
module here works on numpy arrays, so these helpers are the one place bytes become samples.
Float audio is float32 in [-1, 1) with full scale 32768.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "FRAME_MS",
    "FULL_SCALE",
    "Framer",
    "active_mask",
    "dbfs",
    "float_to_int16",
    "frame_bytes",
    "frame_samples",
    "from_bytes",
    "int16_to_float",
    "split_frames",
    "to_bytes",
]

FRAME_MS = 20
"""The frame length every streaming stage works in."""

FULL_SCALE = 32768.0

_LE16 = np.dtype("<i2")


def frame_samples(rate: int, ms: int = FRAME_MS) -> int:
    """Samples in one frame; the rate must give a whole number of samples per frame."""
    n, rem = divmod(rate * ms, 1000)
    if rem or n <= 0:
        raise ValueError(f"{ms} ms at {rate} Hz is not a whole number of samples")
    return n


def frame_bytes(rate: int, ms: int = FRAME_MS) -> int:
    """Bytes of one PCM16 mono frame."""
    return 2 * frame_samples(rate, ms)


def from_bytes(data: bytes | bytearray | memoryview) -> np.ndarray:
    """Little-endian PCM16 bytes as an int16 array (a copy, so it is writable and native-endian)."""
    if len(data) % 2:
        raise ValueError(f"PCM16 data has an odd length ({len(data)} bytes)")
    return np.frombuffer(data, dtype=_LE16).astype(np.int16)


def to_bytes(samples: np.ndarray) -> bytes:
    """int16 (or float, converted with clipping) samples as little-endian PCM16 bytes."""
    if samples.dtype != np.int16:
        samples = float_to_int16(samples)
    return samples.astype(_LE16, copy=False).tobytes()


def int16_to_float(samples: np.ndarray) -> np.ndarray:
    """int16 samples as float32 in [-1, 1)."""
    return samples.astype(np.float32) * np.float32(1.0 / FULL_SCALE)


def float_to_int16(samples: np.ndarray) -> np.ndarray:
    """Float samples (full scale 1.0) rounded and clipped to int16; clipping is the honest overload."""
    scaled = np.rint(np.asarray(samples, dtype=np.float32) * np.float32(FULL_SCALE))
    return np.clip(scaled, -32768, 32767).astype(np.int16)


def split_frames(samples: np.ndarray, rate: int, *, ms: int = FRAME_MS, pad: bool = True) -> np.ndarray:
    """A 1-D signal as a (frames, samples) array; the tail is zero-padded (or dropped when pad is False)."""
    n = frame_samples(rate, ms)
    count, rem = divmod(len(samples), n)
    if rem and pad:
        samples = np.concatenate([samples, np.zeros(n - rem, dtype=samples.dtype)])
        count += 1
    return samples[: count * n].reshape(count, n)


def dbfs(samples: np.ndarray, *, axis: int | None = None) -> np.ndarray | float:
    """RMS level in dB relative to full scale (a full-scale sine reads -3 dBFS); -inf for silence."""
    x = samples.astype(np.float64)
    if samples.dtype == np.int16:
        x = x / FULL_SCALE
    power = np.mean(x * x, axis=axis)
    with np.errstate(divide="ignore"):
        level = 10.0 * np.log10(power)
    return float(level) if axis is None else level


def active_mask(
    samples: np.ndarray, rate: int, *, floor_db: float = 35.0, min_dbfs: float = -70.0
) -> np.ndarray:
    """Per-sample mask of active (non-silent) 20 ms frames.

    A frame is active when its level is within ``floor_db`` of the loudest frame and above
    ``min_dbfs``: a simplified active-speech level in the spirit of ITU-T P.56, enough to keep
    pauses from diluting a speech level.
    """
    x = int16_to_float(samples) if samples.dtype == np.int16 else samples.astype(np.float32)
    frames = split_frames(x, rate)
    levels = np.asarray(dbfs(frames, axis=1))
    if not np.isfinite(levels).any():
        return np.zeros(len(samples), dtype=bool)
    active = (levels >= np.max(levels) - floor_db) & (levels > min_dbfs)
    return np.repeat(active, frames.shape[1])[: len(samples)]


class Framer:
    """Re-chunks a stream of arbitrary-length chunks into fixed frames (a small FIFO).

    Transports deliver audio in whatever sizes they like; every stage here wants exact 20 ms
    frames, so the remainder waits for the next chunk instead of being padded.
    """

    def __init__(self, size: int, *, dtype: np.dtype | type = np.int16) -> None:
        self.size = size
        self._buf = np.zeros(0, dtype=dtype)

    def push(self, chunk: np.ndarray | bytes) -> list[np.ndarray]:
        """Every complete frame now available (possibly none)."""
        data = from_bytes(chunk) if isinstance(chunk, (bytes, bytearray, memoryview)) else chunk
        buf = np.concatenate([self._buf, data.astype(self._buf.dtype, copy=False)])
        whole = len(buf) - len(buf) % self.size
        frames = [buf[start : start + self.size] for start in range(0, whole, self.size)]
        self._buf = buf[whole:].copy()
        return frames

    def flush(self) -> np.ndarray | None:
        """The zero-padded remainder as a last frame, or None when nothing is left."""
        if not len(self._buf):
            return None
        out = np.zeros(self.size, dtype=self._buf.dtype)
        out[: len(self._buf)] = self._buf
        self._buf = self._buf[:0]
        return out

    @property
    def pending(self) -> int:
        """Samples waiting for a complete frame."""
        return len(self._buf)
