"""The validate-time checks of a call's voice choices: the persona's voice, its background noise,
the mode a target with audio can take, and whether the STT engine here hears the language.

They read the suite as written and load no model, so ``tamesu validate`` runs them without the
call pipeline (``tamesu.voice``), which builds its settings from the same choices at run time.
They ask the speech engines installed here, so they live beside the machine's other checks and
not in the contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tamesu.config.checks import SuiteFile
from tamesu.config.kinds import target_kinds
from tamesu.config.reach import audio_tests
from tamesu.errors import ConfigError

__all__ = ["check_voice", "check_voice_test", "is_noise_preset", "stt_problem"]


def is_noise_preset(name: str) -> bool:
    """Whether ``background_noise`` names a built-in noise rather than a file."""
    from tamesu.audio.noise import noise_presets

    return name in noise_presets


def check_voice_test(
    test: Any, target: Any, *, language: str | None = None, suite_dir: Path | str = "."
) -> list[str]:
    """Why an audio test is wrong as written (empty when it is right); loads no model.

    The loader calls it for each expanded test whose target carries audio (a type registered with
    ``audio="always"``, or ``mode: audio`` on the target or the test), once per language. It checks that the
    persona's voice resolves, that the background noise is a preset or an existing file, and that
    ``mode: text`` is not asked of a target that only carries audio. Whether this machine's STT
    engine hears the language is a question about the machine, not the suite: ``stt_problem``.
    """
    problems: list[str] = []
    kind = str(getattr(target, "type", ""))
    persona = getattr(test, "persona", None)
    lang = language or getattr(persona, "language", None)
    if (
        kind in target_kinds
        and target_kinds.get(kind).audio == "always"
        and getattr(test, "mode", None) == "text"
    ):
        problems.append(f"mode: text does not apply to a {kind} target, which carries audio only")
    if kind == "twilio" and getattr(target, "transcript_source", "auto") == "agent":
        problems.append(
            "transcript_source: agent on a twilio target: Media Streams carry no transcript (use auto or stt)"
        )
    if persona is not None and (persona.voice or lang):
        from tamesu.audio.voices import check_voice

        why = check_voice(persona.voice, lang)
        if why:
            problems.append(why)
    noise = getattr(getattr(persona, "behaviors", None), "background_noise", None)
    if noise and not is_noise_preset(noise):
        path = Path(noise) if Path(noise).is_absolute() else Path(suite_dir) / noise
        if not path.is_file():
            from tamesu.audio.noise import noise_presets

            problems.append(
                f"background_noise {noise!r} is neither a preset ({', '.join(noise_presets)}) nor a file"
            )
    return problems


def stt_problem(target: Any, language: str | None) -> str | None:
    """Why the STT engine installed here cannot hear ``language`` on calls to ``target`` (None: it
    can, or the agent's own transcript is used); loads no model."""
    source = (
        target.get("transcript_source")
        if isinstance(target, dict)
        else getattr(target, "transcript_source", None)
    )
    if (source or "auto") == "agent" or not language:
        return None
    from tamesu.audio.engines import check_language, stt_for

    return check_language(stt_for(None, language), language)


class _Attrs:
    """Attribute access over a suite's plain mapping (missing keys read as None), for the checks
    above, written on the models' attribute names."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        value = self._data.get(name)
        return _Attrs(value) if isinstance(value, Mapping) else value


def check_voice(file: SuiteFile) -> list[ConfigError]:
    """Audio tests: the voice resolves, noise files exist, mode fits. These need the voice extra to
    check; without it the tests cannot run here, which ``check_environment`` reports."""
    from tamesu.extras import EXTRAS

    tests = list(audio_tests(file.data))
    if not tests or not EXTRAS["voice"].installed:
        return []
    out: list[ConfigError] = []
    for i, test, target in tests:
        seen: set[str] = set()
        for language in test.get("languages") or [None]:
            for why in check_voice_test(
                _Attrs(test), _Attrs(target), language=language, suite_dir=file.suite_dir
            ):
                if why not in seen:
                    seen.add(why)
                    out.append(file.error(why, ("tests", i)))
    return out
