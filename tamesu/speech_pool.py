"""The speech pool a voice call talks to, and the process's own one.

A call asks a ``SpeechPool`` to synthesise the caller's words and transcribe the agent's; it never
knows where the engines run. ``LocalSpeechPool`` is the process's own engines
(``tamesu.audio.engines``); on Ray the run's services hold a client of a pool of engine actors
instead (``tamesu.actors.pools``, ``tamesu.runner.placement.ray``), with the same three methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tamesu.audio.stt import Transcription
    from tamesu.audio.tts import Audio

__all__ = ["LocalSpeechPool", "MeteredSpeech", "SpeechPool", "local_speech_pool"]


class SpeechPool(Protocol):
    """What a voice call needs from speech engines, wherever they run."""

    async def synthesize(
        self, text: str, *, voice: str | None = None, language: str | None = None, engine: str | None = None
    ) -> Audio:
        """``text`` spoken (``engine`` forces one by name; else the voice and language choose)."""
        ...

    async def transcribe(
        self, audio: Audio, *, language: str | None = None, engine: str | None = None
    ) -> Transcription:
        """What ``audio`` says."""
        ...

    def stats(self) -> dict[str, Any]: ...


class LocalSpeechPool:
    """The process's own engines: one model per engine and options, shared by every call here."""

    async def synthesize(
        self, text: str, *, voice: str | None = None, language: str | None = None, engine: str | None = None
    ) -> Audio:
        from tamesu.audio.engines import get_tts, tts_for

        if engine is not None:
            return await get_tts(engine).synthesize(text, voice=voice, language=language)
        tts, choice = tts_for(voice, language)
        return await tts.synthesize(text, voice=choice.voice, language=choice.language or language)

    async def transcribe(
        self, audio: Audio, *, language: str | None = None, engine: str | None = None
    ) -> Transcription:
        from tamesu.audio.engines import get_stt

        return await get_stt(engine).transcribe(audio, language=language)

    def stats(self) -> dict[str, Any]:
        from tamesu.audio.engines import engine_stats

        return {"pool": "local", "engines": engine_stats()}


_local: LocalSpeechPool | None = None


def local_speech_pool() -> LocalSpeechPool:
    """The process's own engines as a pool: what a call uses when its run's services name none."""
    global _local
    if _local is None:
        _local = LocalSpeechPool()
    return _local


class MeteredSpeech:
    """One run's view of a pool that counts what the run asked of each engine: characters sent to
    TTS, seconds of audio sent to STT, and the CPU seconds local engines spent on the run's requests
    (``tamesu.engine_cpu``): what ``run_costs`` prices.
    Lines the voice cache already holds are never asked again, so they cost nothing."""

    def __init__(self, pool: SpeechPool) -> None:
        from tamesu.engine_cpu import CpuAccount

        self.pool = pool
        self.tts_characters: dict[str, int] = {}
        self.stt_seconds: dict[str, float] = {}
        self.cpu = CpuAccount()

    @property
    def shared(self) -> SpeechPool:
        """The pool underneath: caches keyed by pool use it, so every run shares them."""
        return self.pool

    async def synthesize(
        self, text: str, *, voice: str | None = None, language: str | None = None, engine: str | None = None
    ) -> Audio:
        from tamesu.audio.voices import resolve_voice
        from tamesu.engine_cpu import charging

        name = engine or resolve_voice(voice, language).engine
        try:
            with charging(self.cpu):
                return await self.pool.synthesize(text, voice=voice, language=language, engine=engine)
        finally:
            self.tts_characters[name] = self.tts_characters.get(name, 0) + len(text)

    async def transcribe(
        self, audio: Audio, *, language: str | None = None, engine: str | None = None
    ) -> Transcription:
        from tamesu.audio.engines import DEFAULT_STT
        from tamesu.engine_cpu import charging

        name = engine or DEFAULT_STT
        try:
            with charging(self.cpu):
                return await self.pool.transcribe(audio, language=language, engine=engine)
        finally:
            seconds = len(audio.samples) / audio.sample_rate if audio.sample_rate else 0.0
            self.stt_seconds[name] = self.stt_seconds.get(name, 0.0) + seconds

    def stats(self) -> dict[str, Any]:
        return self.pool.stats()

    @property
    def used(self) -> bool:
        """Whether the run asked any engine for anything (an entry is made per engine asked)."""
        return bool(self.tts_characters or self.stt_seconds)
