"""The recorder: each call's recording, one stereo WAV, the caller on the left as sent (after the
line), the agent on the right as heard (after playout, so talk-over and gaps are where the caller
met them).

``RecorderStage`` is the last stage of a lane: each tick it takes the caller's frames after the
line and the agent's frames as played, and appends both to the file of every call that records.
The file is written while the call runs, a second at a time, so a long call costs no memory and a
crash leaves a playable file up to the last second (``wave`` patches the sizes when closed). Its
path is recorded in the transcript's events relative to the run's output folder.
"""

from __future__ import annotations

import wave
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tamesu.kernel.messages import AudioBatch, Message

from .stage import Stage, rows_of

if TYPE_CHECKING:
    from .lane import CallAudio, Lane

__all__ = ["CallRecording", "RecorderStage", "read_recording"]

_FLUSH_S = 1.0


class CallRecording:
    """A stereo PCM16 WAV at the call's wire rate, appended frame by frame."""

    def __init__(self, path: Path | str, rate: int) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rate = rate
        self.frames = 0
        self._wav: wave.Wave_write | None = wave.open(str(self.path), "wb")
        self._wav.setnchannels(2)
        self._wav.setsampwidth(2)
        self._wav.setframerate(rate)
        self._buf = bytearray()
        self._flush_bytes = int(rate * _FLUSH_S) * 4

    @property
    def seconds(self) -> float:
        return self.frames / self.rate

    def write(self, caller: np.ndarray, agent: np.ndarray) -> None:
        """One frame of each channel (equal lengths, int16)."""
        if self._wav is None:
            return
        both = np.empty((len(caller), 2), dtype="<i2")
        both[:, 0] = caller
        both[:, 1] = agent
        self._buf += both.tobytes()
        self.frames += len(caller)
        if len(self._buf) >= self._flush_bytes:
            self._flush()

    def _flush(self) -> None:
        if self._wav is not None and self._buf:
            self._wav.writeframesraw(bytes(self._buf))
            self._buf.clear()

    def close(self) -> None:
        """Write what is left and fix the header; safe to call twice."""
        if self._wav is None:
            return
        try:
            self._flush()
            self._wav.close()
        finally:
            self._wav = None


class RecorderStage(Stage):
    """The recordings of the calls of one lane."""

    def __init__(self, lane: Lane) -> None:
        super().__init__(lane)
        self.recordings: dict[int, CallRecording] = {}
        self._caller: tuple[int, np.ndarray] | None = None
        self._agent: tuple[int, np.ndarray] | None = None
        """The two channels of a tick, kept until both have come (in either order)."""

    def attach(self, slot: int, call: CallAudio) -> None:
        if call.recording is not None:
            self.recordings[slot] = call.recording

    def detach(self, slot: int) -> None:
        self.recordings.pop(slot, None)

    def handle(self, msg: Message) -> None:
        if not self.recordings or not isinstance(msg, AudioBatch):
            return
        if msg.channel == "agent":
            self._agent = (msg.seq, rows_of(msg))
        elif msg.encoding == "pcm16":
            self._caller = (msg.seq, rows_of(msg))
        caller, agent = self._caller, self._agent
        if caller is None or agent is None or caller[0] != agent[0]:
            return
        self._caller = self._agent = None
        for i, recording in self.recordings.items():
            recording.write(caller[1][i], agent[1][i])


def read_recording(path: Path | str) -> tuple[int, np.ndarray, np.ndarray]:
    """(rate, caller, agent) of a recording written by ``CallRecording``."""
    with wave.open(str(path), "rb") as w:
        if w.getnchannels() != 2 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: not a stereo PCM16 recording")
        rate = w.getframerate()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, 2)
    return rate, data[:, 0].astype(np.int16), data[:, 1].astype(np.int16)
