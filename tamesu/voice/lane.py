"""A lane: the calls that share a wire format and a line model, carried through a call's stages
(``stage``) together, one ``AudioBatch`` per 20 ms tick.

One tick of a lane is this graph (the messages are in ``tamesu.kernel.messages``)::

    Tick -> caller --AudioBatch(caller)--> line --AudioBatch(caller, wire)--> transport
                                               --AudioBatch(caller, heard)--> recorder
            transport --AudioBatch(agent, played)--> listener, recorder

The caller stage speaks each call's utterances (``caller``), the line adds noise and runs the line
model and the wire's codec (``line``), the transport hands each call's wire its frame and plays
the agent's audio (``transport``), the listener runs the VAD and each call's ear (``listener``),
the recorder keeps both channels (``recording``). What a stage learns about one call
(``CallerSpoke``, ``MarksPlayed``, ``AgentTones``, ``AgentSpeech``) it reports to the lane, which
hands it to that call once the tick is done; what a call tells its stages between ticks (the
agent's audio as ``AudioFrame``, ``AgentMark``, ``AgentClear``) goes to the transport stage.

A stage handles a message at once, in the ticker's task: a frame cannot wait for a task switch.
With ``boundary`` every message is encoded and decoded on its way into a stage (and to a call), as
if each stage sat in another process (the tests use it, so that the stages stay honest about what they share).
The heavy engines are not stages of a lane: TTS and STT are shared pools (``tamesu.speech_pool``)
that the calls reach through the run's services.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from tamesu.kernel.messages import (
    AgentClear,
    AgentMark,
    AudioFrame,
    Message,
    Tick,
)

from .stage import FRAME_S, CallReport, FrameEar, LaneKey, Stage

if TYPE_CHECKING:
    from .recording import CallRecording
    from .speech import Utterance

__all__ = ["CallAudio", "Lane"]


class CallAudio:
    """One call as its lane sees it: its wire format and line, where its frames go (``send``), where
    the stages' reports about it go (``report``), its caller's background noise, its listener's ear
    and its recording; once attached, its slot and the run-clock time of its frame 0 (``t0``).
    ``ahead_s`` bounds the agent's audio waiting to be played, before the call joined its lane too."""

    def __init__(
        self,
        *,
        rate: int,
        encoding: str = "pcm16",
        line: str | None = None,
        seed: int = 0,
        send: Callable[[bytes], None],
        report: Callable[[CallReport], None] | None = None,
        noise: Any = None,
        ear: FrameEar | None = None,
        recording: CallRecording | None = None,
        ahead_s: float | None = None,
    ) -> None:
        from tamesu.audio.codec import normalise_encoding

        self.rate = rate
        self.encoding = normalise_encoding(encoding)
        self.line = line
        self.seed = seed
        self.send: Callable[[bytes], None] | None = send
        self.report: Callable[[CallReport], None] | None = report
        self.noise = noise
        """A ``NoiseMixer`` (anything with ``mix(frame)``) applied to the caller's frames before the line."""
        self.ear = ear
        self.recording = recording
        self.t0 = 0.0
        self.line_latency = 0.0
        self.lane: Lane | None = None
        self.slot = -1
        self.early: list[AudioFrame | AgentMark | AgentClear] = []
        """What the agent sent before the call joined its lane (it is played once the call has)."""
        self.ahead = None if ahead_s is None else int(ahead_s * rate)
        """The most samples of the agent's audio that may wait to be played (None: no bound)."""
        self._early_samples = 0
        self._early_dropped = 0
        self._dropped = 0
        self._frames = 0

    @property
    def key(self) -> LaneKey:
        return (self.rate, self.encoding, self.line)

    @property
    def frames(self) -> int:
        """Frames sent since the call was attached."""
        lane = self.lane
        return int(lane.k[self.slot]) if lane is not None else self._frames

    def time_of(self, frame: float) -> float:
        """The run-clock time of the start of frame ``frame`` of this call."""
        return self.t0 + frame * FRAME_S

    @property
    def now(self) -> float:
        """The run-clock time of the next frame to be sent."""
        return self.time_of(self.frames)

    @property
    def talking(self) -> bool:
        """Whether the caller has audio playing or queued."""
        lane = self.lane
        return lane is not None and lane.caller.talking(self.slot)

    @property
    def buffered(self) -> int:
        """Samples of the agent's audio still to be played."""
        play = self.lane.transport.playouts[self.slot] if self.lane is not None else None
        return play.buffered if play is not None else 0

    @property
    def buffered_s(self) -> float:
        return self.buffered / self.rate

    @property
    def dropped(self) -> int:
        """Samples of the agent's audio dropped because more than ``ahead`` were waiting."""
        play = self.lane.transport.playouts[self.slot] if self.lane is not None else None
        return self._dropped + self._early_dropped + (play.dropped if play is not None else 0)

    def note_dropped(self, samples: int) -> None:
        """Keep the count of a playout the call is leaving (its lane forgets it)."""
        self._dropped += samples

    def say(self, utterance: Utterance) -> None:
        """Queue an utterance; a ``CallerSpoke`` reports it once its last sample is sent (or it is stopped)."""
        if self.lane is not None:
            self.lane.caller.say(self.slot, utterance)

    def hush(self) -> None:
        """Stop talking now: the utterance in progress is cut and the queue dropped."""
        if self.lane is not None:
            self.lane.caller.hush(self.slot)

    def play(self, samples: np.ndarray, *, seq: int = 0, at: float = 0.0) -> None:
        """The agent's audio (int16 at the call's rate) to be played after what is queued."""
        if len(samples):
            pcm = np.asarray(samples, dtype="<i2").tobytes()
            self._transport(
                AudioFrame(seq=seq, pcm=pcm, sample_rate=self.rate, channel="agent", call=self.slot, at=at)
            )

    def mark(self, name: str, *, at: float = 0.0) -> None:
        self._transport(AgentMark(call=self.slot, name=name, at=at))

    def clear(self, *, at: float = 0.0) -> None:
        """Drop the agent's queued audio; its pending marks are reported played."""
        self._transport(AgentClear(call=self.slot, at=at))

    def _transport(self, msg: AudioFrame | AgentMark | AgentClear) -> None:
        if self.lane is not None:
            self.lane.transport.deliver(msg)
        elif self.send is not None:
            if isinstance(msg, AudioFrame) and self.ahead is not None:
                samples = len(msg.pcm) // 2
                if self._early_samples + samples > self.ahead:
                    self._early_dropped += samples
                    return
                self._early_samples += samples
            elif isinstance(msg, AgentClear):
                self._early_samples = 0
            self.early.append(msg)


