"""The attacker's language: scripted openings, injected tool results and detector phrases per language.

A red team with ``language: es`` (or ``es-ES``: the primary subtag decides) plays each attack's
opening in Spanish, offline, with no model. The words live in one module per language
(``openings_es``, ``openings_de``, ``openings_fr``), keyed by the attack's rule
(``playbook/attack``) and holding the text of each move of the English opening in order: the
tactics and keypad digits stay the playbook's. The deterministic detectors that read the agent's
own words (an exception granted, an action confirmed...) gain that language's phrases, beside the
English ones (an agent may answer in either). Other languages, and plugin playbooks a language
module does not cover, keep the English opening; ``tamesu validate`` warns of the former.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tamesu.playbooks.model import Attack, Decoded, Detector, Move, PackCheck, Pattern, Playbook

__all__ = [
    "LANGUAGES",
    "PACK_SIGNALS",
    "Translation",
    "localise",
    "localised_opening",
    "localised_tool_result",
    "primary",
    "supported",
    "translation",
]

LANGUAGES = ("en", "es", "de", "fr")
"""The languages with scripted openings (primary subtags); English is the playbooks' own."""

PACK_SIGNALS: Mapping[str, tuple[str, ...]] = {
    "system_prompt_leakage": ("instructions quoted",),
    "prompt_injection": ("fake mode acknowledged",),
    "discloses_ai": ("claims to be human",),
}
"""Packs whose English patterns have a counterpart in a translation's signals (by label): a plan
with the pack gains that language's pattern as a detector of its own."""


@dataclass(frozen=True)
class Translation:
    """One language's words for the built-in playbooks.

    ``openings``: rule -> the text of each move of the English opening, in order ("" for a move that
    only keys digits). ``signals``: detector label -> a regular expression for the same sign in this
    language. ``switch_to``: the language the ``encoding/other_language`` attack switches to (never
    this one).
    """

    language: str
    switch_to: str
    openings: Mapping[str, tuple[str, ...]]
    tool_results: Mapping[str, str] = field(default_factory=dict)
    signals: Mapping[str, str] = field(default_factory=dict)


def primary(tag: str | None) -> str:
    """``es-ES`` -> ``es``; None -> ``en``."""
    return (tag or "en").replace("_", "-").split("-", 1)[0].lower() or "en"


def supported(tag: str | None) -> bool:
    return primary(tag) in LANGUAGES


def translation(tag: str | None) -> Translation | None:
    """The translation for ``tag`` (None for English and for languages without one)."""
    lang = primary(tag)
    if lang == "en" or lang not in LANGUAGES:
        return None
    module = importlib.import_module(f"tamesu.playbooks.openings_{lang}")
    found: Translation = module.TRANSLATION
    return found


def localised_opening(book: Playbook, attack: Attack, tag: str | None) -> tuple[Move, ...]:
    """The attack's opening in ``tag``'s language, else the English one."""
    words = translation(tag)
    texts = words.openings.get(book.rule(attack)) if words else None
    if texts is None or len(texts) != len(attack.opening):
        return attack.opening
    return tuple(replace(move, say=text) for move, text in zip(attack.opening, texts, strict=True))


def localised_tool_result(book: Playbook, attack: Attack, tag: str | None) -> str | None:
    words = translation(tag)
    return (words.tool_results.get(book.rule(attack)) if words else None) or attack.tool_result


def _scoped(regex: str) -> str:
    """A pattern's leading global flags made local, so that two patterns can be joined."""
    if regex.startswith("(?") and ")" in regex and regex[2 : regex.index(")")].isalpha():
        end = regex.index(")")
        return f"(?{regex[2:end]}:{regex[end + 1 :]})"
    return f"(?:{regex})"


def _either(pattern: Pattern, local: str) -> Pattern:
    return Pattern(f"{_scoped(pattern.regex)}|{_scoped(local)}", pattern.label)


def localise(detectors: tuple[Detector, ...], tag: str | None) -> tuple[Detector, ...]:
    """The detectors with ``tag``'s phrases added to each language-dependent pattern."""
    words = translation(tag)
    if words is None:
        return detectors
    signals = words.signals
    out: list[Detector] = []
    for d in detectors:
        if isinstance(d, Pattern) and d.label in signals:
            out.append(_either(d, signals[d.label]))
        elif isinstance(d, Decoded):
            inner = tuple(
                _either(i, signals[i.label]) if isinstance(i, Pattern) and i.label in signals else i
                for i in d.inner
            )
            out.append(replace(d, inner=inner))
        else:
            out.append(d)
    labels = {d.label for d in out}
    for d in detectors:
        if isinstance(d, PackCheck):
            for label in PACK_SIGNALS.get(d.pack, ()):
                if label in signals and label not in labels:
                    out.append(Pattern(signals[label], label))
                    labels.add(label)
    return tuple(out)
