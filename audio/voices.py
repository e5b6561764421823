"""Persona voices (``voice: en-GB-female``) as a TTS engine and that engine's voice.

A persona voice is a BCP 47 tag and a gender. English goes to Piper's ``joe`` voice, the only
Piper voice tamesu ships: it is US English and male, so every English persona sounds like joe
until another Piper voice is configured (the piper engine's ``model_path``). Other languages go to
espeak-ng, whose female voices are its ``+f3`` variant. ``engine:voice`` picks an engine voice
directly (``espeak:en-gb+f3``, ``openai:nova``, ``piper:joe``). A ``language`` alone picks that
language's default voice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tamesu.errors import ConfigError

__all__ = [
    "ESPEAK_FEMALE",
    "VOICE_LANGUAGES",
    "VoiceChoice",
    "check_voice",
    "known_voices",
    "resolve_voice",
]

Gender = Literal["female", "male"]

ESPEAK_FEMALE = "+f3"
"""The espeak-ng variant that makes a voice female."""

PIPER_NOTE = (
    "joe (US English, male) is the only Piper voice tamesu ships; set the piper engine's model_path "
    "to another local Piper voice, or use espeak:en-gb+f3"
)

VOICE_LANGUAGES: dict[str, str] = {
    "en-US": "en-us",
    "en-GB": "en-gb",
    "en-AU": "en-gb",
    "en-IE": "en-gb",
    "en-IN": "en-gb",
    "es-ES": "es",
    "es-MX": "es-419",
    "es-US": "es-419",
    "de-DE": "de",
    "de-AT": "de",
    "de-CH": "de",
    "fr-FR": "fr-fr",
    "fr-BE": "fr-be",
    "fr-CH": "fr-ch",
    "fr-CA": "fr-fr",
    "it-IT": "it",
    "pt-PT": "pt",
    "pt-BR": "pt-br",
    "nl-NL": "nl",
    "pl-PL": "pl",
    "sv-SE": "sv",
    "da-DK": "da",
    "nb-NO": "nb",
    "fi-FI": "fi",
    "cs-CZ": "cs",
    "el-GR": "el",
    "hu-HU": "hu",
    "ro-RO": "ro",
    "ru-RU": "ru",
    "uk-UA": "uk",
    "tr-TR": "tr",
    "ar-SA": "ar",
    "he-IL": "he",
    "hi-IN": "hi",
    "id-ID": "id",
    "vi-VN": "vi",
    "ja-JP": "ja",
    "ko-KR": "ko",
    "zh-CN": "cmn",
    "ca-ES": "ca",
}
"""Persona language tags -> espeak-ng voices; the first tag of each language is its default."""

_CANONICAL = {tag.lower(): tag for tag in VOICE_LANGUAGES}
_DEFAULT_TAG: dict[str, str] = {}
for _tag in VOICE_LANGUAGES:
    _DEFAULT_TAG.setdefault(_tag.split("-")[0], _tag)
del _tag


@dataclass(frozen=True)
class VoiceChoice:
    """Which engine speaks, with which of its voices, in which language; ``note`` says what was approximated."""

    engine: str
    voice: str | None
    language: str | None
    gender: Gender | None = None
    note: str = ""


def known_voices() -> list[str]:
    """Every ``<language>-<gender>`` persona voice, sorted."""
    return sorted(f"{tag}-{g}" for tag in VOICE_LANGUAGES for g in ("female", "male"))


def _primary(tag: str) -> str:
    return tag.replace("_", "-").split("-", 1)[0].lower()


def _choice(tag: str, gender: Gender, note: str = "") -> VoiceChoice:
    if _primary(tag) == "en":
        joe = "" if gender == "male" and tag == "en-US" else PIPER_NOTE
        return VoiceChoice("piper", None, tag, "male", "; ".join(n for n in (note, joe) if n))
    base = VOICE_LANGUAGES[tag]
    return VoiceChoice("espeak", base + ESPEAK_FEMALE if gender == "female" else base, tag, gender, note)


def _unknown(voice: str) -> ConfigError:
    return ConfigError(
        f"unknown voice {voice!r}",
        path="persona.voice",
        hint=f"known voices: {', '.join(known_voices())}; or engine:voice such as espeak:en-gb+f3",
    )


def _from_language(language: str) -> VoiceChoice:
    tag = _CANONICAL.get(language.replace("_", "-").lower())
    if tag is not None:
        return _choice(tag, "male")
    primary = _primary(language)
    if primary in _DEFAULT_TAG:
        default = _DEFAULT_TAG[primary]
        regional = "-" in language.replace("_", "-")
        return _choice(
            default, "male", f"no {language} voice; the {default} voice speaks" if regional else ""
        )
    return VoiceChoice("espeak", None, language, None, "espeak-ng picks the voice of this language")


def resolve_voice(voice: str | None = None, language: str | None = None) -> VoiceChoice:
    """The engine and engine voice of a persona's ``voice`` and/or ``language`` (en-US when neither)."""
    if voice is None:
        return _from_language(language or "en-US")
    if ":" in voice:
        engine, _, name = voice.partition(":")
        from .tts import tts_engines

        if engine not in tts_engines or not name:
            raise _unknown(voice)
        return VoiceChoice(engine, name, language)
    tag, _, gender = voice.rpartition("-")
    canonical = _CANONICAL.get(tag.lower())
    if canonical is None or gender.lower() not in ("female", "male"):
        raise _unknown(voice)
    if language and _primary(language) != _primary(canonical):
        raise ConfigError(
            f"voice {voice!r} speaks {canonical} but the persona's language is {language!r}",
            path="persona.voice",
            hint=f"pick a {language} voice such as {_from_language(language).language or language}-female",
        )
    return _choice(canonical, "female" if gender.lower() == "female" else "male")


def check_voice(voice: str | None, language: str | None = None) -> str | None:
    """The validation message for a persona's voice/language, or None when it resolves."""
    try:
        resolve_voice(voice, language)
    except ConfigError as exc:
        return f"{exc.message} ({exc.hint})" if exc.hint else exc.message
    return None
