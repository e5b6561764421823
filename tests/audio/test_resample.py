from __future__ import annotations

import numpy as np
import pytest

from tamesu.audio import pcm, synth
from tamesu.audio.resample import FrameResampler, StreamResampler, resample

pytestmark = pytest.mark.unit


def _level(x: np.ndarray) -> float:
    return float(pcm.dbfs(x[len(x) // 8 : -len(x) // 8]))


@pytest.mark.parametrize(
    ("src", "dst", "alias_hz"), [(16000, 8000, 5000), (48000, 16000, 10000), (16000, 8000, 4300)]
)
def test_tone_above_the_new_nyquist_is_removed(src: int, dst: int, alias_hz: float) -> None:
    x = synth.tone(alias_hz, 1.0, src, dbfs=-10)
    y = resample(x.astype(np.float32) / 32768, src, dst)
    assert _level(y) - _level(x.astype(np.float32) / 32768) < -40


@pytest.mark.parametrize(("src", "dst"), [(16000, 8000), (8000, 16000), (48000, 16000), (16000, 24000)])
def test_in_band_tone_keeps_its_level(src: int, dst: int) -> None:
    x = synth.tone(1000, 1.0, src, dbfs=-10)
    y = resample(x, src, dst)
    assert y.dtype == np.int16
    assert len(y) == len(x) * dst // src
    assert abs(_level(y) - _level(x)) < 0.5


def test_chunked_stream_equals_one_shot() -> None:
    x = synth.speech_like(1.0, 16000).astype(np.float32) / 32768
    stream = StreamResampler(16000, 8000)
    parts = [stream.push(chunk) for chunk in np.split(x, 50)]
    parts.append(stream.flush())
    streamed = np.concatenate(parts)
    whole = resample(x, 16000, 8000)
    assert len(streamed) == len(whole)
    assert np.max(np.abs(streamed - whole)) < 1e-4


def test_frame_resampler_gives_one_frame_per_frame_for_many_calls() -> None:
    x = synth.tone(1000, 1.0, 16000, dbfs=-10)
    calls = np.stack([x, x // 2, np.zeros_like(x)])
    fr = FrameResampler(16000, 8000, 320, channels=3)
    out = np.concatenate([fr.process(calls[:, i : i + 320]) for i in range(0, len(x), 320)], axis=1)
    assert out.shape == (3, 8000) and out.dtype == np.int16
    delay = round(fr.latency_s * 8000)
    assert 0 < fr.latency_s < 0.2
    assert not out[:, : delay - 20].any()
    ref = resample(x, 16000, 8000)
    assert np.max(np.abs(out[0, delay:].astype(int) - ref[: 8000 - delay])) <= 1
    assert not out[2].any()
