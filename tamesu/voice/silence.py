"""Continuous audio streams and the silence in them.

A WebRTC track never stops: when the agent is quiet it streams silence (or codec noise), in real
time. Passed on as it comes, that silence would keep the call's playout from ever running empty,
and no turn would end. ``SilenceGate`` decides frame by frame what to pass on: every frame with
sound, the silence right after it (``tail_s``: quiet syllables, the ends of words), and silence
while the caller still has the agent's speech queued to play (a pause between words); nothing
else. ``silent`` is the shared test of a frame.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SILENT_PEAK", "SilenceGate", "silent"]

SILENT_PEAK = 300
"""Peak (int16) at or under which a frame is silence (Opus and resampling leave a little noise)."""


def silent(samples: np.ndarray, peak: int = SILENT_PEAK) -> bool:
    """No sample of ``samples`` (PCM16) louder than ``peak``."""
    return not len(samples) or int(np.abs(samples.astype(np.int32)).max()) <= peak


class SilenceGate:
    """Which frames of a continuous stream to pass on (see the module docstring)."""

    def __init__(self, tail_s: float = 0.2, peak: int = SILENT_PEAK) -> None:
        self.tail_s = tail_s
        self.peak = peak
        self.quiet_s = tail_s
        """Silence since the last frame with sound; a stream starts past its tail."""

    def passes(self, samples: np.ndarray, rate: int, channels: int = 1, *, playing: bool = False) -> bool:
        """Whether this frame (PCM16 at ``rate``, ``channels`` interleaved) is passed on;
        ``playing``: the caller still has audio queued to play, so a pause is kept."""
        seconds = len(samples) / max(1, rate * channels)
        return self.keep(silent(samples, self.peak), seconds, playing=playing)

    def keep(self, is_silent: bool, seconds: float, *, playing: bool = False) -> bool:
        """``passes`` for a frame already judged: silent or not, ``seconds`` long."""
        if not is_silent:
            self.quiet_s = 0.0
            return True
        self.quiet_s += seconds
        return playing or self.quiet_s <= self.tail_s
