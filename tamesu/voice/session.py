"""One phone call, turn by turn: the call's place in the stage graph, and the run's view of it.

``VoiceSession`` is what every audio target runs on. The target owns the wire (a websocket and its
protocol: ``VoiceWire``) and tells the session what arrives (audio, marks, clears, transcripts,
tool calls, the end of the call). The session is the call's node in its lane's stages (see
``lane``): the caller's utterances go to the caller stage, the agent's audio, marks and clears
to the transport stage, and the stages' reports about the call (``CallerSpoke``, ``MarksPlayed``,
``AgentTones``, ``AgentSpeech``) come back to ``hear``. A turn:

1. the caller (``caller.Caller``) pauses unless it is barging in, then speaks the user turn;
2. the agent's audio is played as it arrives and the listener's VAD finds its speech; the turn
   ends as ``turns.Conversation`` decides (quiet for ``idle``, the call ended, a barge-in);
3. the agent's words come from its own transcript or from STT (``listener.Listener``), and the
   turn's timings, speech segments and the call's voice metrics so far are reported.

Failures end the call cleanly: a dropped socket or no sound from the agent within ``turn_timeout``
is a ``TargetError``; ``stop`` always leaves the lane, closes the recording and lets go of the
wire, so a finished call is freed without the cycle collector.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tamesu.audio.behaviour import BehaviourRNG
from tamesu.clock import within
from tamesu.errors import TamesuError, TargetError
from tamesu.kernel.events import AgentCleared, AudioDropped, VoiceCall
from tamesu.kernel.messages import (
    AgentSpeech,
    AgentTones,
    CallerSpoke,
    Dtmf,
    Event,
    MarksPlayed,
    Message,
    UserTurn,
)
from tamesu.limits import LimitExceeded

from .caller import Caller
from .lane import CallAudio
from .line import caller_noise
from .listener import Listener
from .pump import FramePump
from .stage import CallReport
from .turns import Conversation

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext

    from .recording import CallRecording
    from .settings import VoiceSettings
    from .speech import Utterance
    from .turns import Turn
    from .voice_metrics import CallTimeline

__all__ = ["VoiceSession", "VoiceWire"]

AUDIBLE = 300
"""Peak (int16) above which received agent audio counts as sound rather than silence padding."""
_CLEAN_CLOSE = (1000, 1001, 1005)
"""Close codes of a call the agent hung up; anything else (or no close frame) is a dropped call."""
_EVENTS = 4096


class VoiceWire(Protocol):
    """What a session needs of its target's protocol; the target calls the session's ``heard_*``."""

    def send_audio(self, payload: bytes) -> None:
        """Queue one 20 ms frame, already encoded for the wire (never blocks)."""

    def marks_played(self, names: list[str]) -> None:
        """The audio before these marks has been played (Twilio echoes them back)."""

    async def send_dtmf(self, digits: str) -> bool:
        """Send keypad digits as protocol messages; False when the protocol has none (tones are played)."""


class VoiceSession:
    """A call's audio pipeline between a target's wire and the run (see the module docstring)."""

    def __init__(
        self, settings: VoiceSettings, ctx: TargetContext, wire: VoiceWire, *, pump: FramePump | None = None
    ) -> None:
        from tamesu.speech_pool import local_speech_pool

        self.settings = settings
        self.ctx = ctx
        self.clock = ctx.clock
        self.wire: VoiceWire | None = wire
        self.pump = pump
        speech = ctx.speech or local_speech_pool()
        rng = BehaviourRNG(settings.seed)
        self.conversation = Conversation(settings, rng)
        self.caller = Caller(settings, speech=speech, clock=self.clock, rng=rng)
        self.listener = Listener(settings, speech=speech)
        self.recording: CallRecording | None = None
        self.recording_path: str | None = None
        self.call = CallAudio(
            rate=settings.rate,
            encoding=settings.encoding,
            line=settings.line_quality,
            seed=settings.seed,
            send=wire.send_audio,
            report=self.hear,
            noise=caller_noise(settings),
            ear=self.listener if self.listener.hears_frames else None,
            ahead_s=ctx.limits.audio_ahead,
        )
        self._saying: deque[Utterance] = deque()
        self._events: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue(_EVENTS)
        self._dropped = 0
        self._closed: tuple[int | None, str] | None = None
        self._announced = False
        self._started = False
        self._flooded = False

    @property
    def timeline(self) -> CallTimeline:
        return self.conversation.timeline

    @property
    def agent_speaking(self) -> bool:
        return self.conversation.agent_speaking

    @property
    def agent_audible(self) -> bool:
        """The agent is speaking, or has audio still to play: what a client app would stop."""
        return self.conversation.agent_speaking or self.call.buffered > 0

    async def start(self) -> None:
        """Open the line: the pump starts sending the caller's frames (silence until it speaks)."""
        if self.settings.recording_dir is not None:
            from tamesu.untrusted import safe_name

            from .recording import CallRecording

            name = safe_name(f"{self.ctx.run_id}", key=f"{self.ctx.run_id}/{self.ctx.session}") + ".wav"
            self.recording = CallRecording(self.settings.recording_dir / name, self.settings.rate)
            self.recording_path = f"{self.settings.recording_dir.name}/{name}"
            self.call.recording = self.recording
        now = self.clock.now()
        self.conversation.begin(now)
        self.pump = self.pump or FramePump.shared()
        self.pump.attach(self.call, t0=now)
        self._started = True

    async def stop(self) -> None:
        """Hang up the audio side: leave the lane, close the recording, let go of the wire (never raises)."""
        if self.pump is not None and self._started:
            self.pump.detach(self.call)
        self._started = False
        if self.timeline.ended is None:
            self.timeline.ended = self.clock.now()
        if self.recording is not None:
            with contextlib.suppress(Exception):
                self.recording.close()
        self.wire = None
        self.call.send = self.call.report = None

    # What the target's wire reports.

    def heard_audio(self, samples: np.ndarray) -> None:
        """Agent audio arrived (int16 at the call's rate); it is queued to be played."""
        now = self.clock.now()
        self.call.play(samples, at=now)
        if not self._flooded and self.call.dropped:
            self._flooded = True
            self._post("flood")
        t = self.conversation.turn
        if t is not None and t.first_rx is None and len(samples) and int(np.abs(samples).max()) > AUDIBLE:
            self.conversation.sound(now)

    def heard_mark(self, name: str) -> None:
        self.call.mark(name, at=self.clock.now())

    def heard_clear(self, *, reason: str = "clear") -> None:
        """The agent dropped its queued audio (Twilio ``clear``, an ``interrupted`` message)."""
        self.call.clear(at=self.clock.now())
        self.conversation.cleared(self.call.now)
        cleared = AgentCleared(reason=reason, at=self.clock.now())
        self._post("message", Event(event=cleared, at=cleared.at))

    def heard_message(self, msg: Message, *, activity: bool = True) -> None:
        """A run message from the agent's control channel (ToolCall, RawResponse, ...)."""
        if activity:
            self.conversation.activity(self.clock.now())
        self._post("message", msg)

    def heard_transcript(self, text: str) -> None:
        self.listener.transcripts.append(text)
        self.conversation.activity(self.clock.now())
        self._post("wake")

    def heard_caller_transcript(self, text: str) -> None:
        """The agent's own transcript of what the caller said (kept to tell its mishearing apart)."""
        self.listener.caller_transcripts.append(text)

    def heard_answering(self, answering: bool) -> None:
        """The agent's protocol says it is composing an answer (True) or has finished (False): while it is,
        its silence does not end the turn (``turn_timeout`` still does)."""
        c = self.conversation
        if c.answering != answering:
            c.answering = answering
            c.activity(self.clock.now())
            self._post("wake")

    def heard_done(self) -> None:
        """The agent ended the call (its done message)."""
        self.conversation.done = True
        if self.conversation.turn is not None:
            self.conversation.turn.done = True
        self.conversation.activity(self.clock.now())
        self._post("done")

    def closed(self, code: int | None, reason: str = "") -> None:
        """The wire closed (the agent hung up or the connection dropped)."""
        if self._closed is None:
            self._closed = (code, reason)
        self._post("closed")

    # What the stages report about this call (after their tick: record and post, never await).

    def hear(self, msg: CallReport) -> None:
        if isinstance(msg, AgentSpeech):
            self.conversation.speech(msg.kind, msg.at)
            self._post("vad")
        elif isinstance(msg, CallerSpoke):
            utt = self._saying.popleft() if self._saying else None
            self._post("spoken", msg, utt.text if utt is not None else "")
        elif isinstance(msg, MarksPlayed):
            if self.wire is not None:
                self.wire.marks_played(msg.names)
        elif isinstance(msg, AgentTones):
            for digit in msg.digits:
                self._post("message", Dtmf(digits=digit, direction="received", at=msg.at))

    def _post(self, *event: Any) -> None:
        try:
            self._events.put_nowait(event)
        except asyncio.QueueFull:
            self._dropped += 1

    # The turn.

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        """Speak ``user`` (None: hear the agent out first) and yield the agent's answer, ending with an AgentTurn."""
        if self._closed is not None and self._events.empty():
            raise TargetError(f"the call has ended ({_describe(self._closed)})")
        c = self.conversation
        t = c.new_turn(self.clock.now(), user=user is not None)
        if not self._announced:
            self._announced = True
            yield self._announce()
        speech: list[Utterance] = []
        if user is not None:
            if self.wire is None:
                raise TargetError("the call has ended (hung up)")
            prepared = await self.caller.prepare(user, self.wire, barging=c.barging_next)
            c.barging_next = False
            if prepared.keyed_at is not None:
                t.caller_start = t.caller_end = prepared.keyed_at
            speech = prepared.speech
            for msg in prepared.told:
                yield msg
        if speech:
            self._say(speech.pop(0), t)
        else:
            c.listen(t, self.clock.now())
        interrupted = False
        while True:
            event = await self._next_event(self._wake_at(t))
            if event is None:
                outcome = c.on_timeout(t, self.clock.now(), buffered=self.call.buffered)
                if outcome == "wait":
                    continue
                interrupted = outcome == "interrupt"
                break
            kind = event[0]
            if kind == "message":
                yield event[1]
            elif kind == "spoken":
                said: CallerSpoke = event[1]
                c.spoken(t, said, event[2])
                if speech:
                    self._say(speech.pop(0), t)
                else:
                    c.listen(t, said.speech_end if said.spans else self.clock.now())
            elif kind == "flood":
                dropped, error = self._flood()
                yield dropped
                raise error
            elif kind == "closed":
                if t.done or (self._closed is not None and self._closed[0] in _CLEAN_CLOSE):
                    t.done = True
                    break
                raise TargetError(f"the agent dropped the call ({_describe(self._closed)})")
            if t.done and t.listening and c.quiet(self.call.buffered):
                break
        if self.call.dropped:
            dropped, error = self._flood()
            yield dropped
            raise error
        for msg in await self._finish(t, interrupted=interrupted):
            yield msg

    def _flood(self) -> tuple[Event, LimitExceeded]:
        """The agent sent audio further ahead of real time than ``limits.audio_ahead``: the event
        that counts what was dropped, and the run's error."""
        self._flooded = True
        dropped = self.call.dropped
        seconds = dropped / self.settings.rate
        error = LimitExceeded(
            f"the agent sent audio more than {self.ctx.limits.audio_ahead:g} s ahead of real time "
            f"(a flood); {seconds:.2f} s of it were dropped so far",
            setting="audio_ahead",
        )
        now = self.clock.now()
        return Event(event=AudioDropped(samples=dropped, seconds=round(seconds, 3), at=now), at=now), error

    def _announce(self) -> Event:
        s = self.settings
        recorded = bool(self.recording_path)
        call = VoiceCall(
            encoding=s.encoding,
            rate=s.rate,
            line=s.line_quality,
            transcript_source=s.transcript_source,
            recording=self.recording_path,
            channels=["caller", "agent"] if recorded else [],
            recording_starts_at=self.timeline.started if recorded else None,
            at=self.clock.now(),
        )
        return Event(event=call, at=call.at)

    def _say(self, utt: Utterance, t: Turn) -> None:
        begins = self.call.now + self.call.line_latency + utt.speech_start
        self.conversation.saying(t, begins, speech=bool(utt.spans))
        self._saying.append(utt)
        self.call.say(utt)

    def _wake_at(self, t: Turn) -> float | None:
        call = self.call
        return self.conversation.wake_at(
            t, self.clock.now(), heard_until=call.now, buffered=call.buffered, buffered_s=call.buffered_s
        )

    async def _next_event(self, wake_at: float | None) -> tuple[Any, ...] | None:
        if wake_at is None:
            return await self._events.get()
        timeout = wake_at - self.clock.now()
        if timeout <= 0:
            return self._events.get_nowait() if not self._events.empty() else None
        try:
            return await within(self._events.get(), timeout)
        except asyncio.TimeoutError:
            return None

    async def _finish(self, t: Turn, *, interrupted: bool) -> list[Message]:
        now = self.clock.now()
        agent = self.conversation.agent_segments(self.call.now)
        try:
            heard = await self.listener.words(agent)
        except TamesuError as exc:
            raise TargetError(f"transcribing the agent: {exc}", retryable=False, kind="config") from None
        return self.conversation.finish(t, now, heard, agent, interrupted=interrupted)


def _describe(closed: tuple[int | None, str] | None) -> str:
    if closed is None:
        return "no close frame"
    code, reason = closed
    why = f": {reason}" if reason else ""
    return f"code {code}{why}" if code is not None else f"no close frame{why}"
