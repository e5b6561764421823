"""DTMF keypad tones: generation, and detection with the Goertzel algorithm.

Detection follows the usual telephone practice: overlapping blocks of 25.6 ms (205 samples at
8 kHz, hop half a block); in each block the Goertzel power at the eight keypad frequencies; a digit
is a block where the strongest row and column tones stand clear of the other tones of their group,
carry most of the block's energy, are above an absolute level, and are within the allowed twist;
a digit is reported once it holds for ``hold`` blocks and is re-armed only after a gap, so one key
press is one digit even when a line drops or repeats a frame inside it.

Goertzel's recursion ``s[n] = x[n] + 2 cos(w) s[n-1] - s[n-2]`` is linear, so its two final states
over a block are fixed weighted sums of the block's samples: the weights are precomputed and the
states of every block and frequency come from one matrix product, then the power is Goertzel's
``s1^2 + s2^2 - 2 cos(w) s1 s2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .pcm import FULL_SCALE, float_to_int16

__all__ = ["COLS", "KEYS", "ROWS", "DtmfDetector", "DtmfEvent", "detect_dtmf", "dtmf_tones", "goertzel_power"]

ROWS = (697.0, 770.0, 852.0, 941.0)
COLS = (1209.0, 1336.0, 1477.0, 1633.0)
KEYS = ("123A", "456B", "789C", "*0#D")
_POSITION = {key: (r, c) for r, row in enumerate(KEYS) for c, key in enumerate(row)}


def dtmf_tones(
    digits: str,
    rate: int = 8000,
    *,
    tone_ms: float = 80.0,
    gap_ms: float = 80.0,
    dbfs: float = -10.0,
    twist_db: float = 0.0,
) -> np.ndarray:
    """int16 audio of the digits: each a row+column tone pair of ``tone_ms``, then ``gap_ms`` of silence.

    ``dbfs`` is the peak level of each tone of the pair; ``twist_db`` raises the column tone
    over the row tone (negative lowers it).
    """
    unknown = set(digits.upper()) - set(_POSITION)
    if unknown:
        raise ValueError(f"not DTMF digits: {''.join(sorted(unknown))!r}")
    n_tone, n_gap = round(rate * tone_ms / 1000), round(rate * gap_ms / 1000)
    t = np.arange(n_tone) / rate
    amp = 10 ** (dbfs / 20)
    ramp = np.minimum(1.0, np.minimum(np.arange(n_tone), np.arange(n_tone)[::-1]) / max(1, rate // 500))
    parts = []
    for key in digits.upper():
        r, c = _POSITION[key]
        tone = amp * np.sin(2 * np.pi * ROWS[r] * t) + amp * 10 ** (twist_db / 20) * np.sin(
            2 * np.pi * COLS[c] * t
        )
        parts += [tone * ramp, np.zeros(n_gap)]
    return float_to_int16(np.concatenate(parts) if parts else np.zeros(0))


@lru_cache(maxsize=16)
def _weights(freqs: tuple[float, ...], n: int, rate: int) -> tuple[np.ndarray, np.ndarray]:
    """Per frequency, the weights giving Goertzel's last two states, and 2 cos(w)."""
    coeff = np.array([2 * math.cos(2 * math.pi * f / rate) for f in freqs])
    states = np.zeros((n + 2, len(freqs), n))
    for i in range(n):
        states[i + 2] = coeff[:, None] * states[i + 1] - states[i]
        states[i + 2, :, i] += 1.0
    s1, s2 = states[n + 1], states[n]
    return np.stack([s1, s2], axis=1).reshape(-1, n).T.copy(), coeff


def goertzel_power(blocks: np.ndarray, freqs: tuple[float, ...], rate: int) -> np.ndarray:
    """(blocks, n) samples -> (blocks, len(freqs)) Goertzel power, normalised so a full-scale tone at a bin is 1."""
    n = blocks.shape[1]
    w, coeff = _weights(tuple(freqs), n, rate)
    s = (blocks.astype(np.float64) @ w).reshape(len(blocks), len(freqs), 2)
    s1, s2 = s[..., 0], s[..., 1]
    return (s1 * s1 + s2 * s2 - coeff * s1 * s2) / (n * n / 4)


