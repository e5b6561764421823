"""A call's recording: one stereo WAV, the caller on the left as sent (after the line), the agent on
the right as heard (after playout, so talk-over and gaps are where the caller met them).

The file is written while the call runs, a second at a time, so a long call costs no memory and a
crash leaves a playable file up to the last second (``wave`` patches the sizes when closed). Its
path is recorded in the transcript's events relative to the run's output folder.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

__all__ = ["CallRecording", "read_recording"]

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


def read_recording(path: Path | str) -> tuple[int, np.ndarray, np.ndarray]:
    """(rate, caller, agent) of a recording written by ``CallRecording``."""
    with wave.open(str(path), "rb") as w:
        if w.getnchannels() != 2 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: not a stereo PCM16 recording")
        rate = w.getframerate()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, 2)
    return rate, data[:, 0].astype(np.int16), data[:, 1].astype(np.int16)
