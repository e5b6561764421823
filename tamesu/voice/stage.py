"""What every stage of a lane is: a handler of typed messages with outputs (``Stage``), and the
names the stages and their lane share (the tick, a lane's key, what a stage reports to a call).

The stages (``caller``, ``line``, ``transport``, ``listener``, ``recording``) build on this module
and the lane (``lane``) wires them, so no stage module needs the lane's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from tamesu.kernel.messages import AgentSpeech, AgentTones, AudioBatch, CallerSpoke, MarksPlayed, Message

if TYPE_CHECKING:
    from .lane import CallAudio, Lane

__all__ = ["FRAME_S", "CallReport", "FrameEar", "LaneKey", "Stage", "rows_of"]

FRAME_S = 0.020
LaneKey = tuple[int, str, "str | None"]
"""(sample rate, wire encoding, line model) of the calls of a lane."""
CallReport = CallerSpoke | MarksPlayed | AgentTones | AgentSpeech
"""What a stage tells one call (``call`` is the call's slot)."""


def rows_of(batch: AudioBatch) -> np.ndarray:
    """A PCM16 batch's frames as a read-only (rows, samples) int16 array (no copy)."""
    return np.frombuffer(batch.pcm, dtype="<i2").reshape(batch.rows, -1)


class FrameEar(Protocol):
    """What a call's listener does with each frame the agent played (speech-to-text buffers, DTMF)."""

    def frame(self, agent: np.ndarray, at: float) -> str:
        """One played frame at ``at`` (run clock); the keypad digits heard in it."""


class Stage:
    """One stage of a lane: it handles typed messages and sends what it makes to its outputs."""

    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.outputs: list[Stage] = []

    def connect(self, *stages: Stage) -> Stage:
        self.outputs.extend(stages)
        return self

    def deliver(self, msg: Message) -> None:
        """Handle ``msg`` now (through the lane's boundary, when it has one)."""
        boundary = self.lane.boundary
        self.handle(msg if boundary is None else boundary(msg))

    def send(self, msg: Message) -> None:
        for out in self.outputs:
            out.deliver(msg)

    def handle(self, msg: Message) -> None:
        raise NotImplementedError

    def attach(self, slot: int, call: CallAudio) -> None:
        """A call takes ``slot``."""

    def detach(self, slot: int) -> None:
        """The call in ``slot`` left."""
