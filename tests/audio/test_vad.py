from __future__ import annotations

import time

import numpy as np
import pytest

from tamesu.audio import synth
from tamesu.audio.timing import Segment
from tamesu.audio.vad import TurnDetector, TurnDetectorBank, WebRtcVad, speech_segments

pytestmark = pytest.mark.unit

TRUTH = [Segment(0.5, 2.0), Segment(3.0, 5.0)]


def _signal(rate: int) -> np.ndarray:
    return np.concatenate([synth.silence(0.5, rate), synth.turns([(1.5, 1.0), (2.0, 3.0)], rate, seed=1)])


@pytest.mark.parametrize("rate", [8000, 16000, 48000, 24000])
def test_segments_of_speech_like_turns(rate: int) -> None:
    segments = speech_segments(_signal(rate), rate)
    assert len(segments) == 2
    for found, truth in zip(segments, TRUTH):
        assert abs(found.start - truth.start) < 0.12
        assert abs(found.end - truth.end) < 0.15


def test_speech_from_the_first_sample() -> None:
    (segment,) = speech_segments(synth.speech_like(1.0, 16000), 16000)
    assert segment.start < 0.1 and abs(segment.end - 1.0) < 0.15


def test_silence_and_low_noise_are_not_speech() -> None:
    rng = np.random.default_rng(0)
    quiet = (rng.standard_normal(16000 * 3) * 30).astype(np.int16)
    assert speech_segments(quiet, 16000) == []
    assert speech_segments(np.zeros(16000, np.int16), 16000) == []


def test_streaming_events_and_latency() -> None:
    x = _signal(16000)
    det = TurnDetector(16000, hangover_ms=300, idle=2.0)
    events = []
    for i in range(0, len(x), 320):
        events += det.push(x[i : i + 320].astype("<i2").tobytes())
    kinds = [e.kind for e in events]
    assert kinds == ["speech_start", "speech_end", "speech_start", "speech_end", "turn_end"]
    ends = [e for e in events if e.kind == "speech_end"]
    for e, truth in zip(ends, TRUTH):
        assert e.decided_at - e.at == pytest.approx(0.3, abs=0.021)
        assert 0.3 <= e.decided_at - truth.end <= 0.45
    turn = events[-1]
    assert turn.at == ends[-1].at
    assert turn.decided_at - turn.at == pytest.approx(2.0, abs=0.021)
    assert det.segments == [Segment(events[0].at, ends[0].at), Segment(events[2].at, ends[1].at)]


def test_a_pause_shorter_than_idle_does_not_end_the_turn() -> None:
    x = synth.turns([(1.0, 1.2), (1.0, 2.5)], 16000)
    det = TurnDetector(16000, idle=1.5)
    events = det.push(x)
    assert [e.kind for e in events].count("turn_end") == 1
    assert events[-1].kind == "turn_end" and events[-1].at > 3.0


def test_finish_closes_open_speech() -> None:
    det = TurnDetector(8000)
    det.push(synth.speech_like(1.0, 8000))
    (event,) = det.finish()
    assert event.kind == "speech_end" and det.segments and det.segments[0].end == event.at


def test_bank_tracks_calls_independently() -> None:
    rate = 8000
    a, b = _signal(rate), np.zeros(len(_signal(rate)), np.int16)
    b[rate * 2 : rate * 3] = synth.speech_like(1.0, rate, seed=5)
    bank = TurnDetectorBank(WebRtcVad(2, rate=rate), 2, idle=1.5)
    seen: dict[int, list[str]] = {0: [], 1: []}
    for i in range(0, len(a), 160):
        for call, event in bank.process(np.stack([a[i : i + 160], b[i : i + 160]])):
            seen[call].append(event.kind)
    assert seen[0] == ["speech_start", "speech_end", "speech_start", "speech_end", "turn_end"]
    assert seen[1] == ["speech_start", "speech_end", "turn_end"]
    bank.reset(0)
    assert bank.finish(0) == []


def test_vad_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        WebRtcVad(rate=22050)
    with pytest.raises(ValueError):
        WebRtcVad(mode=4)
    with pytest.raises(ValueError):
        WebRtcVad(frame_ms=25)


def test_vad_is_cheap_per_frame() -> None:
    vad = WebRtcVad(100, rate=8000)
    frames = np.tile(synth.speech_like(0.02, 8000), (100, 1))
    start = time.perf_counter()
    for _ in range(20):
        vad.classify(frames)
    per_frame = (time.perf_counter() - start) / 2000
    assert per_frame < 200e-6
