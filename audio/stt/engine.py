"""The STT interface: a capabilities record and ``transcribe`` over each provider's ``_transcribe``.

``transcribe`` owns what every provider needs the same way: the language check (a clear error,
never a silent English transcript of Spanish), resampling to the rate the model wants, retries of
transient failures, the real-time factor and the counters. A provider implements ``_transcribe``.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from tamesu.errors import ConfigError
from tamesu.registry import Registry

from ..tts.audio import Audio
from ..tts.engine import language_supported
from ..tts.workers import EngineStats, with_retries

__all__ = ["STTCapabilities", "STTEngine", "Transcription", "TranscriptionSegment", "Word", "stt_engines"]


@dataclass(frozen=True)
class Word:
    """One recognised word with its times in seconds from the start of the audio."""

    text: str
    start: float
    end: float
    probability: float | None = None


@dataclass(frozen=True)
class TranscriptionSegment:
    """A stretch of speech the model decoded as one piece (usually a sentence or clause)."""

    start: float
    end: float
    text: str
    words: tuple[Word, ...] = ()


@dataclass(frozen=True)
class Transcription:
    """What was said, when, and how long it took to find out.

    ``real_time_factor`` is processing seconds per second of audio (below 1 is faster than real
    time); ``processing_s`` includes waiting for a free worker.
    """

    text: str
    language: str | None
    duration: float
    segments: tuple[TranscriptionSegment, ...] = ()
    processing_s: float = 0.0
    real_time_factor: float | None = None
    engine: str = ""

    @property
    def words(self) -> tuple[Word, ...]:
        """Every word of every segment, when the engine gave word times (else empty)."""
        return tuple(w for s in self.segments for w in s.words)


@dataclass(frozen=True)
class STTCapabilities:
    """What an engine can recognise, and what it wants to hear."""

    languages: frozenset[str] | None
    """BCP 47 tags (or primary subtags) it recognises; None when any language is accepted."""
    sample_rate: int = 16000
    """The rate audio is resampled to before ``_transcribe``."""
    streaming: bool = False
    word_timestamps: bool = False
    multilingual_hint: str = ""
    """What to configure for other languages; part of the error message when a language is refused."""

    def supports(self, language: str | None) -> bool:
        return language_supported(language, self.languages)


stt_engines: Registry[type[STTEngine]] = Registry("STT engine")


def _describe(languages: Iterable[str] | None) -> str:
    return "any language" if languages is None else ", ".join(sorted(languages))


class STTEngine(ABC):
    """``Audio`` in, ``Transcription`` out; one instance per process is shared (see engines.py)."""

    name: ClassVar[str] = "stt"
    runs_here: ClassVar[bool] = False
    """True for an engine that computes on this machine: a run pays its CPU seconds (at
    ``prices.local_speech_second``), never a price per minute of audio."""

    def __init__(self, *, attempts: int = 1, backoff: float = 0.5) -> None:
        self.attempts = attempts
        self.backoff = backoff
        self.stats = EngineStats()

    @property
    @abstractmethod
    def capabilities(self) -> STTCapabilities: ...

    def check_language(self, language: str | None) -> str | None:
        """Why this engine cannot transcribe ``language``, or None when it can."""
        caps = self.capabilities
        if caps.supports(language):
            return None
        hint = f"; {caps.multilingual_hint}" if caps.multilingual_hint else ""
        return f"STT engine {self.name!r} cannot transcribe {language!r} (it knows {_describe(caps.languages)}){hint}"

    async def transcribe(self, audio: Audio, *, language: str | None = None) -> Transcription:
        """What ``audio`` says; ``language`` (BCP 47) is checked against the capabilities first."""
        problem = self.check_language(language)
        if problem:
            raise ConfigError(problem, path="language")
        start = time.perf_counter()
        if audio.duration == 0:
            return Transcription(text="", language=language, duration=0.0, engine=self.name)
        ready = audio.resample(self.capabilities.sample_rate)
        result = await with_retries(
            lambda: self._transcribe(ready, language=language),
            what=f"{self.name} transcription",
            attempts=self.attempts,
            backoff=self.backoff,
            stats=self.stats,
        )
        elapsed = time.perf_counter() - start
        self.stats.record(audio_s=audio.duration, busy_s=elapsed)
        return replace(
            result,
            duration=audio.duration,
            processing_s=elapsed,
            real_time_factor=elapsed / audio.duration,
            engine=self.name,
        )

    async def transcribe_many(
        self, clips: Sequence[Audio], *, language: str | None = None
    ) -> list[Transcription]:
        """Several utterances (from any calls) at once, in order; engines that can share work do.

        Every result's ``processing_s`` is the whole batch's, its real-time factor the batch's.
        """
        problem = self.check_language(language)
        if problem:
            raise ConfigError(problem, path="language")
        start = time.perf_counter()
        rate = self.capabilities.sample_rate
        ready = [clip.resample(rate) for clip in clips if clip.duration > 0]
        results = iter(
            await with_retries(
                lambda: self._transcribe_many(ready, language=language),
                what=f"{self.name} transcription",
                attempts=self.attempts,
                backoff=self.backoff,
                stats=self.stats,
            )
            if ready
            else []
        )
        elapsed = time.perf_counter() - start
        total = sum(clip.duration for clip in clips)
        rtf = elapsed / total if total else None
        out = []
        for clip in clips:
            result = next(results) if clip.duration > 0 else Transcription("", language, 0.0)
            out.append(
                replace(
                    result,
                    duration=clip.duration,
                    processing_s=elapsed,
                    real_time_factor=rtf,
                    engine=self.name,
                )
            )
            if clip.duration > 0:
                self.stats.record(audio_s=clip.duration, busy_s=elapsed * clip.duration / total)
        return out

    @abstractmethod
    async def _transcribe(self, audio: Audio, *, language: str | None) -> Transcription:
        """The provider's transcription of non-empty audio at ``capabilities.sample_rate``."""

    async def _transcribe_many(self, clips: list[Audio], *, language: str | None) -> list[Transcription]:
        """Non-empty clips at ``capabilities.sample_rate``; by default each on its own, concurrently."""
        return list(await asyncio.gather(*(self._transcribe(clip, language=language) for clip in clips)))

    async def warm(self) -> None:
        """Load the model now (on a worker), so the first call does not pay for it."""
        return None

    def close(self) -> None:
        """Release worker threads; the engine can still be used (they are recreated)."""
        return None
