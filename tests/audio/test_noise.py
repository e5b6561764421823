from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from tamesu.audio import pcm, synth
from tamesu.audio.noise import (
    NoiseBank,
    NoiseMixer,
    NoiseSource,
    mix_at_snr,
    noise_loop,
    noise_presets,
    read_wav,
)

pytestmark = pytest.mark.unit

PRESETS = ["cafe", "street", "office", "white"]


def _band_share(x: np.ndarray, rate: int, lo: float, hi: float) -> float:
    power = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / rate)
    return float(power[(freqs >= lo) & (freqs < hi)].sum() / power.sum())


def _measured_snr(speech: np.ndarray, mixed: np.ndarray, rate: int) -> float:
    """Independent of mix_at_snr: active frames are those of the clean speech above -60 dBFS."""
    frames = pcm.split_frames(speech, rate, pad=False)
    noise = pcm.split_frames(mixed - speech, rate, pad=False)
    active = np.asarray(pcm.dbfs(frames, axis=1)) > -60
    return 10 * np.log10(np.sum(frames[active] ** 2) / np.sum(noise[active] ** 2))


@pytest.mark.parametrize("preset", PRESETS)
def test_mix_hits_the_requested_snr(preset: str) -> None:
    rate = 16000
    speech = synth.turns([(1.0, 0.6), (1.4, 0.8)], rate, seed=3).astype(np.float32) / 32768
    noise = NoiseSource(preset, rate, seed=11).read(len(speech))
    for snr in (-5, 0, 10, 20, 30, 40):
        mixed = mix_at_snr(speech, noise, snr, rate=rate)
        assert abs(_measured_snr(speech, mixed, rate) - snr) < 0.5


def test_int16_mix_at_default_snr() -> None:
    speech = synth.turns([(1.0, 1.0)], 8000)
    mixed = mix_at_snr(speech, NoiseSource("white", 8000, 1).read(len(speech)), rate=8000)
    assert mixed.dtype == np.int16
    snr = _measured_snr(speech.astype(float), mixed.astype(float), 8000)
    assert abs(snr - 20) < 0.5


def test_presets_are_registered_unit_rms_and_seeded() -> None:
    assert set(PRESETS) <= set(noise_presets.names())
    for name in PRESETS:
        loop = noise_loop(name, 8000)
        assert len(loop) == 160000 and np.sqrt(np.mean(loop.astype(float) ** 2)) == pytest.approx(1, abs=1e-3)
        assert not loop.flags.writeable
    assert not np.array_equal(noise_loop("white", 8000, seed=1), noise_loop("white", 8000, seed=2))


def test_presets_sound_different() -> None:
    rate = 16000
    white, office, street, cafe = (noise_loop(n, rate) for n in ("white", "office", "street", "cafe"))
    assert _band_share(white, rate, 4000, 8000) == pytest.approx(0.5, abs=0.02)
    assert _band_share(office, rate, 0, 500) > 5 * _band_share(white, rate, 0, 500)
    assert _band_share(street, rate, 0, 500) > 0.7 and _band_share(street, rate, 3000, 8000) < 0.01
    assert _band_share(cafe, rate, 150, 3000) > 0.8
    envelope = np.sqrt(np.mean(pcm.split_frames(cafe, rate) ** 2, axis=1))
    flat = np.sqrt(np.mean(pcm.split_frames(white, rate) ** 2, axis=1))
    assert np.std(envelope) > 5 * np.std(flat)


def test_sources_read_the_loop_from_seeded_offsets() -> None:
    a, b, a2 = NoiseSource("cafe", 8000, 1), NoiseSource("cafe", 8000, 2), NoiseSource("cafe", 8000, 1)
    assert a.loop is b.loop
    first = a.read(400)
    assert np.array_equal(first, a2.read(400))
    assert not np.array_equal(first, b.read(400))
    bank = NoiseBank("cafe", 8000, [1, 2])
    rows = bank.read(400)
    assert np.array_equal(rows[0], first)
    assert np.array_equal(bank.read(160)[0], a.read(160))


def test_reading_wraps_around_the_loop() -> None:
    source = NoiseSource("white", 8000, 0)
    source.pos = len(source.loop) - 10
    chunk = source.read(30)
    assert np.array_equal(chunk[10:], source.loop[:20])


def _write_wav(path: Path, data: np.ndarray, rate: int, width: int = 2) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(data.shape[1])
        w.setsampwidth(width)
        w.setframerate(rate)
        if width == 2:
            w.writeframes(data.astype("<i2").tobytes())
        else:
            raw = (data.astype(np.int32) << 8).astype("<i4").view(np.uint8).reshape(-1, 4)[:, 1:]
            w.writeframes(raw.tobytes())


def test_wav_noise_is_mono_mixed_and_resampled(tmp_path: Path) -> None:
    tone = synth.tone(440, 1.0, 22050, dbfs=-10)
    stereo = np.stack([tone, tone], axis=1)
    path = tmp_path / "hum.wav"
    _write_wav(path, stereo, 22050)
    x = read_wav(path, 8000)
    assert len(x) == 8000 and x.dtype == np.float32
    assert float(pcm.dbfs(x[800:-800])) == pytest.approx(-10, abs=0.2)
    source = NoiseSource(str(path), 8000, 3)
    assert np.sqrt(np.mean(source.read(4000).astype(float) ** 2)) == pytest.approx(1, abs=0.05)
    deep = tmp_path / "deep.wav"
    _write_wav(deep, stereo.astype(np.int32) * 256, 22050, width=3)
    assert np.abs(read_wav(deep, 22050) - tone / 32768).max() < 1e-3


def test_unknown_noise_is_refused() -> None:
    with pytest.raises(ValueError, match="neither a preset"):
        NoiseSource("rainforest", 8000, 1)


def test_streaming_mixer_level() -> None:
    mixer = NoiseMixer(NoiseSource("white", 8000, 0), snr_db=20, speech_dbfs=-26)
    out = mixer.mix(np.zeros(8000, np.int16))
    assert float(pcm.dbfs(out)) == pytest.approx(-46, abs=0.3)
