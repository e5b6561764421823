"""The agent's side of a call as the caller hears it: speech segments, words, keypad tones.

The pump plays the agent's audio and runs the VAD; the ``Listener`` keeps what one turn needs from
that: the frames heard since the turn began (only when they are to be transcribed), the agent's
own transcripts and tool calls from its control messages, and the DTMF digits in its audio. At the
end of a turn ``words`` gives the turn's text from the source the target's ``transcript_source``
names (``auto``: the agent's transcript when it sent one, else speech-to-text of its audio).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tamesu.audio.timing import Segment

from .speech import transcribe

if TYPE_CHECKING:
    from .settings import VoiceSettings

__all__ = ["Heard", "Listener"]

PAD_S = 0.15
"""Audio kept on each side of the agent's speech when it is transcribed."""


@dataclass
class Heard:
    """A finished turn's words and where they came from; ``stt`` / ``agent`` keep both when both exist."""

    text: str
    source: str
    """agent, stt or none."""
    stt: str | None = None
    agent: str | None = None
    segment_text: dict[int, str] = field(default_factory=dict)
    """Index into the turn's agent segments -> the words heard in it (from STT segment times)."""


class Listener:
    """One call's agent channel, turn by turn."""

    def __init__(self, settings: VoiceSettings) -> None:
        self.settings = settings
        self.rate = settings.rate
        self.transcripts: list[str] = []
        self._frames: list[np.ndarray] = []
        self._t0 = 0.0
        self._collect = settings.wants_stt
        self._dtmf: Any = None
        self.dtmf_heard: list[tuple[str, float]] = []
        if settings.detect_dtmf:
            from tamesu.audio.dtmf import DtmfDetector

            self._dtmf = DtmfDetector(self.rate)
        self._played = 0

    def frame(self, agent: np.ndarray, at: float) -> None:
        """One played frame of agent audio (called by the pump for every frame of the call)."""
        if self._collect:
            if not self._frames:
                self._t0 = at
            self._frames.append(agent.copy())
        if self._dtmf is not None:
            for event in self._dtmf.push(agent):
                self.dtmf_heard.append((event.digit, at))

    async def words(self, segments: list[Segment]) -> Heard:
        """The turn's text per ``transcript_source``; ``segments`` are the agent's speech in this turn.

        What was heard since the previous turn ended is used up, so audio and transcripts that
        arrive between turns (while the simulated user thinks) belong to the next one.
        """
        texts, self.transcripts = self.transcripts, []
        agent = " ".join(t.strip() for t in texts if t.strip()) or None
        source = self.settings.transcript_source
        if source == "agent" or (source == "auto" and agent is not None):
            self._frames = []
            return Heard(agent or "", "agent" if agent else "none", agent=agent)
        heard = await self._stt(segments)
        if heard is None:
            return Heard(agent or "", "agent" if agent else "none", agent=agent)
        heard.agent = agent
        return heard

    async def _stt(self, segments: list[Segment]) -> Heard | None:
        frames, self._frames = self._frames, []
        if not segments or not frames:
            return None
        audio = np.concatenate(frames)
        start = max(0, int((segments[0].start - PAD_S - self._t0) * self.rate))
        end = min(len(audio), int((segments[-1].end + PAD_S - self._t0) * self.rate))
        if end - start < self.rate // 10:
            return None
        s = self.settings
        result = await transcribe(audio[start:end], self.rate, language=s.language, engine=s.stt_engine)
        offset = self._t0 + start / self.rate
        by_segment: dict[int, list[str]] = {}
        for part in result.segments:
            mid = offset + (part.start + part.end) / 2
            best = min(range(len(segments)), key=lambda i: _distance(segments[i], mid))
            by_segment.setdefault(best, []).append(part.text.strip())
        text = result.text.strip()
        if not by_segment and text:
            by_segment[0] = [text]
        return Heard(
            text,
            "stt",
            stt=text,
            segment_text={i: " ".join(t for t in parts if t) for i, parts in by_segment.items()},
        )


def _distance(seg: Segment, t: float) -> float:
    if seg.start <= t <= seg.end:
        return 0.0
    return min(abs(seg.start - t), abs(seg.end - t))
