"""The 20 ms heartbeat of every call in the process, with the signal work batched across calls.

A phone line never stops: every 20 ms the caller's handset sends a frame (speech, tones, or the
silence and noise between them) and plays a frame of whatever the agent sent. One ``FramePump`` per
event loop does this for all its calls at once. Calls that share a wire format and a line model sit
in the same block, and each tick runs the caller's frames of the whole block through one ``LineBank``
step and one encode, and the agent's played frames through one ``TurnDetectorBank`` step, so the
per-call cost of a frame is a few microseconds and a thousand calls fit in one core. Per call, the
tick does only what cannot be shared: copy the next slice of speech, hand the wire its bytes, read
the playout buffer. Events (speech started or ended, an utterance finished, a mark played) are
handed to the call's callbacks; nothing is allocated per frame beyond the bytes sent.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable

import numpy as np

from tamesu.errors import MissingExtraError

from .caller import FRAME_S, CallAudio, Spoken
from .collector import collector
from .playout import Playout

__all__ = ["FRAME_S", "CallAudio", "FramePump", "Spoken"]

_CAPACITY = (8, 32, 128)
"""Slots of the first, second, ... block of one wire format (a single call costs an 8-slot step)."""
_NO_IDLE = 1e9
_RESYNC_S = 1.0
"""A pump this far behind (a stalled process) starts afresh instead of bursting the backlog out."""
_LATE_RING = 1 << 16
_SLACK_S = 0.005
"""Time left before the next tick for the collector's paced step to run now."""


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


class _Block:
    """Up to ``capacity`` calls of one wire format and line, processed in lockstep."""

    def __init__(self, key: tuple[int, str, str | None], capacity: int) -> None:
        from tamesu.audio.vad import WEBRTC_RATES, TurnDetectorBank

        rate, encoding, line = key
        self.key = key
        self.rate, self.encoding = rate, encoding
        self.n = rate // 50
        self.capacity = capacity
        self.calls: list[CallAudio | None] = [None] * capacity
        self.sends: list[Callable[[bytes], None] | None] = [None] * capacity
        self.plays: list[Playout | None] = [None] * capacity
        self.k = np.zeros(capacity, dtype=np.int64)
        """Frames sent by the call in each slot."""
        self.free = list(range(capacity - 1, -1, -1))
        self.active: list[int] = []
        self._active_idx = np.zeros(0, dtype=np.int64)
        self.talking: set[int] = set()
        self.noisy: set[int] = set()
        self.hooked: set[int] = set()
        self.own_vad: set[int] = set()
        self.line = None
        self.latency = 0.0
        if line:
            from tamesu.audio.line import get_line_model

            self.line = get_line_model(line).bank(capacity, [0] * capacity, rate=rate)
            self.latency = self.line.latency_s
        self.vad = None
        self.classifier: _PlayedVad | None = None
        if rate in WEBRTC_RATES:
            self.classifier = _PlayedVad(capacity, rate)
            self.vad = TurnDetectorBank(self.classifier, capacity, idle=_NO_IDLE)
        self.x = np.zeros((capacity, self.n), dtype=np.int16)
        self.p = np.zeros((capacity, self.n), dtype=np.int16)

    def attach(self, call: CallAudio) -> None:
        slot = self.free.pop()
        self.calls[slot] = call
        self.sends[slot] = call.send
        self.plays[slot] = call.playout
        self.k[slot] = 0
        self.active.append(slot)
        self.active.sort()
        self._active_idx = np.array(self.active, dtype=np.int64)
        call._block, call._slot = self, slot
        call.line_latency = self.latency
        if self.line is not None:
            self.line.reset(slot, call.seed)
        if self.vad is not None:
            self.vad.reset(slot)
        else:
            from tamesu.audio.vad import TurnDetector

            call.vad = TurnDetector(call.rate, idle=_NO_IDLE)
            self.own_vad.add(slot)
        if call._cur is not None:
            self.talking.add(slot)
        if call.noise is not None:
            self.noisy.add(slot)
        if call.on_frame is not None:
            self.hooked.add(slot)

    def detach(self, call: CallAudio) -> None:
        slot = call._slot
        if slot < 0 or self.calls[slot] is not call:
            return
        call._frames = int(self.k[slot])
        self.calls[slot] = None
        self.sends[slot] = None
        self.plays[slot] = None
        self.active.remove(slot)
        self._active_idx = np.array(self.active, dtype=np.int64)
        for group in (self.talking, self.noisy, self.hooked, self.own_vad):
            group.discard(slot)
        self.free.append(slot)
        call._block, call._slot = None, -1

    def tick(self) -> None:
        n, calls = self.n, self.calls
        x, p = self.x, self.p
        x.fill(0)
        done: list[CallAudio] = []
        for i in self.talking:
            c = calls[i]
            assert c is not None and c._cur is not None
            chunk = c._cur.samples[c._pos : c._pos + n]
            x[i, : len(chunk)] = chunk
            c._pos += n
            if c._pos >= len(c._cur.samples):
                done.append(c)
        for i in self.noisy:
            x[i] = calls[i].noise.mix(x[i])  # type: ignore[union-attr]
        y = x if self.line is None else self.line.process(x)
        if self.encoding == "mulaw":
            from tamesu.audio.codec import ulaw_encode

            wire = ulaw_encode(y)
        elif self.encoding == "alaw":
            from tamesu.audio.codec import alaw_encode

            wire = alaw_encode(y)
        else:
            wire = y.astype("<i2", copy=False)
        p.fill(0)
        marks: list[tuple[CallAudio, list[str]]] = []
        played: list[int] = []
        data = wire.tobytes()
        size = len(data) // self.capacity
        sends, plays = self.sends, self.plays
        for i in self.active:
            sends[i](data[i * size : (i + 1) * size])  # type: ignore[misc]
            play = plays[i]
            assert play is not None
            if play.buffered:
                play.read_into(p[i])
                played.append(i)
            if play.marks and play.marks[0][0] <= play.consumed:
                marks.append((calls[i], play.due_marks()))  # type: ignore[arg-type]
        self.k[self._active_idx] += 1
        events = []
        if self.vad is not None and self.classifier is not None:
            events = self.vad.process_decisions(self.classifier.decide(p, played))
        for i in self.own_vad:
            c = calls[i]
            assert c is not None
            events += [(i, e) for e in c.vad.push(p[i])]
        for i in self.hooked:
            c = calls[i]
            assert c is not None and c.on_frame is not None
            c.on_frame(y[i], p[i])
        for c in done:
            c._finish()
        for c, names in marks:
            if c.on_marks is not None:
                c.on_marks(names)
        for i, event in events:
            c = calls[i]
            if c is not None and c.on_vad is not None:
                c.on_vad(event.kind, c.t0 + event.at)