@dataclass(frozen=True)
class DtmfEvent:
    digit: str
    at: float
    """Seconds from the start of the stream to the first block that carried the digit."""


class DtmfDetector:
    """Streaming DTMF detector: push int16 audio of any length, get the digits it completes."""

    def __init__(
        self,
        rate: int = 8000,
        *,
        min_dbfs: float = -40.0,
        max_twist_db: float = 8.0,
        peak_ratio_db: float = 6.0,
        tone_fraction: float = 0.6,
        hold: int = 2,
        release: int = 2,
    ) -> None:
        self.rate = rate
        self.block = round(rate * 0.0256)
        self.hop = self.block // 2
        self._freqs = ROWS + COLS
        self._w, self._coeff = _weights(self._freqs, self.block, rate)
        self._min_power = 10 ** (min_dbfs / 10)
        self._twist = 10 ** (max_twist_db / 10)
        self._peak = 10 ** (peak_ratio_db / 10)
        self._fraction = tone_fraction
        self._hold, self._release = hold, release
        self._buf = np.zeros(0, dtype=np.float64)
        self._consumed = 0
        self._candidate: str | None = None
        self._count = 0
        self._since = 0.0
        self._active: str | None = None
        self._quiet = 0

    def push(self, samples: np.ndarray) -> list[DtmfEvent]:
        buf = np.concatenate([self._buf, samples.astype(np.float64) / FULL_SCALE])
        count = (len(buf) - self.block) // self.hop + 1 if len(buf) >= self.block else 0
        if count <= 0:
            self._buf = buf
            return []
        idx = np.arange(count)[:, None] * self.hop + np.arange(self.block)[None, :]
        blocks = buf[idx]
        events = [e for i, d in enumerate(self._classify(blocks)) if (e := self._step(d, i)) is not None]
        self._buf = buf[count * self.hop :]
        self._consumed += count * self.hop
        return events

    def _classify(self, blocks: np.ndarray) -> list[str | None]:
        s = (blocks @ self._w).reshape(len(blocks), 8, 2)
        power = (s[..., 0] ** 2 + s[..., 1] ** 2 - self._coeff * s[..., 0] * s[..., 1]) / (self.block**2 / 4)
        energy = np.mean(blocks**2, axis=1) * 2
        out: list[str | None] = []
        for p, e in zip(power, energy):
            rows, cols = p[:4], p[4:]
            r, c = int(np.argmax(rows)), int(np.argmax(cols))
            pr, pc = rows[r], cols[c]
            ok = (
                min(pr, pc) > self._min_power
                and pr > self._peak * np.max(np.delete(rows, r))
                and pc > self._peak * np.max(np.delete(cols, c))
                and max(pr, pc) < self._twist * min(pr, pc)
                and (pr + pc) > self._fraction * e
            )
            out.append(KEYS[r][c] if ok else None)
        return out

    def _step(self, digit: str | None, i: int) -> DtmfEvent | None:
        at = (self._consumed + i * self.hop) / self.rate
        if digit is not None and digit == self._candidate:
            self._count += 1
        else:
            self._candidate, self._count, self._since = digit, 1, at
        if self._active is not None:
            self._quiet = 0 if digit == self._active else self._quiet + 1
            if self._quiet >= self._release:
                self._active = None
        if self._active is None and digit is not None and self._count >= self._hold:
            self._active, self._quiet = digit, 0
            return DtmfEvent(digit, self._since)
        return None


def detect_dtmf(samples: np.ndarray, rate: int = 8000, **options: float) -> str:
    """Every digit in a whole int16 signal."""
    return "".join(e.digit for e in DtmfDetector(rate, **options).push(samples))  # type: ignore[arg-type]
