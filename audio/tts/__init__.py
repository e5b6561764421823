"""Text-to-speech engines behind one interface: ``TTSEngine.synthesize(text) -> Audio``.

``piper`` (neural, local voice files; the default for English), ``espeak`` (espeak-ng, every
language it knows; the default for the others) and ``openai`` (hosted, only when configured).
Engines load lazily from ``tts_engines``; use ``tamesu.audio.engines.get_tts`` to share them.
"""

from __future__ import annotations

from .audio import Audio, read_wav_bytes
from .cache import DEFAULT_CACHE_BYTES, CacheKey, SynthesisCache
from .engine import TTSCapabilities, TTSEngine, language_supported, primary_language, tts_engines
from .workers import EngineStats, Lazy, Retryable, Workers, with_retries

for _name, _ref in {
    "piper": "tamesu.audio.tts.piper:PiperTTS",
    "espeak": "tamesu.audio.tts.espeak:EspeakTTS",
    "openai": "tamesu.audio.tts.hosted:OpenAITTS",
}.items():
    if _name not in tts_engines:
        tts_engines.add(_name, _ref)
del _name, _ref

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "Audio",
    "CacheKey",
    "EngineStats",
    "Lazy",
    "Retryable",
    "SynthesisCache",
    "TTSCapabilities",
    "TTSEngine",
    "Workers",
    "language_supported",
    "primary_language",
    "read_wav_bytes",
    "tts_engines",
    "with_retries",
]
