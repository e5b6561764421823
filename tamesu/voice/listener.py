"""The listener: the caller's ear on the agent's side of the call.

``ListenerStage`` is the lane's stage after the transport: each tick it runs the VAD over the
frames the agent played, for every call of the lane in one ``TurnDetectorBank`` step (webrtcvad,
asked only about the calls that played audio; a detector per call at rates webrtcvad cannot
take), reports the agent's speech starting and ending (``AgentSpeech``) and hands each call's
``Listener`` its frame. The ``Listener`` keeps what one turn needs: the frames heard since the
turn began (only when they are to be transcribed), the agent's own transcripts, the keypad tones
in its audio (``AgentTones``). At the end of a turn ``words`` gives the turn's text from the
source the target's ``transcript_source`` names (``auto``: the agent's transcript when it sent
one, else speech-to-text of its audio through the run's speech pool).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tamesu.errors import MissingExtraError
from tamesu.kernel.messages import AgentSpeech, AgentTones, AudioBatch, Message

from .speech import transcribe
from .stage import Stage, rows_of

if TYPE_CHECKING:
    from tamesu.audio.timing import Segment
    from tamesu.speech_pool import SpeechPool

    from .lane import CallAudio, Lane
    from .settings import VoiceSettings
    from .stage import FrameEar

__all__ = ["Heard", "Listener", "ListenerStage"]

PAD_S = 0.15
"""Audio kept on each side of the agent's speech when it is transcribed."""
_NO_IDLE = 1e9


class _PlayedVad:
    """webrtcvad per slot (a ``FrameClassifier``); ``decide`` asks it only about the slots that
    played agent audio this frame, since a frame of digital silence is never speech."""

    def __init__(self, capacity: int, rate: int, mode: int = 2) -> None:
        try:
            import webrtcvad
        except ImportError as exc:
            raise MissingExtraError("webrtcvad (voice activity detection)", extra="voice") from exc
        self._lib = webrtcvad
        self.rate, self.mode = rate, mode
        self.frame = rate // 50
        self.vads = [webrtcvad.Vad(mode) for _ in range(capacity)]
        self.speech = np.zeros(capacity, dtype=bool)

    def classify(self, frames: np.ndarray) -> np.ndarray:
        return np.fromiter(
            (v.is_speech(r.tobytes(), self.rate) for v, r in zip(self.vads, frames)), bool, len(frames)
        )

    def decide(self, frames: np.ndarray, played: list[int]) -> np.ndarray:
        speech = self.speech
        speech.fill(False)
        rate, vads = self.rate, self.vads
        for i in played:
            speech[i] = vads[i].is_speech(frames[i].tobytes(), rate)
        return speech

    def reset(self, index: int) -> None:
        self.vads[index] = self._lib.Vad(self.mode)


class ListenerStage(Stage):
    """The VAD and the ears of the calls of one lane."""

    def __init__(self, lane: Lane) -> None:
        from tamesu.audio.vad import WEBRTC_RATES, TurnDetectorBank

        super().__init__(lane)
        self.classifier: _PlayedVad | None = None
        self.vad: Any = None
        if lane.rate in WEBRTC_RATES:
            self.classifier = _PlayedVad(lane.capacity, lane.rate)
            self.vad = TurnDetectorBank(self.classifier, lane.capacity, idle=_NO_IDLE)
        self.own: dict[int, Any] = {}
        """A ``TurnDetector`` per slot where webrtcvad cannot take the rate."""
        self.ears: dict[int, FrameEar] = {}

    def attach(self, slot: int, call: CallAudio) -> None:
        if self.vad is not None:
            self.vad.reset(slot)
        else:
            from tamesu.audio.vad import TurnDetector

            self.own[slot] = TurnDetector(call.rate, idle=_NO_IDLE)
        if call.ear is not None:
            self.ears[slot] = call.ear

    def detach(self, slot: int) -> None:
        self.own.pop(slot, None)
        self.ears.pop(slot, None)

    def handle(self, msg: Message) -> None:
        if not isinstance(msg, AudioBatch) or msg.channel != "agent":
            return
        lane, p = self.lane, rows_of(msg)
        events: list[tuple[int, Any]] = []
        if self.vad is not None and self.classifier is not None:
            played = np.flatnonzero(p.any(axis=1)).tolist()
            events = self.vad.process_decisions(self.classifier.decide(p, played))
        for i, detector in self.own.items():
            events += [(i, e) for e in detector.push(p[i])]
        for i, ear in self.ears.items():
            at = lane.time_of(i)
            digits = ear.frame(p[i], at)
            if digits:
                lane.report(AgentTones(call=i, digits=digits, at=at))
        for i, event in events:
            call = lane.calls[i]
            if call is not None and event.kind != "turn_end":
                lane.report(AgentSpeech(call=i, kind=event.kind, at=call.t0 + event.at))


