"""The TTS interface: a capabilities record and ``synthesize`` over each provider's ``_synthesize``.

``synthesize`` owns what every provider needs the same way: the language check, the synthesis
cache (one synthesis per prompt per process), retries of transient failures, and the counters.
A provider implements only ``_synthesize`` and says what it can do in ``capabilities``. Providers
are registered by name in ``tts_engines``; ``tamesu.audio.engines.get_tts`` builds and shares them.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from tamesu.errors import ConfigError
from tamesu.registry import Registry

from .audio import Audio
from .cache import SynthesisCache
from .workers import EngineStats, with_retries

__all__ = ["TTSCapabilities", "TTSEngine", "language_supported", "primary_language", "tts_engines"]


def primary_language(tag: str) -> str:
    """The primary subtag of a BCP 47 tag, lower case: ``es-ES`` -> ``es``, ``en_US`` -> ``en``."""
    return tag.replace("_", "-").split("-", 1)[0].lower()


def language_supported(language: str | None, languages: Iterable[str] | None) -> bool:
    """Whether ``language`` is covered; ``languages`` None means any, and primary subtags match."""
    if language is None or languages is None:
        return True
    want = primary_language(language)
    return any(primary_language(have) == want for have in languages)


@dataclass(frozen=True)
class TTSCapabilities:
    """What an engine can say, and how its audio comes out."""

    languages: frozenset[str] | None
    """BCP 47 tags (or primary subtags) it speaks; None when any language is accepted (hosted)."""
    sample_rate: int
    """The native output rate; ``Audio.resample`` converts when the line wants another."""
    streaming: bool = False
    """Whether audio can start before the whole utterance is synthesised (none of ours yet)."""
    voices: tuple[str, ...] = ()
    """Engine voice names accepted as ``voice``; empty when any string the engine knows is accepted."""
    default_voice: str | None = None

    def supports(self, language: str | None) -> bool:
        return language_supported(language, self.languages)


tts_engines: Registry[type[TTSEngine]] = Registry("TTS engine")


class TTSEngine(ABC):
    """Text in, ``Audio`` out; one instance per process is shared by every call (see engines.py).

    ``attempts`` and ``backoff`` bound the retries of transient provider failures; ``cache`` is the
    synthesis cache (None disables caching).
    """

    name: ClassVar[str] = "tts"
    runs_here: ClassVar[bool] = False
    """True for an engine that computes on this machine: a run pays its CPU seconds (at
    ``prices.local_speech_second``), never a price per character."""

    def __init__(
        self, *, cache: SynthesisCache | None = None, attempts: int = 1, backoff: float = 0.5
    ) -> None:
        self.cache = cache
        self.attempts = attempts
        self.backoff = backoff
        self.stats = EngineStats()

    @property
    @abstractmethod
    def capabilities(self) -> TTSCapabilities: ...

    @property
    def identity(self) -> str:
        """What distinguishes this engine's output in the cache: its name and model."""
        return self.name

    async def synthesize(self, text: str, *, voice: str | None = None, language: str | None = None) -> Audio:
        """``text`` spoken at the engine's native rate; cached by (engine, voice, language, text)."""
        caps = self.capabilities
        if not caps.supports(language):
            raise ConfigError(
                f"TTS engine {self.name!r} cannot speak {language!r} (it speaks {', '.join(sorted(caps.languages or ()))})",
                hint="pick a voice of that language (espeak speaks most languages) or another TTS engine",
            )
        if not text.strip():
            return Audio.silence(0.0, caps.sample_rate)
        if self.cache is None:
            return await self._measured(text, voice, language)
        key = (self.identity, voice or "", language or "", text)
        audio, hit = await self.cache.get_or_make(key, lambda: self._measured(text, voice, language))
        if hit:
            self.stats.count("cache_hits")
        return audio

    async def _measured(self, text: str, voice: str | None, language: str | None) -> Audio:
        start = time.perf_counter()
        audio = await with_retries(
            lambda: self._synthesize(text, voice=voice, language=language),
            what=f"{self.name} synthesis",
            attempts=self.attempts,
            backoff=self.backoff,
            stats=self.stats,
        )
        self.stats.record(audio_s=audio.duration, busy_s=time.perf_counter() - start)
        return audio

    @abstractmethod
    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        """The provider's synthesis of non-empty text; raise ``Retryable`` for transient failures."""

    async def warm(self) -> None:
        """Load the model now (on a worker), so the first call does not pay for it."""
        return None

    def close(self) -> None:
        """Release worker threads; the engine can still be used (they are recreated)."""
        return None
