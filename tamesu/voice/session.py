"""One phone call, turn by turn: the caller speaks, the line carries it, the agent's answer is heard.

``VoiceSession`` is what every audio target runs on. The target owns the wire (a websocket and its
protocol: ``VoiceWire``) and tells the session what arrives (audio, marks, clears, transcripts,
tool calls, the end of the call); the session drives the caller and the listener on the shared
``FramePump`` and turns it all into run messages. A turn:

1. the caller pauses (``silence_after_turn_ms``) unless it is barging in, then speaks the user turn
   (TTS in the persona's voice, DTMF as protocol messages or in-band tones);
2. the agent's audio is played as it arrives and the VAD finds its speech; the turn ends when the
   agent has been quiet for ``idle`` with nothing left to play, when it ends the call, or early when
   the caller decides to barge in (``interrupt_probability``);
3. the agent's words come from its own transcript or from STT (``transcript_source``), and the
   turn's timings, speech segments and the call's voice metrics so far are reported.

Failures end the call cleanly: a dropped socket or no sound from the agent within ``turn_timeout``
is a ``TargetError``; ``stop`` always detaches from the pump and closes the recording.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tamesu.actors.messages import AgentTurn, AudioSpan, Dtmf, Event, Interrupt, Message, MetricMsg, UserTurn
from tamesu.audio.behaviour import BehaviourRNG
from tamesu.audio.timing import Segment
from tamesu.clock import within
from tamesu.errors import TamesuError, TargetError

from .listener import Listener
from .pump import CallAudio, FramePump, Spoken
from .speech import Utterance, render_dtmf, render_speech
from .voice_metrics import BargeIn, CallTimeline, TurnTiming, voice_metrics

if TYPE_CHECKING:
    from tamesu.targets.base import TargetContext

    from .recording import CallRecording
    from .settings import VoiceSettings

__all__ = ["VoiceSession", "VoiceWire"]

AUDIBLE = 300
"""Peak (int16) above which received agent audio counts as sound rather than silence padding."""
_POLL_S = 0.1
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


@dataclass
class _Turn:
    index: int
    start: float
    """The window's start: the end of the previous turn (or the call's start)."""
    called: float
    """When the run asked for this turn (the turn timeout counts from here)."""
    user: bool
    caller_start: float | None = None
    caller_end: float | None = None
    listening: bool = False
    first_rx: float | None = None
    first_msg: float | None = None
    first_onset: float | None = None
    active: bool = False
    done: bool = False
    will_interrupt: bool = False
    barge_at: float | None = None
    spans: list[AudioSpan] = field(default_factory=list)


class VoiceSession:
    """A call's audio pipeline between a target's wire and the run (see the module docstring)."""

    def __init__(
        self, settings: VoiceSettings, ctx: TargetContext, wire: VoiceWire, *, pump: FramePump | None = None
    ) -> None:
        self.settings = settings
        self.ctx = ctx
        self.clock = ctx.clock
        self.wire = wire
        self.pump = pump
        self.timeline = CallTimeline()
        self.listener = Listener(settings)
        self.rng = BehaviourRNG(settings.seed)
        self.recording: CallRecording | None = None
        self.recording_path: str | None = None
        self.call = CallAudio(
            rate=settings.rate,
            encoding=settings.encoding,
            line=settings.line_quality,
            seed=settings.seed,
            send=wire.send_audio,
            on_vad=self._on_vad,
            on_marks=wire.marks_played,
            on_frame=self._on_frame if self._hears_frames() else None,
            noise=self._noise(),
        )
        self.agent_speaking = False
        self._onset = 0.0
        self._last_activity = 0.0
        self._barge: BargeIn | None = None
        self._barging_next = False
        self._turn: _Turn | None = None
        self._window_from = 0.0
        self._events: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue(_EVENTS)
        self._dropped = 0
        self._closed: tuple[int | None, str] | None = None
        self._announced = False
        self._started = False
        self._done = False

    def _hears_frames(self) -> bool:
        """Whether each played frame is needed (a recording, speech-to-text, DTMF detection)."""
        s = self.settings
        return s.recording_dir is not None or s.wants_stt or s.detect_dtmf

    def _noise(self) -> Any:
        s = self.settings
        if not s.background_noise:
            return None
        from tamesu.audio.noise import NoiseMixer, NoiseSource

        return NoiseMixer(NoiseSource(s.background_noise, s.rate, s.seed), s.noise_snr_db)

    async def start(self) -> None:
        """Open the line: the pump starts sending the caller's frames (silence until it speaks)."""
        if self.settings.recording_dir is not None:
            from tamesu.runner.results import safe_name

            from .recording import CallRecording

            name = safe_name(f"{self.ctx.run_id}", key=f"{self.ctx.run_id}/{self.ctx.session}") + ".wav"
            path = self.settings.recording_dir / name
            self.recording = CallRecording(path, self.settings.rate)
            self.recording_path = f"{self.settings.recording_dir.name}/{name}"
        now = self.clock.now()
        self.timeline.started = self._window_from = self._last_activity = now
        self.pump = self.pump or FramePump.shared()
        self.pump.attach(self.call, t0=now)
        self._started = True

    async def stop(self) -> None:
        """Hang up the audio side: detach from the pump and close the recording (never raises)."""
        if self.pump is not None and self._started:
            self.pump.detach(self.call)
        self._started = False
        if self.timeline.ended is None:
            self.timeline.ended = self.clock.now()
        if self.recording is not None:
            with contextlib.suppress(Exception):
                self.recording.close()

    # What the target's wire reports.

    def heard_audio(self, samples: np.ndarray) -> None:
        """Agent audio arrived (int16 at the call's rate); it is queued to be played."""
        self.call.playout.write(samples)
        t = self._turn
        if t is not None and t.first_rx is None and len(samples) and int(np.abs(samples).max()) > AUDIBLE:
            if not t.user or t.caller_start is not None:
                t.first_rx = self.clock.now()

    def heard_mark(self, name: str) -> None:
        self.call.playout.mark(name)

    def heard_clear(self, *, reason: str = "clear") -> None:
        """The agent dropped its queued audio (Twilio ``clear``, an ``interrupted`` message)."""
        names = self.call.playout.clear()
        if names:
            self.wire.marks_played(names)
        at = self.call.now
        if self._barge is not None and self._barge.quiet_at is None:
            self._barge.quiet_at, self._barge.cleared = at, True
            self._barge = None
        self._post("message", Event(name="agent_cleared", data={"reason": reason}, at=self.clock.now()))

    def heard_message(self, msg: Message, *, activity: bool = True) -> None:
        """A run message from the agent's control channel (ToolCall, RawResponse, ...)."""
        if activity:
            self._activity()
        self._post("message", msg)

    def heard_transcript(self, text: str) -> None:
        self.listener.transcripts.append(text)
        self._activity()
        self._post("wake")

    def heard_done(self) -> None:
        """The agent ended the call (its done message)."""
        self._done = True
        if self._turn is not None:
            self._turn.done = True
        self._activity()
        self._post("done")

    def closed(self, code: int | None, reason: str = "") -> None:
        """The wire closed (the agent hung up or the connection dropped)."""
        if self._closed is None:
            self._closed = (code, reason)
        self._post("closed")

    def _activity(self) -> None:
        now = self.clock.now()
        self._last_activity = max(self._last_activity, now)
        t = self._turn
        if t is not None:
            t.active = True
            if t.first_msg is None:
                t.first_msg = now

    def _post(self, *event: Any) -> None:
        try:
            self._events.put_nowait(event)
        except asyncio.QueueFull:
            self._dropped += 1

    # What the pump reports (inside its tick: record and post, never await).

    def _on_vad(self, kind: str, at: float) -> None:
        t = self._turn
        if kind == "speech_start":
            self.agent_speaking, self._onset = True, at
            if t is not None and at >= t.start - 1e-6:
                t.active = True
                if t.first_onset is None and (
                    not t.user or (t.caller_start is not None and at >= t.caller_start)
                ):
                    t.first_onset = at
        else:
            self.agent_speaking = False
            self.timeline.agent.append(Segment(self._onset, at))
            self._last_activity = max(self._last_activity, at)
            if t is not None and at >= t.start:
                t.active = True
            if self._barge is not None and self._barge.quiet_at is None and at >= self._barge.start:
                self._barge.quiet_at = at
                self._barge = None
        self._post("vad", kind, at)

    def _on_frame(self, caller: np.ndarray, agent: np.ndarray) -> None:
        if self.recording is not None:
            self.recording.write(caller, agent)
        listener = self.listener
        listener.frame(agent, self.call.time_of(self.call.frames - 1))
        if listener.dtmf_heard:
            for digit, at in listener.dtmf_heard:
                self._post("message", Dtmf(digits=digit, direction="received", at=at))
            listener.dtmf_heard = []

    # The turn.

    async def turn(self, user: UserTurn | None) -> AsyncIterator[Message]:
        """Speak ``user`` (None: hear the agent out first) and yield the agent's answer, ending with an AgentTurn."""
        if self._closed is not None and self._events.empty():
            raise TargetError(f"the call has ended ({_describe(self._closed)})")
        now = self.clock.now()
        t = _Turn(
            index=len(self.timeline.turns) + 1,
            start=self._window_from,
            called=now,
            user=user is not None,
            done=self._done,
        )
        self._turn = t
        if not self._announced:
            self._announced = True
            yield self._announce()
        speech: list[Utterance] = []
        if user is not None:
            speech, told = await self._prepare(user, t)
            for msg in told:
                yield msg
        if speech:
            self._say(speech.pop(0), t)
        else:
            self._listen(t, self.clock.now())
        interrupted = False
        while True:
            event = await self._next_event(self._wake_at(t, speech))
            if event is None:
                outcome = self._on_timeout(t)
                if outcome == "wait":
                    continue
                interrupted = outcome == "interrupt"
                break
            kind = event[0]
            if kind == "message":
                yield event[1]
            elif kind == "spoken":
                self._spoken(t, event[1], event[2])
                if speech:
                    self._say(speech.pop(0), t)
                else:
                    self._listen(t, event[1].speech_end if event[1].spans else self.clock.now())
            elif kind == "closed":
                if t.done or (self._closed is not None and self._closed[0] in _CLEAN_CLOSE):
                    t.done = True
                    break
                raise TargetError(f"the agent dropped the call ({_describe(self._closed)})")
            if t.done and t.listening and self._quiet():
                break
        async for msg in self._finish(t, interrupted=interrupted):
            yield msg

    def _announce(self) -> Event:
        s = self.settings
        data: dict[str, Any] = {
            "encoding": s.encoding,
            "rate": s.rate,
            "line": s.line_quality,
            "transcript_source": s.transcript_source,
        }
        if self.recording_path:
            data["recording"] = self.recording_path
            data["channels"] = ["caller", "agent"]
            data["recording_starts_at"] = self.timeline.started
        return Event(name="voice_call", data=data, at=self.clock.now())

    async def _prepare(self, user: UserTurn, t: _Turn) -> tuple[list[Utterance], list[Message]]:
        """The user turn as audio (the pause before it, DTMF as protocol messages or tones, then
        speech) and the messages that record it."""
        s = self.settings
        if user.files or (user.data is not None and set(user.data) != {"dtmf"}):
            from tamesu.config.scriptparts import carriers

            part = "files" if user.files else "data"
            raise TargetError(
                f"a call cannot send {part} in a script step ({part} is sent by {carriers(part)} targets)",
                retryable=False,
                kind="config",
            )
        if not self._barging_next and s.silence_after_turn_ms:
            await self.clock.sleep(self.rng.silence_after_turn(*s.silence_after_turn_ms))
        self._barging_next = False
        out: list[Utterance] = []
        told: list[Message] = []
        digits = str((user.data or {}).get("dtmf") or "")
        if digits:
            sent = await self.wire.send_dtmf(digits)
            told.append(Dtmf(digits=digits, direction="sent", at=self.clock.now()))
            if not sent:
                told.append(
                    Event(
                        name="dtmf_unsupported",
                        data={"digits": digits, "sent_as": "tones"},
                        at=self.clock.now(),
                    )
                )
                out.append(render_dtmf(digits, s.rate))
            else:
                t.caller_start = t.caller_end = self.clock.now()
        if user.text.strip():
            try:
                out.append(
                    await render_speech(
                        user.text, s.rate, voice=s.voice, language=s.language, engine=s.tts_engine
                    )
                )
            except TamesuError as exc:
                raise TargetError(f"the caller's voice: {exc}", retryable=False, kind="config") from None
        return out, told

    def _say(self, utt: Utterance, t: _Turn) -> None:
        begins = self.call.now + self.call.line_latency + utt.speech_start
        if t.caller_start is None:
            t.caller_start = begins
        if self.agent_speaking and self._barge is None and utt.spans:
            self._barge = BargeIn(start=begins)
            self.timeline.barge_ins.append(self._barge)
        fut = self.call.say(utt)

        def spoken(done: asyncio.Future[Spoken]) -> None:
            self._post("spoken", done.result(), utt)

        fut.add_done_callback(spoken)

    def _spoken(self, t: _Turn, spoken: Spoken, utt: Utterance) -> None:
        for i, (a, b) in enumerate(spoken.spans):
            self.timeline.caller.append(Segment(a, b))
            t.spans.append(AudioSpan(start=a, end=b, channel="caller", text=utt.text if i == 0 else None))
        if spoken.spans:
            t.caller_end = spoken.speech_end
        for barge in self.timeline.barge_ins:
            if barge.caller_end is None and spoken.spans and barge.start <= spoken.speech_end:
                barge.caller_end = spoken.speech_end

    def _listen(self, t: _Turn, at: float) -> None:
        t.listening = True
        if t.caller_end is None and t.user:
            t.caller_end = at
        self._last_activity = max(self._last_activity, at)
        p = self.settings.interrupt_probability
        t.will_interrupt = p > 0 and self.rng.should_interrupt(p)

    def _quiet(self) -> bool:
        return not self.agent_speaking and self.call.playout.buffered == 0

    def _wake_at(self, t: _Turn, speech: list[Utterance]) -> float | None:
        """When to look again if nothing happens (run clock); None waits for the next event."""
        s, now = self.settings, self.clock.now()
        if not t.listening:
            return None
        if not t.active:
            base = t.called if not t.user else (t.caller_end or now)
            return base + (s.greeting_wait if not t.user else s.turn_timeout)
        if t.will_interrupt and t.first_onset is not None and t.barge_at is None:
            heard_s = self.call.playout.buffered_s + max(0.0, self.call.now - t.first_onset)
            t.barge_at = t.first_onset + self.rng.interrupt_offset_s(max(heard_s, 1.2))
        cap = t.called + s.turn_timeout
        if self.agent_speaking:
            return min(cap, t.barge_at) if t.barge_at is not None else cap
        if self.call.playout.buffered:
            return min(cap, now + _POLL_S)
        return min(cap, self._last_activity + (0.0 if t.done else s.idle))

    def _on_timeout(self, t: _Turn) -> str:
        """Nothing happened until the wake time: end the turn, barge in, keep waiting, or fail."""
        s, now = self.settings, self.clock.now()
        if not t.active:
            if not t.user:
                return "end"
            raise TargetError(
                f"no audio from the agent within {s.turn_timeout:g}s of the caller's turn", retryable=True
            )
        if now >= t.called + s.turn_timeout - 1e-3:
            t.spans.append(AudioSpan(start=now, end=now, channel="agent", text="(turn_timeout)"))
            return "end"
        if t.barge_at is not None and now >= t.barge_at - 1e-3 and self.agent_speaking:
            return "interrupt"
        if self._quiet() and now >= self._last_activity + (0.0 if t.done else s.idle) - 1e-3:
            return "end"
        return "wait"

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

    async def _finish(self, t: _Turn, *, interrupted: bool) -> AsyncIterator[Message]:
        now = self.clock.now()
        agent = [g for g in self.timeline.agent if g.end > self._window_from]
        if self.agent_speaking:
            agent.append(Segment(self._onset, self.call.now))
        try:
            heard = await self.listener.words(agent)
        except TamesuError as exc:
            raise TargetError(f"transcribing the agent: {exc}", retryable=False, kind="config") from None
        if heard.stt and heard.agent:
            self.timeline.transcript_pairs.append((heard.stt, heard.agent))
        spans = list(t.spans) + [
            AudioSpan(start=g.start, end=g.end, channel="agent", text=heard.segment_text.get(i))
            for i, g in enumerate(agent)
        ]
        timing = TurnTiming(
            index=t.index,
            caller_start=t.caller_start,
            caller_end=t.caller_end if t.user else None,
            first_audio_rx=t.first_rx,
            first_audio_at=t.first_onset,
            end_at=now,
            interrupted=interrupted,
        )
        self.timeline.turns.append(timing)
        self._window_from = now
        self._turn = None
        if interrupted:
            self._barging_next = True
            yield Interrupt(at=now)
        yield Event(
            name="voice_turn",
            data={
                "turn": t.index,
                "caller_start": t.caller_start,
                "caller_end": timing.caller_end,
                "first_audio_rx": t.first_rx,
                "first_audio_at": t.first_onset,
                "end_at": now,
                "interrupted": interrupted,
                "text_source": heard.source,
                **({"stt": heard.stt} if heard.stt is not None else {}),
                **({"agent_transcript": heard.agent} if heard.agent is not None else {}),
            },
            at=now,
        )
        for name, value in voice_metrics(self.timeline, now=now).items():
            yield MetricMsg(name=name, value=value, at=now)
        yield AgentTurn(
            text=heard.text,
            done=t.done,
            sent_at=timing.caller_end,
            first_byte_at=_first(t.first_rx, t.first_msg, now),
            first_audio_at=t.first_onset,
            end_at=now,
            audio=sorted(spans, key=lambda a: (a.start, a.channel)),
            at=now,
        )


def _first(*times: float | None) -> float | None:
    return next((x for x in times if x is not None), None)


def _describe(closed: tuple[int | None, str] | None) -> str:
    if closed is None:
        return "no close frame"
    code, reason = closed
    why = f": {reason}" if reason else ""
    return f"code {code}{why}" if code is not None else f"no close frame{why}"
