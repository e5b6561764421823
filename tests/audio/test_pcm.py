from __future__ import annotations

import numpy as np
import pytest

from tamesu.audio import pcm

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("rate", "samples"), [(8000, 160), (16000, 320), (24000, 480), (48000, 960)])
def test_frame_sizes(rate: int, samples: int) -> None:
    assert pcm.frame_samples(rate) == samples
    assert pcm.frame_bytes(rate) == 2 * samples
    assert pcm.frame_samples(rate, 10) == samples // 2


def test_frame_size_must_be_whole() -> None:
    with pytest.raises(ValueError):
        pcm.frame_samples(11025)


def test_bytes_round_trip_is_little_endian() -> None:
    x = np.array([0, 1, -1, 32767, -32768, 258], dtype=np.int16)
    data = pcm.to_bytes(x)
    assert data[:4] == b"\x00\x00\x01\x00"
    assert data[-2:] == b"\x02\x01"
    assert np.array_equal(pcm.from_bytes(data), x)
    with pytest.raises(ValueError):
        pcm.from_bytes(b"\x00")


def test_float_conversion_clips_and_rounds() -> None:
    f = np.array([0.0, 0.5, -1.0, 1.5, -2.0], dtype=np.float32)
    assert pcm.float_to_int16(f).tolist() == [0, 16384, -32768, 32767, -32768]
    assert pcm.int16_to_float(np.array([16384], np.int16))[0] == pytest.approx(0.5)


def test_split_frames_pads_the_tail() -> None:
    x = np.arange(350, dtype=np.int16)
    frames = pcm.split_frames(x, 8000)
    assert frames.shape == (3, 160)
    assert frames[2, 29] == 349 and frames[2, 30] == 0
    assert pcm.split_frames(x, 8000, pad=False).shape == (2, 160)


def test_framer_rechunks_any_sizes() -> None:
    x = np.arange(1000, dtype=np.int16)
    framer = pcm.Framer(160)
    out = []
    for chunk in np.split(x, [7, 200, 201, 650]):
        out += framer.push(chunk)
    assert [len(f) for f in out] == [160] * 6
    assert np.array_equal(np.concatenate(out), x[:960])
    assert framer.pending == 40
    tail = framer.flush()
    assert tail is not None and np.array_equal(tail[:40], x[960:]) and not tail[40:].any()
    assert framer.flush() is None


def test_dbfs_of_a_full_scale_sine_is_minus_3() -> None:
    t = np.arange(8000) / 8000
    assert pcm.dbfs(np.sin(2 * np.pi * 1000 * t)) == pytest.approx(-3.01, abs=0.01)
    assert pcm.dbfs(np.zeros(10, np.int16)) == -np.inf


def test_active_mask_ignores_pauses() -> None:
    x = np.concatenate([np.zeros(1600), 0.1 * np.ones(1600), np.zeros(1600)]).astype(np.float32)
    mask = pcm.active_mask(x, 8000)
    assert not mask[:1600].any() and mask[1600:3200].all() and not mask[3200:].any()
