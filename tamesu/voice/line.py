"""The line stage: what happens to the caller's voice between the handset and the agent's wire.

Background noise is mixed in at the caller's end (``behaviors.background_noise``, per call), the
line model (``line_quality``: band limits, its codec, packet loss, jitter) runs over the frames of
every call of the lane in one ``LineBank`` step, and the result is encoded in the wire's format in
one step. The encoded batch goes to the transport; the same audio as PCM16 (what the caller's
channel of a recording keeps) goes to the recorder, when a call of the lane records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tamesu.kernel.messages import AudioBatch, Message

from .stage import Stage, rows_of

if TYPE_CHECKING:
    import numpy as np

    from .lane import CallAudio, Lane
    from .settings import VoiceSettings

__all__ = ["LineStage", "caller_noise"]


def caller_noise(settings: VoiceSettings) -> Any:
    """The background noise at the caller's end (``behaviors.background_noise`` at its SNR), or None."""
    if not settings.background_noise:
        return None
    from tamesu.audio.noise import NoiseMixer, NoiseSource

    source = NoiseSource(settings.background_noise, settings.rate, settings.seed)
    return NoiseMixer(source, settings.noise_snr_db)


class LineStage(Stage):
    """Noise, line model and wire codec for the calls of one lane."""

    def __init__(self, lane: Lane) -> None:
        super().__init__(lane)
        line = lane.key[2]
        self.bank: Any = None
        self.latency = 0.0
        """Seconds the line model delays the caller's voice (resampling to and from its own rate)."""
        if line:
            from tamesu.audio.phone_line import get_line_model

            cap = lane.capacity
            self.bank = get_line_model(line).bank(cap, [0] * cap, rate=lane.rate)
            self.latency = self.bank.latency_s
        self.noise: dict[int, Any] = {}

    def attach(self, slot: int, call: CallAudio) -> None:
        if self.bank is not None:
            self.bank.reset(slot, call.seed)
        if call.noise is not None:
            self.noise[slot] = call.noise

    def detach(self, slot: int) -> None:
        self.noise.pop(slot, None)

    def handle(self, msg: Message) -> None:
        if not isinstance(msg, AudioBatch):
            return
        x = rows_of(msg)
        if self.noise:
            x = x.copy()
            for i, mixer in self.noise.items():
                x[i] = mixer.mix(x[i])
        y = x if self.bank is None else self.bank.process(x)
        encoding = self.lane.encoding
        heard = y.astype("<i2", copy=False)
        if encoding == "pcm16":
            self.send(self._batch(msg, heard.tobytes(), "pcm16"))
            return
        if self.lane.recorder.recordings:
            self.send(self._batch(msg, heard.tobytes(), "pcm16"))
        self.send(self._batch(msg, _encode(y, encoding).tobytes(), encoding))

    @staticmethod
    def _batch(msg: AudioBatch, pcm: bytes, encoding: str) -> AudioBatch:
        return AudioBatch(
            seq=msg.seq,
            pcm=pcm,
            rows=msg.rows,
            calls=msg.calls,
            sample_rate=msg.sample_rate,
            encoding=encoding,
            channel="caller",
            at=msg.at,
        )


def _encode(y: np.ndarray, encoding: str) -> np.ndarray:
    if encoding == "mulaw":
        from tamesu.audio.codec import ulaw_encode

        return ulaw_encode(y)
    from tamesu.audio.codec import alaw_encode

    return alaw_encode(y)
