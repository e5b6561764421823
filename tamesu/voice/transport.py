"""The transport stage: the target's wire as the lane sees it, both ways.

Each tick every call's wire gets its encoded caller frame (``send``: the target puts it on its
websocket without waiting, see ``socket``), and a frame of the agent's audio is played from the
call's ``Playout``, as a handset or Twilio plays what the agent sent faster than real time. The
played frames go on as one ``AudioBatch`` to the listener and the recorder; marks whose audio has
played are reported (``MarksPlayed``). Between ticks the call hands the stage what its target
received: the agent's audio (``AudioFrame``), its marks (``AgentMark``) and clears (``AgentClear``:
the queued audio is dropped and every pending mark is due at once).

Agents send speech faster than real time (a whole synthesised sentence at once); the caller hears
it at 20 ms per frame, so what the agent sent and what the caller has heard differ, and every
timing is measured on what was heard. A mark sits at the position of the audio sent before it.
How far ahead the agent may be is bounded (``limits.audio_ahead``): every audio target plays
through a ``Playout``, and what an agent floods beyond the bound is dropped and counted, so an RTP
flood or a stream of megabyte frames costs a few seconds of samples, not gigabytes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tamesu.kernel.messages import AgentClear, AgentMark, AudioBatch, AudioFrame, MarksPlayed, Message

from .stage import Stage

if TYPE_CHECKING:
    from .lane import CallAudio, Lane

__all__ = ["Playout", "TransportStage"]


class Playout:
    """A FIFO of int16 chunks; ``written`` and ``consumed`` count samples of agent audio in and out.

    At most ``limit`` samples wait (None: no bound); those written beyond it are not kept but
    counted in ``dropped``, and the marks after them keep their place in what was kept.
    """

    __slots__ = ("_chunks", "_head", "buffered", "consumed", "dropped", "frame", "limit", "marks", "written")

    def __init__(self, frame: int, *, limit: int | None = None) -> None:
        self.frame = frame
        self.limit = limit
        self._chunks: deque[np.ndarray] = deque()
        self._head = 0
        self.buffered = 0
        self.written = 0
        self.consumed = 0
        self.dropped = 0
        self.marks: deque[tuple[int, str]] = deque()

    @property
    def buffered_s(self) -> float:
        """Seconds still to play (at 50 frames a second)."""
        return self.buffered / (self.frame * 50)

    def write(self, samples: np.ndarray) -> None:
        if self.limit is not None and self.buffered + len(samples) > self.limit:
            room = max(0, self.limit - self.buffered)
            self.dropped += len(samples) - room
            samples = samples[:room].copy()
        if len(samples):
            self._chunks.append(samples)
            self.buffered += len(samples)
            self.written += len(samples)

    def mark(self, name: str) -> None:
        """A mark after the audio written so far."""
        self.marks.append((self.written, name))

    def read_into(self, out: np.ndarray) -> int:
        """Fill ``out`` (zeroed by the caller) with the next samples; returns how many were there."""
        want, got = len(out), 0
        chunks = self._chunks
        while got < want and chunks:
            chunk = chunks[0]
            take = min(want - got, len(chunk) - self._head)
            out[got : got + take] = chunk[self._head : self._head + take]
            got += take
            self._head += take
            if self._head >= len(chunk):
                chunks.popleft()
                self._head = 0
        self.buffered -= got
        self.consumed += got
        return got

    def due_marks(self) -> list[str]:
        """Names of the marks whose audio has played, in order, removed from the buffer."""
        names = []
        while self.marks and self.marks[0][0] <= self.consumed:
            names.append(self.marks.popleft()[1])
        return names

    def clear(self) -> list[str]:
        """Drop the queued audio; every pending mark is due now (their names, in order)."""
        self._chunks.clear()
        self._head = 0
        self.buffered = 0
        self.consumed = self.written
        names = [name for _, name in self.marks]
        self.marks.clear()
        return names


class TransportStage(Stage):
    """The wires and playout buffers of the calls of one lane."""

    def __init__(self, lane: Lane) -> None:
        super().__init__(lane)
        cap = lane.capacity
        self.sends: list[Callable[[bytes], None] | None] = [None] * cap
        self.playouts: list[Playout | None] = [None] * cap
        self.p = np.zeros((cap, lane.frame), dtype=np.int16)

    def attach(self, slot: int, call: CallAudio) -> None:
        self.sends[slot] = call.send
        self.playouts[slot] = Playout(self.lane.frame, limit=call.ahead)

    def detach(self, slot: int) -> None:
        self.sends[slot] = None
        self.playouts[slot] = None

    def handle(self, msg: Message) -> None:
        if isinstance(msg, AudioBatch):
            if msg.channel == "caller" and msg.encoding == self.lane.encoding:
                self._tick(msg)
        elif isinstance(msg, AudioFrame):
            play = self.playouts[msg.call]
            if play is not None:
                play.write(np.frombuffer(msg.pcm, dtype="<i2"))
        elif isinstance(msg, AgentMark):
            play = self.playouts[msg.call]
            if play is not None:
                play.mark(msg.name)
        elif isinstance(msg, AgentClear):
            play = self.playouts[msg.call]
            names = play.clear() if play is not None else []
            if names:
                self.lane.report(MarksPlayed(call=msg.call, names=names, at=msg.at))

    def _tick(self, batch: AudioBatch) -> None:
        lane, p = self.lane, self.p
        data = batch.pcm
        size = len(data) // batch.rows
        p.fill(0)
        sends, plays = self.sends, self.playouts
        for i in batch.calls:
            send, play = sends[i], plays[i]
            if send is None or play is None:
                continue
            send(data[i * size : (i + 1) * size])
            if play.buffered:
                play.read_into(p[i])
            if play.marks and play.marks[0][0] <= play.consumed:
                lane.report(MarksPlayed(call=i, names=play.due_marks(), at=batch.at))
        self.send(
            AudioBatch(
                seq=batch.seq,
                pcm=p.tobytes(),
                rows=batch.rows,
                calls=batch.calls,
                sample_rate=batch.sample_rate,
                channel="agent",
                at=batch.at,
            )
        )
