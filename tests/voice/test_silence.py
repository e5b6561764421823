"""The silence gate shared by the WebRTC transports: sound, a short tail, and pauses while playing."""

from __future__ import annotations

import numpy as np
import pytest

from tamesu.voice.silence import SILENT_PEAK, SilenceGate, silent

pytestmark = pytest.mark.unit

RATE = 16000
FRAME = RATE // 50


def frame(peak: int) -> np.ndarray:
    samples = np.zeros(FRAME, dtype=np.int16)
    samples[FRAME // 2] = peak
    return samples


def test_a_frame_is_silent_up_to_the_peak() -> None:
    assert silent(np.zeros(0, dtype=np.int16))
    assert silent(frame(SILENT_PEAK)) and silent(frame(-SILENT_PEAK))
    assert not silent(frame(SILENT_PEAK + 1)) and not silent(frame(-32768))


def test_a_stream_that_starts_silent_passes_nothing() -> None:
    gate = SilenceGate(tail_s=0.1)
    assert [gate.passes(frame(0), RATE) for _ in range(10)] == [False] * 10


def test_sound_then_its_tail_pass_and_longer_silence_does_not() -> None:
    gate = SilenceGate(tail_s=0.1)
    assert gate.passes(frame(5000), RATE)
    tail = [gate.passes(frame(10), RATE) for _ in range(8)]
    assert tail == [True] * 5 + [False] * 3  # 100 ms of tail: five 20 ms frames
    assert gate.passes(frame(5000), RATE), "sound passes again and restarts the tail"
    assert gate.passes(frame(0), RATE)


def test_silence_passes_while_speech_is_still_queued_to_play() -> None:
    gate = SilenceGate(tail_s=0.0)
    gate.passes(frame(5000), RATE)
    assert gate.passes(frame(0), RATE, playing=True)
    assert not gate.passes(frame(0), RATE, playing=False)


def test_channels_count_towards_the_frames_length() -> None:
    gate = SilenceGate(tail_s=0.02)
    gate.passes(frame(5000), RATE)
    stereo = np.zeros(2 * FRAME, dtype=np.int16)  # 20 ms of two channels
    assert gate.passes(stereo, RATE, 2)
    assert not gate.passes(stereo, RATE, 2)
