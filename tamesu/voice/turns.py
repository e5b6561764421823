"""Turn-taking and barge-in: when the agent has finished its turn, when the caller talks over it.

``Conversation`` holds what the decisions are made from: whether the agent is speaking (the
listener's VAD), when it last showed signs of life (speech, a transcript, a tool call, audio
still to play), the barge-in being measured, the turn in progress and the call's timeline. A turn
ends when the agent has been quiet for ``idle`` with nothing left to play (and does not say it is still
answering), when it ends the call,
at ``turn_timeout``, or early when the caller decides to barge in (``interrupt_probability``):
``wake_at`` says when to look again if nothing happens, ``on_timeout`` what to do then.
``finish`` turns a finished turn into the messages a run records: the turn's timings, the voice
metrics of the call so far, and the agent's turn with both sides' speech.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from tamesu.audio.timing import Segment
from tamesu.errors import TargetError
from tamesu.kernel.events import VoiceTurn
from tamesu.kernel.messages import AgentTurn, AudioSpan, CallerSpoke, Event, Interrupt, Message, MetricMsg

from .voice_metrics import BargeIn, CallTimeline, TurnTiming, voice_metrics

if TYPE_CHECKING:
    from tamesu.audio.behaviour import BehaviourRNG

    from .listener import Heard
    from .settings import VoiceSettings

__all__ = ["Conversation", "Outcome", "Turn"]

POLL_S = 0.1
"""How often a turn looks again while the agent's audio is still playing out."""
Outcome = Literal["end", "interrupt", "wait"]


@dataclass
class Turn:
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


