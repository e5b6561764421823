"""Synthetic test signals: tones and speech-like sound, seeded, for tests, benchmarks and fakes.

``speech_like`` is a voiced harmonic series (a wandering pitch around ``f0``) shaped by a falling
spectrum with two formant-like bumps and gated by a 3-6 Hz syllable envelope: not words, but
enough like speech for a VAD, a level meter or a line model to treat it as speech.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .pcm import float_to_int16

__all__ = ["silence", "speech_like", "tone", "turns"]


def tone(freq: float, seconds: float, rate: int, *, dbfs: float = -20.0) -> np.ndarray:
    """int16 sine whose RMS level is ``dbfs`` (a sine's peak sits 3 dB higher)."""
    t = np.arange(round(seconds * rate)) / rate
    return float_to_int16(np.sqrt(2) * 10 ** (dbfs / 20) * np.sin(2 * np.pi * freq * t))


def silence(seconds: float, rate: int) -> np.ndarray:
    return np.zeros(round(seconds * rate), dtype=np.int16)


def speech_like(
    seconds: float, rate: int, *, seed: int = 0, f0: float = 130.0, dbfs: float = -26.0
) -> np.ndarray:
    """int16 speech-like sound whose active RMS level is ``dbfs``."""
    rng = np.random.default_rng(seed)
    n = round(seconds * rate)
    t = np.arange(n) / rate
    wander = np.cumsum(rng.standard_normal(n)) / np.sqrt(rate) * 8.0
    pitch = f0 * (1 + 0.1 * np.sin(2 * np.pi * 0.7 * t + rng.uniform(0, 6.28))) + wander
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    formants = (rng.uniform(500, 800), rng.uniform(1200, 2200))
    voice = np.zeros(n)
    for k in range(1, int(0.45 * rate / f0)):
        hk = k * f0
        gain = 1 / k**0.7 + sum(1.5 * np.exp(-0.5 * ((hk - f) / 150) ** 2) for f in formants)
        voice += gain * np.sin(k * phase + rng.uniform(0, 6.28))
    syllable = rng.uniform(3.0, 6.0)
    envelope = np.clip(np.sin(2 * np.pi * syllable * t + rng.uniform(0, 6.28)) + 0.6, 0, None) ** 0.8
    fade = np.minimum(1.0, np.minimum(t, t[::-1] if n else t) / 0.02)
    out = voice * envelope * fade
    rms = np.sqrt(np.mean(out[envelope > 0.05] ** 2)) if n else 1.0
    return float_to_int16(out / (rms + 1e-12) * 10 ** (dbfs / 20))


def turns(pattern: Sequence[tuple[float, float]], rate: int, *, seed: int = 0) -> np.ndarray:
    """Alternating (speech seconds, silence seconds) pairs, e.g. [(1.2, 0.5), (0.8, 2.5)]."""
    parts = []
    for i, (talk, pause) in enumerate(pattern):
        parts += [speech_like(talk, rate, seed=seed + i), silence(pause, rate)]
    return np.concatenate(parts) if parts else np.zeros(0, np.int16)
