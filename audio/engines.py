"""The process's speech engines: each (engine, options) is built once and shared by every call.

A voice test holds dozens of calls in one process (or one Ray worker); each would otherwise load
its own 60 MB Piper voice and 75 MB Whisper model. ``get_tts`` / ``get_stt`` return the one engine
for a name and options, whose model loads on first use and whose bounded worker pool every call
queues on. All TTS engines share one synthesis cache, so a prompt is synthesised once per process.
``check_language`` and ``available`` answer the loader and ``tamesu doctor`` without loading models.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from typing import Any

from tamesu.errors import ConfigError, TamesuError

from .stt import STTEngine, stt_engines
from .tts import DEFAULT_CACHE_BYTES, SynthesisCache, TTSEngine, tts_engines
from .voices import VoiceChoice, resolve_voice

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_STT",
    "DEFAULT_TTS",
    "available",
    "check_language",
    "configure_cache",
    "engine_stats",
    "get_stt",
    "get_tts",
    "runs_here",
    "shutdown",
    "stt_for",
    "synthesis_cache",
    "tts_for",
]

DEFAULT_TTS = "piper"
DEFAULT_STT = "whisper"
CACHE_DIR_ENV = "TAMESU_TTS_CACHE_DIR"
"""A directory where synthesised prompts are kept across runs (off when unset)."""

_lock = threading.RLock()
_tts: dict[str, TTSEngine] = {}
_stt: dict[str, STTEngine] = {}
_cache: SynthesisCache | None = None


def _key(name: str, options: dict[str, Any]) -> str:
    return f"{name}:{json.dumps(options, sort_keys=True, default=str)}"


def synthesis_cache() -> SynthesisCache:
    """The cache every TTS engine of this process shares (created on first use)."""
    global _cache
    with _lock:
        if _cache is None:
            _cache = SynthesisCache(
                max_bytes=DEFAULT_CACHE_BYTES, directory=os.environ.get(CACHE_DIR_ENV) or None
            )
        return _cache


def configure_cache(*, max_bytes: int = DEFAULT_CACHE_BYTES, directory: str | None = None) -> SynthesisCache:
    """Replace the shared cache (engines built afterwards use the new one)."""
    global _cache
    with _lock:
        _cache = SynthesisCache(max_bytes=max_bytes, directory=directory)
        return _cache


def _unknown(kind: str, name: str, known: list[str]) -> ConfigError:
    return ConfigError(f"unknown {kind} engine {name!r}", hint=f"known: {', '.join(known)}")


def get_tts(name: str | None = None, **options: Any) -> TTSEngine:
    """The shared TTS engine ``name`` (default piper) built with ``options`` (its constructor's keywords)."""
    name = name or DEFAULT_TTS
    key = _key(name, options)
    with _lock:
        engine = _tts.get(key)
        if engine is None:
            if name not in tts_engines:
                raise _unknown("TTS", name, tts_engines.names())
            options.setdefault("cache", synthesis_cache())
            engine = _tts[key] = tts_engines.get(name)(**options)
        return engine


def get_stt(name: str | None = None, **options: Any) -> STTEngine:
    """The shared STT engine ``name`` (default whisper) built with ``options`` (its constructor's keywords)."""
    name = name or DEFAULT_STT
    key = _key(name, options)
    with _lock:
        engine = _stt.get(key)
        if engine is None:
            if name not in stt_engines:
                raise _unknown("STT", name, stt_engines.names())
            engine = _stt[key] = stt_engines.get(name)(**options)
        return engine


def runs_here(kind: str, name: str) -> bool:
    """Whether the ``kind`` ("tts" or "stt") engine ``name`` computes on this machine (priced by
    its CPU seconds) rather than at a provider (priced per character or minute); False for a name
    no registry knows."""
    registry = tts_engines if kind == "tts" else stt_engines
    try:
        return bool(registry.get(name).runs_here)
    except Exception:
        return False


def tts_for(
    voice: str | None = None, language: str | None = None, **engine_options: dict[str, Any]
) -> tuple[TTSEngine, VoiceChoice]:
    """The engine for a persona's voice/language and the choice to pass on:
    ``engine.synthesize(text, voice=choice.voice, language=choice.language)``.

    ``engine_options`` maps an engine name to its options (``piper={"model_path": ...}``).
    """
    choice = resolve_voice(voice, language)
    return get_tts(choice.engine, **engine_options.get(choice.engine, {})), choice


NARROWBAND_RATE = 8000
"""Lines at or below this rate (G.711 phone lines: Twilio, SIP) get the better ear."""


def stt_for(rate: int | None, language: str | None) -> str:
    """The STT engine the listener uses on a line of ``rate`` Hz for ``language``, by measurement
    (``benchmarks/results/speech_accuracy.json``): Whisper base on 8 kHz lines and for any language
    but English (tiny.en hears only English); tiny.en on wideband English, where base hears little
    better at twice the CPU. ``$TAMESU_WHISPER_MODEL`` (one model for everything) keeps ``whisper``,
    and so does a machine without the base model, whose refusal then names what to install.
    """
    from .stt.shipped import SHIPPED_MODELS
    from .stt.whisper import MODEL_ENV

    if os.environ.get(MODEL_ENV) or not SHIPPED_MODELS["base"].installed():
        return DEFAULT_STT
    english = language is None or language.replace("_", "-").split("-", 1)[0].lower() == "en"
    narrow = rate is not None and rate <= NARROWBAND_RATE
    return "whisper-base" if narrow or not english else DEFAULT_STT


def check_language(stt_name: str | None, language: str | None, **options: Any) -> str | None:
    """Why STT ``stt_name`` (with ``options``) cannot transcribe ``language``, or None when it can.

    Loads no model: the loader calls it for every test's language to fail at validate time.
    """
    if language is None:
        return None
    try:
        return get_stt(stt_name, **options).check_language(language)
    except ConfigError as exc:
        return f"{exc.message} ({exc.hint})" if exc.hint else exc.message
    except TamesuError as exc:
        return str(exc)


def available() -> dict[str, Any]:
    """Which engines and models are installed, for ``tamesu doctor`` (nothing is loaded)."""
    from .stt.shipped import SHIPPED_MODELS
    from .stt.whisper import default_whisper_model, whisper_is_multilingual
    from .tts.espeak import espeak_binary, espeak_languages
    from .tts.piper import default_piper_model

    piper_model = default_piper_model()
    whisper_model = default_whisper_model()
    espeak = espeak_binary()
    hosted = bool(os.environ.get("OPENAI_API_KEY"))
    multilingual = (
        whisper_is_multilingual(whisper_model) if whisper_model and whisper_model.is_dir() else None
    )
    return {
        "defaults": {"tts": DEFAULT_TTS, "stt": DEFAULT_STT},
        "tts": {
            "piper": {
                "installed": importlib.util.find_spec("piper") is not None and piper_model is not None,
                "model": str(piper_model) if piper_model else None,
            },
            "espeak": {
                "installed": espeak is not None,
                "binary": espeak,
                "languages": len(espeak_languages()) if espeak else 0,
                "debian": "espeak-ng",
            },
            "openai": {"configured": hosted},
        },
        "stt": {
            "whisper": {
                "installed": importlib.util.find_spec("faster_whisper") is not None
                and whisper_model is not None,
                "model": str(whisper_model) if whisper_model else None,
                "languages": None if multilingual is None else ("any" if multilingual else ["en"]),
            },
            "whisper-base": {
                "installed": importlib.util.find_spec("faster_whisper") is not None
                and SHIPPED_MODELS["base"].installed(),
                "model": "base (shipped)",
                "languages": "any",
            },
            "openai": {"configured": hosted},
        },
        "loaded": sorted([*_tts, *_stt]),
    }


def engine_stats() -> dict[str, dict[str, Any]]:
    """Each built engine's counters (requests, cache hits, retries, seconds of audio, real-time factor)."""
    with _lock:
        built: list[tuple[str, TTSEngine | STTEngine]] = [*_tts.items(), *_stt.items()]
        return {key: engine.stats.as_dict() for key, engine in built}


def shutdown() -> None:
    """Close every engine's workers and forget the engines (the next ``get_*`` builds afresh)."""
    with _lock:
        built: list[TTSEngine | STTEngine] = [*_tts.values(), *_stt.values()]
        for engine in built:
            engine.close()
        _tts.clear()
        _stt.clear()