class Conversation:
    """One call's turn-taking state (see the module docstring)."""

    def __init__(self, settings: VoiceSettings, rng: BehaviourRNG) -> None:
        self.settings = settings
        self.rng = rng
        self.timeline = CallTimeline()
        self.agent_speaking = False
        self.onset = 0.0
        self.last_activity = 0.0
        self.barge: BargeIn | None = None
        self.barging_next = False
        self.turn: Turn | None = None
        self.window_from = 0.0
        self.done = False
        """The agent ended the call."""
        self.answering = False
        """The agent says, in its own protocol, that it is still composing its answer (a Pipecat bot between
        ``bot-llm-started`` and ``bot-tts-stopped``): silence then is thinking, not the end of its turn."""

    def begin(self, now: float) -> None:
        self.timeline.started = self.window_from = self.last_activity = now

    def new_turn(self, now: float, *, user: bool) -> Turn:
        self.turn = Turn(
            index=len(self.timeline.turns) + 1, start=self.window_from, called=now, user=user, done=self.done
        )
        return self.turn

    def activity(self, now: float) -> None:
        """The agent did something (a transcript, a tool call, the end of the call)."""
        self.last_activity = max(self.last_activity, now)
        t = self.turn
        if t is not None:
            t.active = True
            if t.first_msg is None:
                t.first_msg = now

    def sound(self, now: float) -> None:
        """Audible audio arrived from the agent (before it is played)."""
        t = self.turn
        if t is not None and t.first_rx is None and (not t.user or t.caller_start is not None):
            t.first_rx = now

    def speech(self, kind: str, at: float) -> None:
        """The listener's VAD: the agent started or stopped speaking at ``at``."""
        t = self.turn
        if kind == "speech_start":
            self.agent_speaking, self.onset = True, at
            if t is not None and at >= t.start - 1e-6:
                t.active = True
                if t.first_onset is None and (
                    not t.user or (t.caller_start is not None and at >= t.caller_start)
                ):
                    t.first_onset = at
            return
        self.agent_speaking = False
        self.timeline.agent.append(Segment(self.onset, at))
        self.last_activity = max(self.last_activity, at)
        if t is not None and at >= t.start:
            t.active = True
        if self.barge is not None and self.barge.quiet_at is None and at >= self.barge.start:
            self.barge.quiet_at = at
            self.barge = None

    def cleared(self, at: float) -> None:
        """The agent dropped its queued audio: a barge-in being measured ends here."""
        if self.barge is not None and self.barge.quiet_at is None:
            self.barge.quiet_at, self.barge.cleared = at, True
            self.barge = None

    def saying(self, t: Turn, begins: float, *, speech: bool) -> None:
        """The caller starts an utterance whose speech begins at ``begins``; over the agent, a barge-in."""
        if t.caller_start is None:
            t.caller_start = begins
        if self.agent_speaking and self.barge is None and speech:
            self.barge = BargeIn(start=begins)
            self.timeline.barge_ins.append(self.barge)

    def spoken(self, t: Turn, said: CallerSpoke, text: str) -> None:
        """An utterance of this turn has been sent."""
        for i, (a, b) in enumerate(said.spans):
            self.timeline.caller.append(Segment(a, b))
            t.spans.append(AudioSpan(start=a, end=b, channel="caller", text=text if i == 0 else None))
        if said.spans:
            t.caller_end = said.speech_end
        for barge in self.timeline.barge_ins:
            if barge.caller_end is None and said.spans and barge.start <= said.speech_end:
                barge.caller_end = said.speech_end

    def listen(self, t: Turn, at: float) -> None:
        """The caller has said its turn (at ``at``) and listens."""
        t.listening = True
        if t.caller_end is None and t.user:
            t.caller_end = at
        self.last_activity = max(self.last_activity, at)
        p = self.settings.interrupt_probability
        t.will_interrupt = p > 0 and self.rng.should_interrupt(p)

    def quiet(self, buffered: int) -> bool:
        return not self.agent_speaking and buffered == 0

    def wake_at(
        self, t: Turn, now: float, *, heard_until: float, buffered: int, buffered_s: float
    ) -> float | None:
        """When to look again if nothing happens (run clock); None waits for the next event.
        ``heard_until``: the time of the next frame the caller hears; ``buffered``: the agent's
        audio still to play (samples, seconds)."""
        s = self.settings
        if not t.listening:
            return None
        if not t.active:
            base = t.called if not t.user else (t.caller_end or now)
            return base + (s.greeting_wait if not t.user else s.turn_timeout)
        if t.will_interrupt and t.first_onset is not None and t.barge_at is None:
            heard_s = buffered_s + max(0.0, heard_until - t.first_onset)
            t.barge_at = t.first_onset + self.rng.interrupt_offset_s(max(heard_s, 1.2))
        cap = t.called + s.turn_timeout
        if self.agent_speaking:
            return min(cap, t.barge_at) if t.barge_at is not None else cap
        if buffered:
            return min(cap, now + POLL_S)
        if self.answering and not t.done:
            return cap
        return min(cap, self.last_activity + (0.0 if t.done else s.idle))

    def on_timeout(self, t: Turn, now: float, *, buffered: int) -> Outcome:
        """Nothing happened until the wake time: end the turn, barge in, keep waiting, or fail."""
        s = self.settings
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
        holding = self.answering and not t.done
        if (
            self.quiet(buffered)
            and not holding
            and now >= self.last_activity + (0.0 if t.done else s.idle) - 1e-3
        ):
            return "end"
        return "wait"

    def agent_segments(self, heard_until: float) -> list[Segment]:
        """The agent's speech since the previous turn ended (still open: up to ``heard_until``)."""
        agent = [g for g in self.timeline.agent if g.end > self.window_from]
        if self.agent_speaking:
            agent.append(Segment(self.onset, heard_until))
        return agent

    def finish(
        self, t: Turn, now: float, heard: Heard, agent: list[Segment], *, interrupted: bool
    ) -> list[Message]:
        """Close the turn: its timings and messages (ending with the ``AgentTurn``)."""
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
        self.window_from = now
        self.turn = None
        out: list[Message] = []
        if interrupted:
            self.barging_next = True
            out.append(Interrupt(at=now))
        turn = VoiceTurn(
            turn=t.index,
            caller_start=t.caller_start,
            caller_end=timing.caller_end,
            first_audio_rx=t.first_rx,
            first_audio_at=t.first_onset,
            end_at=now,
            interrupted=interrupted,
            text_source=heard.source,
            stt=heard.stt,
            agent_transcript=heard.agent,
            caller_heard=heard.caller,
            at=now,
        )
        out.append(Event(event=turn, at=now))
        out += [MetricMsg(name=k, value=v, at=now) for k, v in voice_metrics(self.timeline, now=now).items()]
        out.append(
            AgentTurn(
                text=heard.text,
                done=t.done,
                sent_at=timing.caller_end,
                first_byte_at=_first(t.first_rx, t.first_msg, now),
                first_audio_at=t.first_onset,
                end_at=now,
                audio=sorted(spans, key=lambda a: (a.start, a.channel)),
                at=now,
            )
        )
        return out


def _first(*times: float | None) -> float | None:
    return next((x for x in times if x is not None), None)
