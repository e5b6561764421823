"""The agent's audio waiting to be heard: a playout buffer with marks, as a handset or Twilio keeps it.

Agents send speech faster than real time (a whole synthesised sentence at once); the caller hears
it at 20 ms per frame, so what the agent sent and what the caller has heard differ, and every
timing is measured on what was heard. A mark (Twilio's ``mark``) sits at the position of the audio
sent before it and is due once that audio has played; ``clear`` (Twilio's ``clear``, a voice
protocol's interruption) drops what is still queued and makes every pending mark due at once.
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["Playout"]


class Playout:
    """A FIFO of int16 chunks; ``written`` and ``consumed`` count samples of agent audio in and out."""

    __slots__ = ("_chunks", "_head", "buffered", "consumed", "frame", "marks", "written")

    def __init__(self, frame: int) -> None:
        self.frame = frame
        self._chunks: deque[np.ndarray] = deque()
        self._head = 0
        self.buffered = 0
        self.written = 0
        self.consumed = 0
        self.marks: deque[tuple[int, str]] = deque()

    @property
    def buffered_s(self) -> float:
        """Seconds still to play (at 50 frames a second)."""
        return self.buffered / (self.frame * 50)

    def write(self, samples: np.ndarray) -> None:
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
