"""The caller: what it says in a turn (``Caller``) and its handset, which sends it (``CallerStage``).

``Caller.prepare`` turns one user turn into audio: the pause before it (``silence_after_turn_ms``,
skipped when barging in), keypad digits (protocol messages when the wire has them, in-band tones
otherwise) and the words in the persona's voice, synthesised by the run's speech pool (or, for a
replayed call, the recorded caller's own audio).

``CallerStage`` is the first stage of a lane (see ``lane``): each call's queue of utterances,
sent 20 ms at a time, silence between them. Each tick it fills one frame per call and sends the
lane's ``AudioBatch`` on to the line; when an utterance has been sent (or stopped) it reports a
``CallerSpoke`` with the times its first sample and its speech went out, on the run's clock.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from tamesu.errors import TamesuError, TargetError
from tamesu.kernel.events import DtmfUnsupported
from tamesu.kernel.messages import AudioBatch, CallerSpoke, Dtmf, Event, Message, Tick, UserTurn

from .clips import clip_utterance
from .speech import Utterance, at_level, render_dtmf, render_speech
from .stage import Stage

if TYPE_CHECKING:
    from tamesu.audio.behaviour import BehaviourRNG
    from tamesu.clock import Clock
    from tamesu.kernel.messages import AudioClip
    from tamesu.speech_pool import SpeechPool

    from .lane import Lane
    from .session import VoiceWire
    from .settings import VoiceSettings

__all__ = ["Caller", "CallerStage", "Prepared"]


@dataclass
class Prepared:
    """A user turn made ready: the utterances to say, in order, and the messages that record it."""

    speech: list[Utterance] = field(default_factory=list)
    told: list[Message] = field(default_factory=list)
    keyed_at: float | None = None
    """When the digits went out as protocol messages (the turn's caller start and end)."""


class Caller:
    """One call's simulated caller: its voice and habits, from the call's settings."""

    def __init__(
        self, settings: VoiceSettings, *, speech: SpeechPool, clock: Clock, rng: BehaviourRNG
    ) -> None:
        self.settings = settings
        self.speech = speech
        self.clock = clock
        self.rng = rng

    async def prepare(self, user: UserTurn, wire: VoiceWire, *, barging: bool) -> Prepared:
        """``user`` as audio and messages; the pause before it is waited out here."""
        s = self.settings
        if user.files or (user.data is not None and set(user.data) != {"dtmf"}):
            from tamesu.config.scriptparts import carriers

            part = "files" if user.files else "data"
            raise TargetError(
                f"a call cannot send {part} in a script step ({part} is sent by {carriers(part)} targets)",
                retryable=False,
                kind="config",
            )
        # The voice is rendered while the pause is waited out: the caller thinks and speaks, it does not
        # pause and then stop to compose (a slow TTS would otherwise lengthen every pause).
        voiced = (
            asyncio.ensure_future(self._voice(user.text, user.speech_level_db, user.audio))
            if user.text.strip() or user.audio is not None
            else None
        )
        try:
            if not barging and s.silence_after_turn_ms:
                await self.clock.sleep(self.rng.silence_after_turn(*s.silence_after_turn_ms))
            out = await self._key(user, wire)
            if voiced is not None:
                out.speech.append(await voiced)
        finally:
            if voiced is not None and not voiced.done():
                voiced.cancel()
            elif voiced is not None and not voiced.cancelled():
                voiced.exception()  # retrieved: a turn that failed first is reported, not this
        return out

    async def _key(self, user: UserTurn, wire: VoiceWire) -> Prepared:
        """The turn's keypad digits, sent as the wire can (or played as tones)."""
        s = self.settings
        out = Prepared()
        digits = str((user.data or {}).get("dtmf") or "")
        if digits:
            sent = await wire.send_dtmf(digits)
            out.told.append(Dtmf(digits=digits, direction="sent", at=self.clock.now()))
            if sent:
                out.keyed_at = self.clock.now()
            else:
                unsupported = DtmfUnsupported(digits=digits, at=self.clock.now())
                out.told.append(Event(event=unsupported, at=unsupported.at))
                out.speech.append(render_dtmf(digits, s.rate))
        return out

    async def _voice(self, text: str, level_db: float = 0.0, clip: AudioClip | None = None) -> Utterance:
        s = self.settings
        if clip is not None:
            spoken = await asyncio.to_thread(clip_utterance, clip, s.rate, text=text)
            return at_level(spoken, level_db) if level_db else spoken
        try:
            spoken = await render_speech(
                text, s.rate, pool=self.speech, voice=s.voice, language=s.language, engine=s.tts_engine
            )
        except TamesuError as exc:
            raise TargetError(f"the caller's voice: {exc}", retryable=False, kind="config") from None
        return at_level(spoken, level_db) if level_db else spoken


class CallerStage(Stage):
    """Every call's handset of one lane: utterances in, one ``AudioBatch`` of caller frames per tick out."""

    def __init__(self, lane: Lane) -> None:
        super().__init__(lane)
        cap = lane.capacity
        self.queues: list[deque[Utterance]] = [deque() for _ in range(cap)]
        self.current: list[Utterance | None] = [None] * cap
        self.pos = [0] * cap
        self.began = [0] * cap
        """The frame at which the current utterance of each slot began."""
        self.speaking: set[int] = set()
        self.x = np.zeros((cap, lane.frame), dtype=np.int16)

    def talking(self, slot: int) -> bool:
        return self.current[slot] is not None or bool(self.queues[slot])

    def say(self, slot: int, utterance: Utterance) -> None:
        if len(utterance.samples) == 0:
            now = self._now(slot)
            self.lane.report(CallerSpoke(call=slot, start=now, end=now, at=now))
            return
        self.queues[slot].append(utterance)
        if self.current[slot] is None:
            self._next(slot, int(self.lane.k[slot]))

    def hush(self, slot: int) -> None:
        queued = len(self.queues[slot])
        self.queues[slot].clear()
        if self.current[slot] is not None:
            self._finish(slot, stopped=True, next_frame=int(self.lane.k[slot]))
        now = self._now(slot)
        for _ in range(queued):
            self.lane.report(CallerSpoke(call=slot, start=now, end=now, stopped=True, at=now))

    def detach(self, slot: int) -> None:
        self.queues[slot].clear()
        self.current[slot] = None
        self.speaking.discard(slot)

    def handle(self, msg: Message) -> None:
        if not isinstance(msg, Tick):
            return
        lane, x, n = self.lane, self.x, self.lane.frame
        x.fill(0)
        done: list[int] = []
        for i in self.speaking:
            utt = self.current[i]
            assert utt is not None
            p = self.pos[i]
            chunk = utt.samples[p : p + n]
            x[i, : len(chunk)] = chunk
            self.pos[i] = p + n
            if p + n >= len(utt.samples):
                done.append(i)
        for i in done:
            self._finish(i, stopped=False, next_frame=int(lane.k[i]) + 1)
        self.send(
            AudioBatch(
                seq=msg.seq,
                pcm=x.tobytes(),
                rows=lane.capacity,
                calls=lane.active,
                sample_rate=lane.rate,
                channel="caller",
            )
        )

    def _now(self, slot: int) -> float:
        call = self.lane.calls[slot]
        return call.now if call is not None else 0.0

    def _next(self, slot: int, frame: int) -> None:
        if self.queues[slot]:
            self.current[slot] = self.queues[slot].popleft()
            self.pos[slot] = 0
            self.began[slot] = frame
            self.speaking.add(slot)
        else:
            self.current[slot] = None
            self.speaking.discard(slot)

    def _finish(self, slot: int, *, stopped: bool, next_frame: int) -> None:
        utt, call = self.current[slot], self.lane.calls[slot]
        assert utt is not None and call is not None
        start = call.time_of(self.began[slot]) + call.line_latency
        sent_s = min(self.pos[slot], len(utt.samples)) / utt.rate
        spans = [(start + a, start + min(b, sent_s)) for a, b in utt.spans if a < sent_s]
        self.current[slot] = None
        self._next(slot, next_frame)
        end = start + sent_s
        self.lane.report(CallerSpoke(call=slot, start=start, end=end, spans=spans, stopped=stopped, at=end))
