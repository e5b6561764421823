"""Background noise under the caller's voice: procedural presets or a WAV file, mixed at an SNR.

Presets are generated, seeded, as a 20 s loop at the call's rate (cached, shared by every call of a
run); a call reads the loop from its own seeded offset, so a thousand calls cost one loop of memory
and a slice per frame. Shaping is done in the frequency domain over the whole loop and events are
placed circularly, so the loop has no seam.

- ``white``: Gaussian white noise.
- ``office``: pink (1/f) noise, a faint mains hum (50 or 60 Hz with two harmonics, 25 dB down) and
  bursts of typing (3 ms high-passed clicks at about six a second).
- ``street``: brown (1/f^2) rumble above 20 Hz, and cars passing every 4-10 s as 1.5-3 s swells of
  100-1500 Hz noise.
- ``cafe``: babble of seven voices (speech-shaped noise, each gated by a 3-5 Hz syllable envelope and
  by phrases and pauses) and occasional clinks (decaying 2-6 kHz partials).
"""

from __future__ import annotations

import wave
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from tamesu.registry import Registry

from .pcm import active_mask, float_to_int16, int16_to_float
from .resample import resample

__all__ = [
    "NoiseBank",
    "NoiseMixer",
    "NoiseSource",
    "mix_at_snr",
    "noise_loop",
    "noise_presets",
    "read_wav",
]

NoiseGenerator = Callable[[int, int, np.random.Generator], np.ndarray]
"""(samples, rate, rng) -> float noise of any level; the loop is normalised to unit RMS afterwards."""

noise_presets: Registry[NoiseGenerator] = Registry("noise preset")

LOOP_S = 20.0
_NOISE_STREAM = 0x4E4F4953


