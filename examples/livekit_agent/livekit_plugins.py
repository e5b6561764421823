"""LiveKit Agents STT, TTS and VAD plugins that need no hosted service: tamesu's offline engines.

``OfflineSTT`` transcribes with tamesu's Whisper (faster-whisper), ``OfflineTTS`` speaks with its
Piper voice, and ``OfflineVAD`` is LiveKit's own Silero plugin (its model ships in the wheel).
They stand in for a team's Deepgram / ElevenLabs / OpenAI plugins, so a worker's audio path
(the caller's track in, the agent's track and transcription out) runs in CI with nothing to
download and nothing to pay for.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents import APIConnectOptions, stt, tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, NotGivenOr

from tamesu.audio.tts import Audio
from tamesu.speech_pool import local_speech_pool


class OfflineSTT(stt.STT):
    """Whisper, offline, one utterance at a time (AgentSession cuts the utterances with its VAD)."""

    def __init__(self, *, engine: str = "whisper", language: str = "en") -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=False, interim_results=False))
        self.engine, self.language = engine, language

    async def _recognize_impl(
        self, buffer: Any, *, language: NotGivenOr[str] = NOT_GIVEN, conn_options: APIConnectOptions
    ) -> stt.SpeechEvent:
        frame = rtc.combine_audio_frames(buffer)
        samples = np.frombuffer(bytes(frame.data), dtype="<i2")
        if frame.num_channels > 1:
            samples = samples.reshape(-1, frame.num_channels).mean(axis=1).astype(np.int16)
        heard = await local_speech_pool().transcribe(Audio(samples, frame.sample_rate), engine=self.engine)
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            alternatives=[stt.SpeechData(language=self.language, text=heard.text.strip())],  # type: ignore[arg-type]
        )


class OfflineTTS(tts.TTS):
    """Piper, offline: each text synthesised whole and sent as PCM."""

    def __init__(self, *, engine: str = "piper", sample_rate: int = 22050) -> None:
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=False), sample_rate=sample_rate, num_channels=1
        )
        self.engine = engine

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return _Synthesis(tts=self, input_text=text, conn_options=conn_options)


class _Synthesis(tts.ChunkedStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        from tamesu.audio.resample import resample

        engine: OfflineTTS = self._tts  # type: ignore[assignment]
        audio = await local_speech_pool().synthesize(self.input_text, engine=engine.engine)
        samples = np.asarray(audio.samples)
        if audio.sample_rate != engine.sample_rate:
            samples = resample(samples, audio.sample_rate, engine.sample_rate)
        output_emitter.initialize(
            request_id=uuid.uuid4().hex, sample_rate=engine.sample_rate, num_channels=1, mime_type="audio/pcm"
        )
        output_emitter.push(np.asarray(samples, dtype="<i2").tobytes())
        output_emitter.flush()


def OfflineVAD() -> Any:
    """LiveKit's Silero VAD (livekit-plugins-silero), its bundled model loaded."""
    from livekit.plugins import silero

    return silero.VAD.load()
