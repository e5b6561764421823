"""The caller's side of one call as the pump sees it: what it is saying, and where its audio goes.

``CallAudio`` is one call's slot in the ``FramePump``: a queue of utterances the caller speaks
frame by frame (``say`` resolves when the last sample has been sent, with the speech spans dated on
the run's clock), the callback that puts each encoded frame on the wire, the agent's ``Playout``,
and the callbacks the pump reports the agent's speech and played marks through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .playout import Playout

if TYPE_CHECKING:
    from .pump import _Block
    from .speech import Utterance

__all__ = ["FRAME_S", "CallAudio", "Spoken"]

FRAME_S = 0.020


class Spoken:
    """When an utterance was sent: its first sample and its speech spans, in seconds on the run's clock."""

    __slots__ = ("end", "spans", "start", "stopped")

    def __init__(self, start: float, end: float, spans: list[tuple[float, float]], stopped: bool) -> None:
        self.start = start
        self.end = end
        self.spans = spans
        self.stopped = stopped

    @property
    def speech_end(self) -> float:
        return self.spans[-1][1] if self.spans else self.start


class CallAudio:
    """One call as the pump sees it: the caller's queue of utterances, the wire, the agent's playout.

    ``send`` gets the encoded wire bytes of every frame; ``on_vad(kind, at)`` the agent channel's
    speech_start / speech_end (``at`` on the run's clock); ``on_marks`` the names of marks whose audio
    has just been played; ``on_frame(caller, agent)`` (optional) each frame's caller audio after the
    line and the agent audio played, for recordings, speech-to-text buffers and DTMF detection.
    """

    def __init__(
        self,
        *,
        rate: int,
        encoding: str = "pcm16",
        line: str | None = None,
        seed: int = 0,
        send: Callable[[bytes], None],
        on_vad: Callable[[str, float], None] | None = None,
        on_marks: Callable[[list[str]], None] | None = None,
        on_frame: Callable[[np.ndarray, np.ndarray], None] | None = None,
        noise: Any = None,
    ) -> None:
        from tamesu.audio.codec import normalise_encoding

        self.rate = rate
        self.encoding = normalise_encoding(encoding)
        self.line = line
        self.seed = seed
        self.frame = rate // 50
        self.send = send
        self.on_vad = on_vad
        self.on_marks = on_marks
        self.on_frame = on_frame
        self.noise = noise
        """A ``NoiseMixer`` (or anything with ``mix(frame)``) applied to the caller's frames before the line."""
        self.playout = Playout(self.frame)
        self.t0 = 0.0
        self._frames = 0
        self.line_latency = 0.0
        self.vad: Any = None
        """A per-call ``TurnDetector`` when the rate is one webrtcvad cannot take."""
        self._queue: list[tuple[Utterance, asyncio.Future[Spoken]]] = []
        self._cur: Utterance | None = None
        self._fut: asyncio.Future[Spoken] | None = None
        self._pos = 0
        self._start_frame = 0
        self._block: _Block | None = None
        self._slot = -1

    @property
    def frames(self) -> int:
        """Frames sent since the call was attached (the block counts them while it is)."""
        block = self._block
        return int(block.k[self._slot]) if block is not None else self._frames

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
        return self._cur is not None or bool(self._queue)

    def say(self, utterance: Utterance) -> asyncio.Future[Spoken]:
        """Queue an utterance; the future resolves once its last sample is sent (or it is stopped)."""
        fut: asyncio.Future[Spoken] = asyncio.get_running_loop().create_future()
        if len(utterance.samples) == 0:
            fut.set_result(Spoken(self.now, self.now, [], False))
            return fut
        self._queue.append((utterance, fut))
        if self._cur is None:
            self._next()
        return fut

    def hush(self) -> None:
        """Stop talking now: the utterance in progress is cut and the queue dropped."""
        queued, self._queue = self._queue, []
        if self._cur is not None:
            self._finish(stopped=True)
        for _, fut in queued:
            if not fut.done():
                fut.set_result(Spoken(self.now, self.now, [], True))

    def _next(self) -> None:
        if self._queue:
            self._cur, self._fut = self._queue.pop(0)
            self._pos = 0
            self._start_frame = self.frames
            if self._block is not None:
                self._block.talking.add(self._slot)
        else:
            self._cur = self._fut = None
            if self._block is not None:
                self._block.talking.discard(self._slot)

    def _finish(self, *, stopped: bool = False) -> None:
        utt, fut = self._cur, self._fut
        assert utt is not None
        start = self.time_of(self._start_frame) + self.line_latency
        sent_s = min(self._pos, len(utt.samples)) / utt.rate
        spans = [(start + a, start + min(b, sent_s)) for a, b in utt.spans if a < sent_s]
        self._cur = self._fut = None
        self._next()
        if fut is not None and not fut.done():
            fut.set_result(Spoken(start, start + sent_s, spans, stopped))
