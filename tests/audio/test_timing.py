from __future__ import annotations

import pytest

from tamesu.audio.behaviour import BehaviourRNG
from tamesu.audio.timing import Segment, first_audio_after, merge, overlap, response_gaps, total

pytestmark = pytest.mark.unit


def test_first_audio_after() -> None:
    segs = [Segment(3.0, 4.0), Segment(1.0, 2.0)]
    assert first_audio_after(segs, 0.5) == pytest.approx(0.5)
    assert first_audio_after(segs, 1.5) == 0.0
    assert first_audio_after(segs, 2.5) == pytest.approx(0.5)
    assert first_audio_after(segs, 4.0) is None


def test_merge_total_and_overlap() -> None:
    segs = [Segment(0, 1), Segment(1.1, 2), Segment(3, 4)]
    assert merge(segs, gap=0.2) == [Segment(0, 2), Segment(3, 4)]
    assert total(segs) == pytest.approx(2.9)
    assert overlap([Segment(0, 2)], [Segment(1.5, 3), Segment(1.0, 1.2)]) == pytest.approx(0.7)


def test_response_gaps() -> None:
    caller = [Segment(0, 1), Segment(3, 4), Segment(6, 7)]
    agent = [Segment(1.4, 2.5), Segment(3.8, 5)]
    assert response_gaps(caller, agent) == pytest.approx([0.4, -0.2])


def test_behaviour_rng_is_seeded_and_in_range() -> None:
    a, b, c = BehaviourRNG(42), BehaviourRNG(42), BehaviourRNG(43)
    seq_a = [a.should_interrupt(0.3) for _ in range(200)]
    assert seq_a == [b.should_interrupt(0.3) for _ in range(200)]
    assert seq_a != [c.should_interrupt(0.3) for _ in range(200)]
    assert 40 <= sum(seq_a) <= 80
    rng = BehaviourRNG(1)
    assert not any(rng.should_interrupt(0.0) for _ in range(50))
    assert all(rng.should_interrupt(1.0) for _ in range(50))
    for _ in range(100):
        assert 300 / 1000 <= rng.silence_after_turn(300, 1500) <= 1.5
        assert 1.0 <= rng.interrupt_offset_s(4.0) <= 3.0
        assert 0.3 <= rng.interrupt_offset_s(0.8) <= 0.6
    assert rng.interrupt_offset_s(0.2) == pytest.approx(0.2)
    assert rng.interrupt_offset_s(0.0) == 0.0
    with pytest.raises(ValueError):
        rng.should_interrupt(1.5)
    with pytest.raises(ValueError):
        rng.silence_after_turn(900, 300)
