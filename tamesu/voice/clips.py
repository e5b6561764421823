"""A replayed caller's recorded speech, made an ``Utterance`` at the call's rate.

The clip is read from the recording (one channel, a span of it), resampled to the wire's rate and
levelled like synthesised speech, so the line and noise apply to it as to a persona's voice. Clips
are cached per (file, channel, span, rate): every repeat of a replayed test says the same audio.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from tamesu.errors import TargetError

from .speech import make_utterance

if TYPE_CHECKING:
    from tamesu.kernel.messages import AudioClip

    from .speech import Utterance

__all__ = ["clip_utterance"]


def clip_utterance(clip: AudioClip, rate: int, *, text: str = "") -> Utterance:
    """The clip's samples at ``rate``; an unreadable clip is a config error of the run, not a crash."""
    from tamesu.audio.recorded import RecordingError

    try:
        return _load(clip.path, clip.channel, clip.start, clip.end, rate, text)
    except RecordingError as exc:
        raise TargetError(f"the replayed caller: {exc}", retryable=False, kind="config") from None


@lru_cache(maxsize=256)
def _load(
    path: str, channel: int | None, start: float | None, end: float | None, rate: int, text: str
) -> Utterance:
    from tamesu.audio.recorded import read_span
    from tamesu.audio.resample import resample

    samples, own = read_span(path, channel=channel, start=start, end=end)
    if own != rate:
        samples = resample(samples, own, rate)
    return make_utterance(samples, rate, text=text)