def _shaped(
    rng: np.random.Generator, n: int, rate: int, gain: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """White noise coloured by a magnitude response, circularly (so the result loops seamlessly)."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1.0 / rate)
    out = np.fft.irfft(spectrum * gain(freqs), n)
    return out / (np.std(out) + 1e-12)


def _gaussian_lowpass(width_hz: float) -> Callable[[np.ndarray], np.ndarray]:
    """A smooth low-pass response: slow random envelopes (syllables, phrases) come from white noise."""
    return lambda f: np.exp(-0.5 * (f / width_hz) ** 2)


def _place(signal: np.ndarray, event: np.ndarray, at: int, amp: float) -> None:
    idx = (at + np.arange(len(event))) % len(signal)
    np.add.at(signal, idx, amp * event)


def _events(rng: np.random.Generator, n: int, rate: int, per_s: float) -> np.ndarray:
    count = rng.poisson(per_s * n / rate)
    return np.sort(rng.integers(0, n, count))


@noise_presets.register("white")
def white(n: int, rate: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(n)


@noise_presets.register("office")
def office(n: int, rate: int, rng: np.random.Generator) -> np.ndarray:
    out = _shaped(rng, n, rate, lambda f: 1.0 / np.sqrt(np.maximum(f, 20.0)))
    t = np.arange(n) / rate
    mains = 50.0 if rng.random() < 0.5 else 60.0
    hum = sum(np.sin(2 * np.pi * mains * k * t + rng.uniform(0, 2 * np.pi)) / k for k in (1, 2, 3))
    out += 10 ** (-25 / 20) * hum / np.std(hum)
    click_len = max(int(0.003 * rate), 4)
    decay = np.exp(-np.arange(click_len) / (click_len / 4))
    for burst in _events(rng, n, rate, 0.25):
        length = int(rng.uniform(1.0, 3.0) * rate)
        for key in burst + _events(rng, length, rate, 6.0):
            click = np.diff(rng.standard_normal(click_len + 1)) * decay
            _place(out, click, int(key), rng.uniform(1.0, 3.0))
    return out


@noise_presets.register("street")
def street(n: int, rate: int, rng: np.random.Generator) -> np.ndarray:
    out = _shaped(rng, n, rate, lambda f: np.where(f < 20.0, 0.0, 1.0 / np.maximum(f, 20.0)))
    band = _shaped(rng, n, rate, lambda f: ((f > 100) & (f < 1500)).astype(float))
    at = 0
    while True:
        at += int(rng.uniform(4.0, 10.0) * rate)
        if at >= n:
            break
        width = rng.uniform(1.5, 3.0) * rate / 4
        k = np.arange(-4 * width, 4 * width).astype(int)
        envelope = np.exp(-0.5 * (k / width) ** 2)
        idx = (at + k) % n
        _place(out, band[idx] * envelope, at - len(k) // 2, rng.uniform(1.5, 3.0))
    return out


@noise_presets.register("cafe")
def cafe(n: int, rate: int, rng: np.random.Generator) -> np.ndarray:
    def speechy(f: np.ndarray) -> np.ndarray:
        return np.where(f < 150, 0.0, 1.0) * (f / (f + 300.0)) / (1.0 + (f / 1000.0) ** 1.5)

    out = np.zeros(n)
    for _ in range(7):
        voice = _shaped(rng, n, rate, speechy)
        rate_hz = rng.uniform(3.0, 5.0)
        syllables = _shaped(rng, n, rate, _gaussian_lowpass(rate_hz))
        envelope = np.maximum(syllables, 0.0) ** 1.5
        phrases = _shaped(rng, n, rate, _gaussian_lowpass(0.3)) > -0.3
        out += voice * envelope * phrases * rng.uniform(0.5, 1.0)
    out /= np.std(out) + 1e-12
    top = 0.45 * rate
    for at in _events(rng, n, rate, 0.3):
        length = int(0.25 * rate)
        t = np.arange(length) / rate
        ring = np.zeros(length)
        for _ in range(3):
            freq = rng.uniform(min(2000.0, top / 2), min(6000.0, top))
            ring += np.sin(2 * np.pi * freq * t) * np.exp(-t / rng.uniform(0.03, 0.08))
        _place(out, ring, int(at), rng.uniform(0.8, 2.0))
    return out


@lru_cache(maxsize=16)
def noise_loop(name: str, rate: int, *, seed: int = 0, seconds: float = LOOP_S) -> np.ndarray:
    """A preset's loop at ``rate``, unit RMS, read-only (shared between calls)."""
    generator = noise_presets.get(name)
    rng = np.random.default_rng([seed, _NOISE_STREAM, rate])
    loop = np.asarray(generator(int(seconds * rate), rate, rng), dtype=np.float64)
    loop = (loop / (np.sqrt(np.mean(loop**2)) + 1e-12)).astype(np.float32)
    loop.flags.writeable = False
    return loop


def read_wav(path: str | Path, rate: int) -> np.ndarray:
    """A PCM WAV file (8/16/24/32-bit) as mono float32 at ``rate``."""
    with wave.open(str(path), "rb") as wav:
        width, channels, file_rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
        raw = wav.readframes(wav.getnframes())
    if width == 1:
        data = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        data = ((b[:, 0] << 8 | b[:, 1] << 16 | b[:, 2] << 24) >> 8).astype(np.float32) / 8388608.0
    elif width in (2, 4):
        dtype = "<i2" if width == 2 else "<i4"
        data = np.frombuffer(raw, dtype).astype(np.float32) / float(2 ** (8 * width - 1))
    else:
        raise ValueError(f"{path}: unsupported sample width {width}")
    mono = data.reshape(-1, channels).mean(axis=1)
    return resample(mono.astype(np.float32), file_rate, rate)


@lru_cache(maxsize=16)
def _wav_loop(path: str, rate: int) -> np.ndarray:
    loop = read_wav(path, rate)
    if not len(loop) or not np.any(loop):
        raise ValueError(f"{path}: the noise file is empty or silent")
    fade = min(len(loop) // 4, int(0.05 * rate))
    if fade:
        ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
        loop[:fade] = loop[:fade] * ramp + loop[-fade:] * (1 - ramp)
        loop = loop[:-fade]
    loop = loop / np.sqrt(np.mean(loop**2))
    loop.flags.writeable = False
    return loop


def _loop(noise: str | Path, rate: int) -> np.ndarray:
    if isinstance(noise, str) and noise in noise_presets:
        return noise_loop(noise, rate)
    path = Path(noise)
    if not path.is_file():
        raise ValueError(
            f"background noise {str(noise)!r} is neither a preset ({', '.join(noise_presets)}) nor a file"
        )
    return _wav_loop(str(path.resolve()), rate)


class NoiseSource:
    """One call's endless noise: a shared loop read from a seeded offset; unit RMS float32."""

    def __init__(self, noise: str | Path, rate: int, seed: int) -> None:
        self.loop = _loop(noise, rate)
        self.rate = rate
        self.pos = int(np.random.default_rng([seed, _NOISE_STREAM]).integers(len(self.loop)))

    def read(self, n: int) -> np.ndarray:
        idx = (self.pos + np.arange(n)) % len(self.loop)
        self.pos = (self.pos + n) % len(self.loop)
        return self.loop[idx]


class NoiseBank:
    """Noise for many calls at once: one gather per frame from the shared loop."""

    def __init__(self, noise: str | Path, rate: int, seeds: Sequence[int]) -> None:
        self.loop = _loop(noise, rate)
        self.pos = np.array([NoiseSource(noise, rate, s).pos for s in seeds], dtype=np.int64)

    def read(self, n: int) -> np.ndarray:
        """(calls, n) float32 noise, unit RMS."""
        idx = (self.pos[:, None] + np.arange(n)[None, :]) % len(self.loop)
        self.pos = (self.pos + n) % len(self.loop)
        return self.loop[idx]


def mix_at_snr(
    speech: np.ndarray, noise: np.ndarray, snr_db: float = 20.0, *, rate: int = 16000
) -> np.ndarray:
    """Speech plus noise scaled so active-speech power over noise power (on the same samples) is ``snr_db``.

    Speech power is measured over active frames only (``pcm.active_mask``), so pauses do not
    lower it. Silent speech gets noise at a nominal -26 dBFS speech level. int16 in, int16 out.
    """
    was_int = speech.dtype == np.int16
    s = int16_to_float(speech) if was_int else speech.astype(np.float32)
    n = np.resize(noise.astype(np.float32), len(s))
    mask = active_mask(s, rate)
    p_speech = float(np.mean(s[mask].astype(np.float64) ** 2)) if mask.any() else 10 ** (-26 / 10)
    sel = n[mask] if mask.any() else n
    p_noise = float(np.mean(sel.astype(np.float64) ** 2)) or 1e-20
    gain = np.sqrt(p_speech / (p_noise * 10 ** (snr_db / 10)))
    mixed = s + np.float32(gain) * n
    return float_to_int16(mixed) if was_int else mixed


class NoiseMixer:
    """Streaming mix for live calls: noise at a fixed level ``snr_db`` below a nominal speech level.

    A live call cannot measure speech it has not spoken yet, so the caller's voice is expected at
    ``speech_dbfs`` (TTS output normalised to -26 dBFS active level, the telephony nominal).
    """

    def __init__(self, source: NoiseSource, snr_db: float = 20.0, *, speech_dbfs: float = -26.0) -> None:
        self.source = source
        self.gain = np.float32(10 ** ((speech_dbfs - snr_db) / 20))

    def mix(self, frame: np.ndarray) -> np.ndarray:
        """int16 frame in, int16 frame with noise out."""
        noisy = int16_to_float(frame) + self.gain * self.source.read(len(frame))
        return float_to_int16(noisy)