@dataclass
class Heard:
    """A finished turn's words and where they came from; ``stt`` / ``agent`` keep both when both exist."""

    text: str
    source: str
    """agent, stt or none."""
    stt: str | None = None
    agent: str | None = None
    caller: str | None = None
    """What the agent heard the caller say this turn, when it publishes its transcript of the caller."""
    segment_text: dict[int, str] = field(default_factory=dict)
    """Index into the turn's agent segments -> the words heard in it (from STT segment times)."""


class Listener:
    """One call's agent channel, turn by turn (a ``FrameEar`` of the listener stage)."""

    def __init__(self, settings: VoiceSettings, *, speech: SpeechPool) -> None:
        self.settings = settings
        self.speech = speech
        self.rate = settings.rate
        self.transcripts: list[str] = []
        self.caller_transcripts: list[str] = []
        """The agent's transcripts of the caller since the previous turn ended."""
        self._frames: list[np.ndarray] = []
        self._t0 = 0.0
        self._collect = settings.wants_stt
        self._dtmf: Any = None
        if settings.detect_dtmf:
            from tamesu.audio.dtmf import DtmfDetector

            self._dtmf = DtmfDetector(self.rate)

    @property
    def hears_frames(self) -> bool:
        """Whether each played frame is needed (speech-to-text, DTMF detection)."""
        return self._collect or self._dtmf is not None

    def frame(self, agent: np.ndarray, at: float) -> str:
        """One played frame of agent audio; the keypad digits completed in it."""
        if self._collect:
            if not self._frames:
                self._t0 = at
            self._frames.append(agent.copy())
        if self._dtmf is None:
            return ""
        return "".join(event.digit for event in self._dtmf.push(agent))

    async def words(self, segments: list[Segment]) -> Heard:
        """The turn's text per ``transcript_source``; ``segments`` are the agent's speech in this turn.

        What was heard since the previous turn ended is used up, so audio and transcripts that
        arrive between turns (while the simulated user thinks) belong to the next one.
        """
        texts, self.transcripts = self.transcripts, []
        agent = " ".join(t.strip() for t in texts if t.strip()) or None
        said, self.caller_transcripts = self.caller_transcripts, []
        caller = " ".join(t.strip() for t in said if t.strip()) or None
        source = self.settings.transcript_source
        if source == "agent" or (source == "auto" and agent is not None):
            self._frames = []
            return Heard(agent or "", "agent" if agent else "none", agent=agent, caller=caller)
        heard = await self._stt(segments)
        if heard is None:
            return Heard(agent or "", "agent" if agent else "none", agent=agent, caller=caller)
        heard.agent = agent
        heard.caller = caller
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
        from tamesu.audio.engines import stt_for

        s = self.settings
        engine = s.stt_engine or stt_for(self.rate, s.language)
        result = await transcribe(
            audio[start:end], self.rate, pool=self.speech, language=s.language, engine=engine
        )
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