class Lane:
    """Up to ``capacity`` calls of one wire format and line model, ticked together through the stages."""

    def __init__(
        self, key: LaneKey, capacity: int, *, boundary: Callable[[Message], Message] | None = None
    ) -> None:
        from .caller import CallerStage
        from .line import LineStage
        from .listener import ListenerStage
        from .recording import RecorderStage
        from .transport import TransportStage

        self.key = key
        self.rate, self.encoding, _ = key
        self.frame = self.rate // 50
        self.capacity = capacity
        self.boundary = boundary
        self.calls: list[CallAudio | None] = [None] * capacity
        self.k = np.zeros(capacity, dtype=np.int64)
        """Frames sent by the call in each slot."""
        self.free = list(range(capacity - 1, -1, -1))
        self.active: tuple[int, ...] = ()
        self._active_idx = np.zeros(0, dtype=np.int64)
        self.seq = 0
        self._ticking = False
        self._reports: list[CallReport] = []
        self.caller = CallerStage(self)
        self.line = LineStage(self)
        self.transport = TransportStage(self)
        self.listener = ListenerStage(self)
        self.recorder = RecorderStage(self)
        self.caller.connect(self.line)
        self.line.connect(self.transport, self.recorder)
        self.transport.connect(self.listener, self.recorder)
        self.stages: tuple[Stage, ...] = (
            self.caller,
            self.line,
            self.transport,
            self.listener,
            self.recorder,
        )

    def attach(self, call: CallAudio) -> None:
        slot = self.free.pop()
        self.calls[slot] = call
        self.k[slot] = 0
        self._set_active(sorted((*self.active, slot)))
        call.lane, call.slot = self, slot
        call.line_latency = self.line.latency
        for stage in self.stages:
            stage.attach(slot, call)
        early, call.early = call.early, []
        for msg in early:
            self.transport.deliver(msgspec.structs.replace(msg, call=slot))

    def detach(self, call: CallAudio) -> None:
        slot = call.slot
        if slot < 0 or self.calls[slot] is not call:
            return
        play = self.transport.playouts[slot]
        call.note_dropped(play.dropped if play is not None else 0)
        for stage in self.stages:
            stage.detach(slot)
        call._frames = int(self.k[slot])
        self.calls[slot] = None
        self._set_active([s for s in self.active if s != slot])
        self.free.append(slot)
        call.lane, call.slot = None, -1

    def _set_active(self, slots: list[int]) -> None:
        self.active = tuple(slots)
        self._active_idx = np.array(slots, dtype=np.int64)

    def time_of(self, slot: int) -> float:
        """The run-clock time of the frame the call in ``slot`` sends in this tick."""
        call = self.calls[slot]
        return call.time_of(int(self.k[slot])) if call is not None else 0.0

    def tick(self) -> None:
        """One 20 ms step of every call of the lane; the calls hear the stages' reports after it."""
        self.seq += 1
        self._ticking = True
        try:
            self.caller.deliver(Tick(seq=self.seq))
            self.k[self._active_idx] += 1
        finally:
            self._ticking = False
            reports, self._reports = self._reports, []
            for msg in reports:
                self._hand(msg)

    def report(self, msg: CallReport) -> None:
        """A stage's news about one call (``msg.call``): handed to the call after the tick, or now."""
        if self._ticking:
            self._reports.append(msg)
        else:
            self._hand(msg)

    def _hand(self, msg: CallReport) -> None:
        call = self.calls[msg.call]
        if call is not None and call.report is not None:
            call.report(msg if self.boundary is None else self.boundary(msg))  # type: ignore[arg-type]
