"""Speech engines for pool tests: a tone per word (TTS; voice ``slow`` takes 0.3 s) and a counter of
words (STT).

``register()`` is also the pool replicas' setup, so the Ray tests ship this module by value.
"""

from __future__ import annotations

import asyncio

import numpy as np

from tamesu.audio.stt import STTCapabilities, STTEngine, Transcription
from tamesu.audio.tts import Audio, TTSCapabilities, TTSEngine

RATE = 8000


class ToneTTS(TTSEngine):
    """0.1 s of tone per word, so the length of the audio tells what was said."""

    name = "test-tone"

    @property
    def capabilities(self) -> TTSCapabilities:
        return TTSCapabilities(languages=frozenset({"en"}), sample_rate=RATE)

    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        if voice == "slow":
            await asyncio.sleep(0.3)
        words = len(text.split())
        t = np.arange(int(0.1 * RATE * words)) / RATE
        return Audio.from_float(0.3 * np.sin(2 * np.pi * 440 * t), RATE)


class BusyTTS(TTSEngine):
    """A local engine: 0.1 s of its worker's CPU per word, then silence; what it spent is charged."""

    name = "test-busy"
    runs_here = True

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        from tamesu.audio.tts.workers import Workers

        self.workers = Workers(self.name, 1)

    @property
    def capabilities(self) -> TTSCapabilities:
        return TTSCapabilities(languages=None, sample_rate=RATE)

    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        return await self.workers.run(self._work, len(text.split()))

    def _work(self, words: int) -> Audio:
        import time

        end = time.thread_time() + 0.1 * words
        while time.thread_time() < end:
            pass
        return Audio.from_float(np.zeros(int(0.1 * RATE * words)), RATE)


class CountSTT(STTEngine):
    """Hears how many 0.1 s words of tone the audio holds."""

    name = "test-count"

    @property
    def capabilities(self) -> STTCapabilities:
        return STTCapabilities(languages=None, sample_rate=RATE)

    async def _transcribe(self, audio: Audio, *, language: str | None) -> Transcription:
        return Transcription(
            text=f"{round(audio.duration / 0.1)} words", language=language, duration=audio.duration
        )


def register() -> None:
    """Imports inside: shipped by value, the function must reach the registries of the process it runs in."""
    from tamesu.audio.stt import stt_engines
    from tamesu.audio.tts import tts_engines

    if "test-tone" not in tts_engines:
        tts_engines.add("test-tone", ToneTTS)
    if "test-busy" not in tts_engines:
        tts_engines.add("test-busy", BusyTTS)
    if "test-count" not in stt_engines:
        stt_engines.add("test-count", CountSTT)