class FramePump:
    """The process's (event loop's) shared ticker; ``shared()`` gives the running loop's pump.

    ``lateness`` keeps how late each tick started (seconds), the figure a real-time claim rests on.
    With ``ticker=False`` nothing ticks by itself: the caller calls ``tick`` (tests step a call frame
    by frame this way, on virtual time).
    """

    def __init__(self, *, ticker: bool = True) -> None:
        self.ticker = ticker
        self.blocks: dict[tuple[int, str, str | None], list[_Block]] = {}
        self.calls = 0
        self.ticks = 0
        self.resyncs = 0
        self.failures: list[str] = []
        self._late = np.zeros(_LATE_RING, dtype=np.float32)
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None

    @classmethod
    def shared(cls) -> FramePump:
        loop = asyncio.get_running_loop()
        pump = _PUMPS.get(loop)
        if pump is None:
            pump = _PUMPS[loop] = cls()
        return pump

    def attach(self, call: CallAudio, *, t0: float) -> None:
        """Start ticking ``call``; its frame 0 is sent on the next tick and dated ``t0`` on the run's clock."""
        key = (call.rate, call.encoding, call.line)
        blocks = self.blocks.setdefault(key, [])
        block = next((b for b in blocks if b.free), None)
        if block is None:
            block = _Block(key, _CAPACITY[min(len(blocks), len(_CAPACITY) - 1)])
            blocks.append(block)
        call.t0 = t0
        block.attach(call)
        self.calls += 1
        if self.ticker and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._run(), name="tamesu-frame-pump")

    def detach(self, call: CallAudio) -> None:
        """Stop ticking ``call`` (idempotent); the pump stops when no call is left."""
        block = call._block
        if block is None:
            return
        block.detach(call)
        self.calls -= 1
        if not block.active:
            blocks = self.blocks.get(block.key, [])
            if block in blocks and len(blocks) > 1:
                blocks.remove(block)

    def lateness(self) -> np.ndarray:
        """How late each recorded tick started, in seconds (the last 65536 ticks)."""
        return self._late[: min(self.ticks, _LATE_RING)].copy()

    def reset_stats(self) -> None:
        self.ticks = 0
        self.resyncs = 0

    def tick(self) -> None:
        """One 20 ms step of every call (the ticker calls it; tests may call it directly).

        A block whose step fails (a callback raised) skips that frame; the other blocks, and the
        next frame, go on, and ``failures`` keeps the last errors for the calls to report.
        """
        for blocks in list(self.blocks.values()):
            for block in blocks:
                if block.active:
                    try:
                        block.tick()
                    except Exception as exc:  # one bad callback must not stop every call's audio
                        self.failures.append(f"{type(exc).__name__}: {exc}")
                        del self.failures[:-10]

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        collector.hold()
        try:
            while self.calls > 0:
                now = loop.time()
                if now - due > _RESYNC_S:
                    self.resyncs += 1
                    due = now
                self._late[self.ticks % _LATE_RING] = max(0.0, now - due)
                self.ticks += 1
                self.tick()
                due += FRAME_S
                collector.step(slack=due - loop.time() > _SLACK_S)
                await asyncio.sleep(max(0.0, due - loop.time()))
        finally:
            collector.release()


_PUMPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FramePump] = weakref.WeakKeyDictionary()
