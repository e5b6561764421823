from __future__ import annotations

import numpy as np
import pytest

from tamesu.audio import synth
from tamesu.audio.dtmf import COLS, ROWS, DtmfDetector, detect_dtmf, dtmf_tones, goertzel_power
from tamesu.audio.noise import NoiseSource, mix_at_snr
from tamesu.audio.phone_line import Line

pytestmark = pytest.mark.unit

ALL = "1234567890*#ABCD"


def test_tones_use_the_keypad_frequencies() -> None:
    x = dtmf_tones("5", 8000, tone_ms=100, gap_ms=0).astype(float)
    spectrum = np.abs(np.fft.rfft(x, 8000))
    peaks = sorted(np.argsort(spectrum)[-2:])
    assert peaks == [ROWS[1], COLS[1]]
    assert len(dtmf_tones("12", 8000, tone_ms=70, gap_ms=90)) == 2 * 1280
    with pytest.raises(ValueError):
        dtmf_tones("1x")


def test_goertzel_matches_the_dft() -> None:
    rng = np.random.default_rng(0)
    blocks = rng.standard_normal((3, 205))
    n = 205
    power = goertzel_power(blocks, (697.0, 1336.0), 8000)
    for i, f in enumerate((697.0, 1336.0)):
        dft = np.abs(blocks @ np.exp(-2j * np.pi * f / 8000 * np.arange(n))) ** 2 / (n * n / 4)
        assert np.allclose(power[:, i], dft)


@pytest.mark.parametrize("rate", [8000, 16000])
def test_every_digit_is_detected(rate: int) -> None:
    assert detect_dtmf(dtmf_tones(ALL, rate), rate) == ALL


def test_repeated_digits_need_a_gap_and_are_each_reported() -> None:
    assert detect_dtmf(dtmf_tones("1111", tone_ms=70, gap_ms=70)) == "1111"


def test_events_are_timed_and_streaming_in_any_chunks_agrees() -> None:
    x = dtmf_tones("1234#", 8000, tone_ms=80, gap_ms=80)
    det = DtmfDetector(8000)
    events = []
    for chunk in np.array_split(x, 37):
        events += det.push(chunk)
    assert "".join(e.digit for e in events) == "1234#"
    for i, e in enumerate(events):
        assert abs(e.at - i * 0.16) < 0.03


@pytest.mark.parametrize("seed", range(8))
def test_digits_survive_the_pstn_line(seed: int) -> None:
    x = dtmf_tones("1234#", 8000, tone_ms=70, gap_ms=70)
    assert detect_dtmf(Line("pstn", seed).process_signal(x)) == "1234#"


def test_digits_survive_a_16k_caller_through_pstn_with_noise() -> None:
    x = dtmf_tones("1234#", 16000)
    noisy = mix_at_snr(x, NoiseSource("cafe", 16000, 2).read(len(x)), 15, rate=16000)
    assert detect_dtmf(Line("pstn", 4, rate=16000).process_signal(noisy), 16000) == "1234#"


def test_rejections() -> None:
    assert detect_dtmf(dtmf_tones("5", tone_ms=20)) == ""
    assert detect_dtmf(dtmf_tones("5", twist_db=10)) == ""
    assert detect_dtmf(dtmf_tones("5", dbfs=-50)) == ""
    assert detect_dtmf(synth.tone(697, 1.0, 8000, dbfs=-10)) == ""
    assert detect_dtmf(synth.speech_like(5.0, 8000, seed=2)) == ""
    rng = np.random.default_rng(0)
    assert detect_dtmf((rng.standard_normal(80000) * 3000).astype(np.int16)) == ""
