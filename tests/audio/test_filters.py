from __future__ import annotations

import numpy as np
import pytest

from tamesu.audio.filters import BlockFilter, butterworth_sos, sos_gain_db, sosfilt_reference

pytestmark = pytest.mark.unit


def test_butterworth_is_3db_down_at_cutoffs() -> None:
    sos = butterworth_sos(8000, highpass_hz=300, lowpass_hz=3400)
    assert sos_gain_db(sos, 300, 8000) == pytest.approx(-3.01, abs=0.05)
    assert sos_gain_db(sos, 3400, 8000) == pytest.approx(-3.01, abs=0.05)
    assert abs(sos_gain_db(sos, 1000, 8000)) < 0.1


def test_block_filter_equals_the_sample_recursion_across_frames() -> None:
    rng = np.random.default_rng(1)
    sos = butterworth_sos(8000, highpass_hz=300, lowpass_hz=3400)
    x = rng.standard_normal((3, 800)).astype(np.float32) * 0.3
    bank = BlockFilter(sos, 160, 3)
    y = np.concatenate([bank.process(x[:, i : i + 160]).copy() for i in range(0, 800, 160)], axis=1)
    for call in range(3):
        assert np.max(np.abs(y[call] - sosfilt_reference(sos, x[call]))) < 1e-4


def test_reset_forgets_one_call() -> None:
    sos = butterworth_sos(8000, lowpass_hz=1000)
    bank = BlockFilter(sos, 160, 2)
    bank.process(np.ones((2, 160), np.float32))
    bank.reset(0)
    out = bank.process(np.zeros((2, 160), np.float32))
    assert not out[0].any() and out[1].any()


def test_bad_cutoffs_are_refused() -> None:
    with pytest.raises(ValueError):
        butterworth_sos(8000, lowpass_hz=4000)
    with pytest.raises(ValueError):
        butterworth_sos(8000, highpass_hz=300, order=3)
