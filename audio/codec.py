"""Speech codecs: G.711 mu-law / A-law in numpy, Opus and AMR-NB through PyAV.

G.711 is bit-exact with the ITU-T reference algorithm (the Sun ``g711.c`` that ``audioop`` also
implements): encoding is one lookup in a 65536-entry table indexed by the int16 sample, so a whole
batch of calls encodes in one vectorised step. The PyAV codecs run per call, frame by frame, and are
imported only when used.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

import numpy as np

from tamesu.errors import MissingExtraError

from .pcm import from_bytes, to_bytes

__all__ = [
    "AV_CODECS",
    "AvCodecLoop",
    "AvDecoder",
    "AvEncoder",
    "Encoding",
    "alaw_decode",
    "alaw_encode",
    "decode",
    "encode",
    "normalise_encoding",
    "roundtrip_table",
    "ulaw_decode",
    "ulaw_encode",
]

Encoding = Literal["pcm16", "mulaw", "alaw"]

_ALIASES = {
    "pcm16": "pcm16",
    "pcm": "pcm16",
    "linear16": "pcm16",
    "mulaw": "mulaw",
    "ulaw": "mulaw",
    "g711_ulaw": "mulaw",
    "pcmu": "mulaw",
    "alaw": "alaw",
    "g711_alaw": "alaw",
    "pcma": "alaw",
}


def normalise_encoding(name: str) -> Encoding:
    """The canonical encoding for the names suites use (``g711_ulaw`` in realtime, ``mulaw`` in voice)."""
    try:
        return _ALIASES[name.lower()]  # type: ignore[return-value]
    except KeyError:
        raise ValueError(f"unknown audio encoding {name!r}; known: {', '.join(sorted(_ALIASES))}") from None


def _all_int16() -> np.ndarray:
    """Every int16 value, ordered by its uint16 bit pattern (the index a lookup uses)."""
    return np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.int16).astype(np.int32)


@cache
def _ulaw_encode_table() -> np.ndarray:
    v = _all_int16() >> 2
    mask = np.where(v < 0, 0x7F, 0xFF)
    mag = np.minimum(np.abs(v), 8159) + 33
    seg = np.searchsorted(np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF]), mag)
    code = (np.minimum(seg, 7) << 4) | ((mag >> (np.minimum(seg, 7) + 1)) & 0xF)
    return (np.where(seg >= 8, 0x7F, code) ^ mask).astype(np.uint8)


@cache
def _ulaw_decode_table() -> np.ndarray:
    u = ~np.arange(256, dtype=np.int32) & 0xFF
    t = (((u & 0x0F) << 3) + 0x84) << ((u & 0x70) >> 4)
    return np.where(u & 0x80, 0x84 - t, t - 0x84).astype(np.int16)


@cache
def _alaw_encode_table() -> np.ndarray:
    v = _all_int16() >> 3
    mask = np.where(v >= 0, 0xD5, 0x55)
    mag = np.where(v >= 0, v, -v - 1)
    seg = np.searchsorted(np.array([0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF]), mag)
    s = np.minimum(seg, 7)
    quant = np.where(s < 2, mag >> 1, mag >> np.maximum(s, 1)) & 0xF
    code = (s << 4) | quant
    return (np.where(seg >= 8, 0x7F, code) ^ mask).astype(np.uint8)


@cache
def _alaw_decode_table() -> np.ndarray:
    a = np.arange(256, dtype=np.int32) ^ 0x55
    t = (a & 0x0F) << 4
    seg = (a & 0x70) >> 4
    t = np.where(seg == 0, t + 8, np.where(seg == 1, t + 0x108, (t + 0x108) << np.maximum(seg - 1, 0)))
    return np.where(a & 0x80, t, -t).astype(np.int16)


def ulaw_encode(samples: np.ndarray) -> np.ndarray:
    """int16 samples (any shape) to G.711 mu-law codes (uint8)."""
    return _ulaw_encode_table()[np.asarray(samples, dtype=np.int16).view(np.uint16)]


def ulaw_decode(codes: np.ndarray | bytes) -> np.ndarray:
    """G.711 mu-law codes to int16 samples."""
    return _ulaw_decode_table()[_codes(codes)]


def alaw_encode(samples: np.ndarray) -> np.ndarray:
    """int16 samples (any shape) to G.711 A-law codes (uint8)."""
    return _alaw_encode_table()[np.asarray(samples, dtype=np.int16).view(np.uint16)]


def alaw_decode(codes: np.ndarray | bytes) -> np.ndarray:
    """G.711 A-law codes to int16 samples."""
    return _alaw_decode_table()[_codes(codes)]


def _codes(codes: np.ndarray | bytes) -> np.ndarray:
    if isinstance(codes, (bytes, bytearray, memoryview)):
        return np.frombuffer(codes, dtype=np.uint8)
    return np.asarray(codes, dtype=np.uint8)


@cache
def roundtrip_table(encoding: str) -> np.ndarray:
    """int16 -> int16 table of encode-then-decode, so a line applies G.711 in one lookup."""
    enc = normalise_encoding(encoding)
    values = _all_int16().astype(np.int16)
    if enc == "mulaw":
        return ulaw_decode(ulaw_encode(values))
    if enc == "alaw":
        return alaw_decode(alaw_encode(values))
    return values


def encode(samples: np.ndarray, encoding: str) -> bytes:
    """int16 samples as wire bytes in an encoding (pcm16 little-endian, or one byte per G.711 sample)."""
    enc = normalise_encoding(encoding)
    if enc == "mulaw":
        return ulaw_encode(samples).tobytes()
    if enc == "alaw":
        return alaw_encode(samples).tobytes()
    return to_bytes(np.asarray(samples))


def decode(data: bytes, encoding: str) -> np.ndarray:
    """Wire bytes in an encoding as int16 samples."""
    enc = normalise_encoding(encoding)
    if enc == "mulaw":
        return ulaw_decode(data)
    if enc == "alaw":
        return alaw_decode(data)
    return from_bytes(data)


AV_CODECS: dict[str, tuple[str, str, tuple[int, ...]]] = {
    "opus": ("libopus", "libopus", (8000, 12000, 16000, 24000, 48000)),
    "amr_nb": ("libopencore_amrnb", "amrnb", (8000,)),
}
"""Codec name -> (PyAV encoder, PyAV decoder, supported sample rates)."""


def _av() -> Any:
    try:
        import av
    except ImportError as exc:
        raise MissingExtraError("PyAV (Opus and AMR codecs)", extra="voice") from exc
    return av


def _check(codec: str, rate: int) -> tuple[str, str]:
    if codec not in AV_CODECS:
        raise ValueError(f"unknown codec {codec!r}; known: {', '.join(sorted(AV_CODECS))}")
    enc, dec, rates = AV_CODECS[codec]
    if rate not in rates:
        raise ValueError(f"{codec} does not run at {rate} Hz; use one of {rates}")
    return enc, dec


class AvEncoder:
    """One call's encoder: int16 frames in, codec packets (bytes) out."""

    def __init__(self, codec: str, rate: int, *, bitrate: int | None = None) -> None:
        av = _av()
        name, _ = _check(codec, rate)
        self._av = av
        self.rate = rate
        ctx = av.CodecContext.create(name, "w")
        ctx.sample_rate = rate
        ctx.layout = "mono"
        ctx.format = "s16"
        if bitrate:
            ctx.bit_rate = bitrate
        ctx.open()
        self._ctx = ctx
        self._pts = 0

    def encode(self, samples: np.ndarray) -> list[bytes]:
        frame = self._av.AudioFrame.from_ndarray(
            np.ascontiguousarray(samples, dtype=np.int16).reshape(1, -1), format="s16", layout="mono"
        )
        frame.sample_rate = self.rate
        frame.pts = self._pts
        self._pts += len(samples)
        return [bytes(p) for p in self._ctx.encode(frame)]


