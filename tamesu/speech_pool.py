"""The speech pool a voice call talks to, and the process's own one.

A call asks a ``SpeechPool`` to synthesise the caller's words and transcribe the agent's; it never
knows where the engines run. ``LocalSpeechPool`` is the process's own engines
(``tamesu.audio.engines``); on Ray the run's services hold a client of a pool of engine actors
instead (``tamesu.actors.pools``, ``tamesu.actors.placement.ray``), with the same three methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tamesu.audio.stt import Transcription
    from tamesu.audio.tts import Audio

__all__ = ["LocalSpeechPool", "SpeechPool", "local_speech_pool"]


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
