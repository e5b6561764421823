"""Timing on speech segments: when audio starts after a moment, gaps between parties, talk-over.

Pure functions over ``Segment`` lists (seconds on one run clock), so voice metrics such as the
agent's response latency or barge-in overlap are computed the same way from live VAD events or
from a recording analysed afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Segment", "first_audio_after", "merge", "overlap", "response_gaps", "total"]


@dataclass(frozen=True, order=True)
class Segment:
    """A stretch of speech, in seconds."""

    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


def merge(segments: Iterable[Segment], *, gap: float = 0.0) -> list[Segment]:
    """Sorted segments with those closer than ``gap`` joined."""
    out: list[Segment] = []
    for seg in sorted(segments):
        if out and seg.start - out[-1].end <= gap:
            out[-1] = Segment(out[-1].start, max(out[-1].end, seg.end))
        else:
            out.append(seg)
    return out


def first_audio_after(segments: Sequence[Segment], t: float) -> float | None:
    """Seconds from ``t`` until speech is heard: 0 when speech is already under way at ``t``, None when none follows."""
    for seg in sorted(segments):
        if seg.end > t:
            return max(0.0, seg.start - t)
    return None


def response_gaps(speaker: Sequence[Segment], responder: Sequence[Segment]) -> list[float]:
    """For each of ``speaker``'s segments, seconds from its end until ``responder`` next starts.

    Negative when the responder started before the speaker finished (talk-over); segments the
    responder never answered are left out.
    """
    starts = sorted(s.start for s in responder)
    gaps = []
    ordered = sorted(speaker)
    for i, seg in enumerate(ordered):
        limit = ordered[i + 1].end if i + 1 < len(ordered) else float("inf")
        nxt = [s for s in starts if seg.start < s < limit]
        if nxt:
            gaps.append(nxt[0] - seg.end)
    return gaps


def overlap(a: Sequence[Segment], b: Sequence[Segment]) -> float:
    """Seconds during which both parties speak."""
    total_s = 0.0
    for x in merge(a):
        for y in merge(b):
            total_s += max(0.0, min(x.end, y.end) - max(x.start, y.start))
    return total_s


def total(segments: Iterable[Segment]) -> float:
    """Seconds of speech (overlaps counted once)."""
    return sum(s.duration for s in merge(segments))
