"""espeak-ng: formant TTS for every language it knows, as a subprocess (``espeak-ng --stdout``).

Robotic next to Piper, but it speaks over a hundred languages from a small Debian package, so it
is the default for languages no shipped Piper voice covers. A voice is an espeak voice name with
an optional variant (``es``, ``en-gb+f3``); without one the language picks it (``es-ES`` -> ``es``,
``pt-BR`` -> ``pt-br``). Text goes in on stdin, so nothing in it is read as an option.
"""

from __future__ import annotations

import functools
import shutil
import subprocess

from tamesu.errors import ConfigError, MissingExtraError, ModelError

from .audio import Audio, read_wav_bytes
from .cache import SynthesisCache
from .engine import TTSCapabilities, TTSEngine, primary_language, tts_engines
from .workers import Workers

__all__ = ["ESPEAK_RATE", "EspeakTTS", "espeak_binary", "espeak_languages", "espeak_voice_for"]

ESPEAK_RATE = 22050

_ALIASES = {
    "en": "en-us",
    "fr": "fr-fr",
    "fr-ca": "fr-fr",
    "es-mx": "es-419",
    "es-us": "es-419",
    "pt-pt": "pt",
    "zh": "cmn",
    "zh-cn": "cmn",
    "no": "nb",
}
"""BCP 47 tags espeak-ng spells differently (or lacks, where a close voice exists)."""


def espeak_binary() -> str | None:
    return shutil.which("espeak-ng")


def _binary() -> str:
    found = espeak_binary()
    if found is None:
        raise MissingExtraError("espeak-ng", debian="espeak-ng")
    return found


@functools.lru_cache(maxsize=1)
def espeak_languages() -> frozenset[str]:
    """The language codes of the installed espeak-ng (``es``, ``en-gb``, ``pt-br``, ...)."""
    out = subprocess.run([_binary(), "--voices"], capture_output=True, text=True, check=True).stdout
    return frozenset(line.split()[1].lower() for line in out.splitlines()[1:] if len(line.split()) > 1)


def espeak_voice_for(language: str) -> str:
    """The espeak voice of a BCP 47 language: the full tag when espeak has it, else its primary subtag."""
    known = espeak_languages()
    tag = language.replace("_", "-").lower()
    primary = primary_language(tag)
    for candidate in (tag, _ALIASES.get(tag), primary, _ALIASES.get(primary)):
        if candidate and candidate in known:
            return candidate
    raise ConfigError(
        f"espeak-ng has no voice for language {language!r}",
        hint="run `espeak-ng --voices` for the languages it speaks",
    )


@tts_engines.register("espeak")
class EspeakTTS(TTSEngine):
    """espeak-ng in a subprocess per utterance; ``workers`` bounds how many run at once."""

    name = "espeak"
    runs_here = True

    def __init__(
        self,
        *,
        speed: int = 160,
        pitch: int | None = None,
        workers: int = 2,
        timeout: float = 30.0,
        cache: SynthesisCache | None = None,
    ) -> None:
        super().__init__(cache=cache)
        self.binary = _binary()
        self.speed = speed
        self.pitch = pitch
        self.timeout = timeout
        self.workers = Workers("espeak", workers, runs_programs=True)

    @property
    def capabilities(self) -> TTSCapabilities:
        return TTSCapabilities(languages=espeak_languages(), sample_rate=ESPEAK_RATE, default_voice="en-us")

    @property
    def identity(self) -> str:
        return f"espeak:{self.speed}:{self.pitch}"

    def _voice(self, voice: str | None, language: str | None) -> str:
        if voice:
            base = voice.split("+", 1)[0].lower()
            if base not in espeak_languages():
                raise ConfigError(f"espeak-ng has no voice {voice!r}", hint="run `espeak-ng --voices`")
            return voice
        return espeak_voice_for(language) if language else "en-us"

    def _run(self, text: str, voice: str) -> Audio:
        cmd = [self.binary, "-v", voice, "-s", str(self.speed), "--stdout"]
        if self.pitch is not None:
            cmd += ["-p", str(self.pitch)]
        try:
            done = subprocess.run(cmd, input=text.encode(), capture_output=True, timeout=self.timeout)
        except subprocess.TimeoutExpired as exc:
            raise ModelError(f"espeak-ng took longer than {self.timeout:g}s") from exc
        if done.returncode != 0 or not done.stdout:
            raise ModelError(
                f"espeak-ng failed ({done.returncode}): {done.stderr.decode(errors='replace').strip()}"
            )
        return read_wav_bytes(done.stdout)

    async def _synthesize(self, text: str, *, voice: str | None, language: str | None) -> Audio:
        return await self.workers.run(self._run, text, self._voice(voice, language))

    def close(self) -> None:
        self.workers.shutdown()
