"""Sample-rate conversion with soxr (anti-aliased, well kept), one-shot and streaming.

``resample`` converts a whole utterance (what a TTS engine hands over). ``StreamResampler`` keeps
the filter state across chunks so frame boundaries do not click; soxr emits its output in bursts,
so ``FrameResampler`` adds a FIFO primed with the measured worst-case shortfall and then returns
exactly one output frame per input frame at a constant latency. soxr is imported lazily.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

import numpy as np

from tamesu.errors import MissingExtraError

__all__ = ["FrameResampler", "Quality", "StreamResampler", "resample"]

Quality = Literal["QQ", "LQ", "MQ", "HQ", "VHQ"]


def _soxr() -> Any:
    try:
        import soxr
    except ImportError as exc:
        raise MissingExtraError("soxr (resampling)", extra="voice") from exc
    return soxr


def _as_float(x: np.ndarray) -> tuple[np.ndarray, bool]:
    if x.dtype == np.int16:
        return x.astype(np.float32) / np.float32(32768.0), True
    return np.ascontiguousarray(x, dtype=np.float32), False


def _back(y: np.ndarray, was_int: bool) -> np.ndarray:
    if not was_int:
        return y
    return np.clip(np.rint(y * 32768.0), -32768, 32767).astype(np.int16)


def resample(samples: np.ndarray, in_rate: int, out_rate: int, *, quality: Quality = "HQ") -> np.ndarray:
    """A whole signal at another rate; int16 stays int16, float stays float32. 1-D or (samples, channels)."""
    if in_rate == out_rate:
        return samples.copy()
    x, was_int = _as_float(samples)
    y = _soxr().resample(x, in_rate, out_rate, quality=quality)
    return _back(np.asarray(y, dtype=np.float32), was_int)


class StreamResampler:
    """Chunked resampling that carries filter state across chunks; output lengths vary per chunk."""

    def __init__(self, in_rate: int, out_rate: int, *, channels: int = 1, quality: Quality = "HQ") -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self.channels = channels
        self._stream = _soxr().ResampleStream(in_rate, out_rate, channels, dtype="float32", quality=quality)

    def push(self, chunk: np.ndarray, *, last: bool = False) -> np.ndarray:
        """Resample the next chunk (1-D, or (samples, channels)); ``last`` drains the filter."""
        x, was_int = _as_float(chunk)
        return _back(self._stream.resample_chunk(x, last=last), was_int)

    def flush(self) -> np.ndarray:
        shape = (0,) if self.channels == 1 else (0, self.channels)
        return np.asarray(self._stream.resample_chunk(np.zeros(shape, np.float32), last=True))


@lru_cache(maxsize=64)
def _prime(in_rate: int, out_rate: int, in_frame: int, quality: str) -> int:
    """The largest shortfall of a stream behind its nominal output, measured on silence."""
    probe = StreamResampler(in_rate, out_rate, quality=quality)  # type: ignore[arg-type]
    out_frame = in_frame * out_rate // in_rate
    produced, worst = 0, 0
    zeros = np.zeros(in_frame, dtype=np.float32)
    for k in range(1, 200):
        produced += len(probe.push(zeros))
        worst = max(worst, k * out_frame - produced)
    return worst


class FrameResampler:
    """Frame in, frame out: a ``StreamResampler`` behind a FIFO, for calls x samples batches.

    ``latency_s`` is the constant delay added (soxr's bursts make it about 100 ms at HQ); a
    real-time path should resample whole utterances up front with ``resample`` instead.
    """

    def __init__(
        self, in_rate: int, out_rate: int, in_frame: int, *, channels: int = 1, quality: Quality = "HQ"
    ) -> None:
        if (in_frame * out_rate) % in_rate:
            raise ValueError(f"a {in_frame}-sample frame at {in_rate} Hz is not whole at {out_rate} Hz")
        self.out_frame = in_frame * out_rate // in_rate
        self.channels = channels
        self._stream = StreamResampler(in_rate, out_rate, channels=channels, quality=quality)
        prime = _prime(in_rate, out_rate, in_frame, quality)
        self.latency_s = prime / out_rate
        self._fifo = np.zeros((channels, prime), dtype=np.float32)

    def process(self, frames: np.ndarray) -> np.ndarray:
        """(channels, in_frame) float32 or int16 -> (channels, out_frame) of the same dtype."""
        x, was_int = _as_float(np.atleast_2d(frames))
        y = self._stream.push(np.ascontiguousarray(x.T) if self.channels > 1 else x[0])
        y = y.T if self.channels > 1 else y.reshape(1, -1)
        fifo = np.concatenate([self._fifo, y], axis=1)
        if fifo.shape[1] < self.out_frame:
            fifo = np.pad(fifo, ((0, 0), (0, self.out_frame - fifo.shape[1])))
        out, self._fifo = fifo[:, : self.out_frame], fifo[:, self.out_frame :]
        out = _back(out, was_int)
        return out if frames.ndim == 2 else out[0]
