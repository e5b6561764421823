"""Heard words compared as a person would: ``says(heard, wanted)`` after ``spoken_form`` of both.

Speech-to-text writes what it heard in its own style ("30" for "thirty", a comma where the agent
paused), so a ``wait_for`` compares spoken forms, which differ from the text only in:

- case, and accents (``días`` = ``dias``), and Unicode compatibility forms (NFKC);
- punctuation and symbols, which only separate words (``pound, key`` = ``pound key``,
  ``ORD-1001`` = ``ord 1001``); an apostrophe inside a word is dropped (``don't`` = ``dont``);
- numbers: number words become digits (``thirty`` = ``30``, ``twenty-one`` = ``21``, ``one
  hundred and five`` = ``105``) in English, Spanish, French, German, Italian, Portuguese, Dutch and
  Danish (text2num; English for any other language), and a number may be spoken in groups or digit
  by digit (``1 0 0 1`` = ``1,001`` = ``1001``);
- amounts: ``%`` is the language's word for percent (``20%`` = ``20 percent``, ``20 por ciento``),
  and ``$``, ``€`` and ``£`` before a number are said after it (``$49`` = ``49 dollars``; English
  words in every language but Spanish, French and German, which have their own).

The wanted words must then appear in that order, whole and next to each other: ``press 2`` is not
heard in ``press 24``, and no word may be missing or swapped. Nothing is fuzzier than that.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["says", "spoken_form", "spoken_words"]

NUMBER_LANGUAGES = frozenset({"en", "es", "fr", "de", "it", "pt", "nl", "da"})
"""Languages whose number words become digits (the rest are read as English)."""

_APOSTROPHE = re.compile(r"(?<=\w)['’ʼ](?=\w)")
_SEPARATOR = re.compile(r"[^\w]+|_+")
_DIGITS = re.compile(r"\d+")
_CURRENCY = re.compile(r"([$€£])\s?(\d[\d.,]*)")
_PERCENT = re.compile(r"(?<=\d)\s?%")
_AMOUNT_WORDS = {
    "en": ("percent", {"$": "dollars", "€": "euros", "£": "pounds"}),
    "es": ("por ciento", {"$": "dólares", "€": "euros", "£": "libras"}),
    "fr": ("pour cent", {"$": "dollars", "€": "euros", "£": "livres"}),
    "de": ("prozent", {"$": "dollar", "€": "euro", "£": "pfund"}),
}


def _language(language: str | None) -> str:
    primary = (language or "en").replace("_", "-").split("-", 1)[0].lower()
    return primary if primary in NUMBER_LANGUAGES else "en"


def _numbers_as_digits(text: str, language: str) -> str:
    from text_to_num import alpha2digit

    return alpha2digit(text, language, threshold=0)


def _amounts(text: str, language: str) -> str:
    percent, money = _AMOUNT_WORDS.get(language, _AMOUNT_WORDS["en"])
    text = _CURRENCY.sub(lambda m: f"{m.group(2)} {money[m.group(1)]}", text)
    return _PERCENT.sub(f" {percent}", text)


def spoken_words(text: str, *, language: str | None = None, join_numbers: bool = False) -> list[str]:
    """``text``'s words in spoken form (see the module docstring), in order; ``join_numbers``
    makes neighbouring numbers one (``1 001`` -> ``1001``), for counting word errors."""
    lang = _language(language)
    text = _amounts(unicodedata.normalize("NFKC", text).casefold(), lang)
    text = _APOSTROPHE.sub("", text)
    text = _SEPARATOR.sub(" ", text)
    text = _numbers_as_digits(text, lang) if text.strip() else text
    decomposed = unicodedata.normalize("NFKD", text)
    words = _SEPARATOR.sub(" ", "".join(c for c in decomposed if not unicodedata.combining(c))).split()
    if not join_numbers:
        return words
    joined: list[str] = []
    for word in words:
        if joined and word.isdigit() and joined[-1].isdigit():
            joined[-1] += word
        else:
            joined.append(word)
    return joined


def spoken_form(text: str, *, language: str | None = None) -> str:
    """``spoken_words`` joined by single spaces."""
    return " ".join(spoken_words(text, language=language))


def _pattern(words: list[str]) -> re.Pattern[str]:
    """Whole words in order; digits of neighbouring numbers may be grouped either way."""
    parts = []
    for i, word in enumerate(words):
        if i:
            both_digits = words[i - 1][-1].isdigit() and word[0].isdigit()
            parts.append(" ?" if both_digits else " ")
        parts.append(_DIGITS.sub(lambda m: " ?".join(m.group()), re.escape(word)))
    return re.compile(r"(?:^| )" + "".join(parts) + r"(?= |$)")


def says(heard: str, wanted: str, *, language: str | None = None) -> bool:
    """Whether ``heard`` contains ``wanted`` once both are in spoken form (empty ``wanted``: True)."""
    want = spoken_words(wanted, language=language)
    if not want:
        return True
    return _pattern(want).search(spoken_form(heard, language=language)) is not None