class AvDecoder:
    """One call's decoder: packets in, int16 samples at ``rate`` out (Opus decodes at 48 kHz, so it is resampled)."""

    def __init__(self, codec: str, rate: int) -> None:
        av = _av()
        _, name = _check(codec, rate)
        self._av = av
        ctx = av.CodecContext.create(name, "r")
        ctx.sample_rate = rate
        ctx.layout = "mono"
        ctx.open()
        self._ctx = ctx
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)

    def decode(self, packet: bytes) -> np.ndarray:
        out = []
        for frame in self._ctx.decode(self._av.Packet(packet)):
            for conv in self._resampler.resample(frame):
                out.append(conv.to_ndarray().reshape(-1))
        return np.concatenate(out).astype(np.int16) if out else np.zeros(0, dtype=np.int16)


class AvCodecLoop:
    """Encode then decode, frame in -> frame out, with one frame of fixed latency.

    The decoder and its resampler deliver uneven amounts at first; a FIFO primed with one frame
    of silence keeps every output frame full and the delay constant.
    """

    def __init__(self, codec: str, rate: int, frame: int, *, bitrate: int | None = None) -> None:
        self.encoder = AvEncoder(codec, rate, bitrate=bitrate)
        self.decoder = AvDecoder(codec, rate)
        self.frame = frame
        self._fifo = np.zeros(frame, dtype=np.int16)
        self.underruns = 0

    def process(self, samples: np.ndarray) -> np.ndarray:
        decoded = [self.decoder.decode(p) for p in self.encoder.encode(samples)]
        self._fifo = np.concatenate([self._fifo, *decoded])
        if len(self._fifo) < self.frame:
            self.underruns += 1
            self._fifo = np.concatenate([self._fifo, np.zeros(self.frame - len(self._fifo), np.int16)])
        out, self._fifo = self._fifo[: self.frame], self._fifo[self.frame :]
        return out
