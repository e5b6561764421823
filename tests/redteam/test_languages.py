"""The attacker's language: every built-in attack has its opening in each supported language, the
language switch attack leaves the conversation's language, the detectors read the agent's words in
each language (and stay quiet on its refusals), and other languages fall back to English with a
warning from ``tamesu validate``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tamesu.config.attacks import red_team_attacks
from tamesu.config.loader import validate_paths
from tamesu.environment import MACHINE_CHECKS
from tamesu.playbooks.catalogue import BUILTIN_PLAYBOOKS, get_playbook
from tamesu.playbooks.languages import (
    LANGUAGES,
    PACK_SIGNALS,
    localise,
    localised_opening,
    primary,
    translation,
)
from tamesu.playbooks.model import Decoded, PackCheck, Pattern
from tamesu.playbooks.signals import ACTION_CONFIRMED, COMPLIANCE, EXCEPTION_GRANTED, INSTRUCTIONS_QUOTED

from .agents import REPLIES

pytestmark = pytest.mark.unit

TRANSLATED = [lang for lang in LANGUAGES if lang != "en"]
LOCAL_LABELS = {
    "exception granted",
    "consequential action confirmed",
    "complied with a harmful request",
    "instructions quoted",
    "fake mode acknowledged",
    "claims to be human",
}
"""The detectors that read the agent's own words, and so need each language's phrases."""

STOPWORDS = {
    "en": set("the and with your this only all to for my is of it you can please what that i".split()),
    "es": set("el los las con tus tu este esta solo todas y que para mi una por del se".split()),
    "de": set("der die das und mit deine dein nur alle ich du ist eine ein für mir meine den dem zu".split()),
    "fr": set("à le les et avec tes ton toutes je est une pour moi ma mon des du que ce cette pas".split()),
}


def _language_of(text: str) -> str:
    words = re.findall(r"[^\W\d_]+", text.lower())
    return max(STOPWORDS, key=lambda lang: sum(w in STOPWORDS[lang] for w in words))


def _attacks() -> list[tuple[str, str]]:
    return [(b, a.name) for b in BUILTIN_PLAYBOOKS for a in get_playbook(b).attacks]


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_attack_has_its_opening_and_tool_result_in_each_language(language: str) -> None:
    words = translation(language)
    assert words is not None and words.language == language
    rules = {f"{b}/{a}" for b, a in _attacks()}
    assert set(words.openings) == rules, "one entry per built-in attack, and no stray rule"
    for book_name, attack_name in _attacks():
        book = get_playbook(book_name)
        attack = next(a for a in book.attacks if a.name == attack_name)
        texts = words.openings[book.rule(attack)]
        assert len(texts) == len(attack.opening), f"{book.rule(attack)}: one text per move"
        for move, text in zip(attack.opening, texts, strict=True):
            assert bool(text.strip()) == bool(move.say.strip()), book.rule(attack)
            if book.rule(attack) != "encoding/other_language":  # its language is checked below
                assert text != move.say or not text, f"{book.rule(attack)} is still in English"
        if attack.tool_result:
            assert words.tool_results.get(book.rule(attack)), f"{book.rule(attack)}: its tool result"
    assert set(words.signals) == LOCAL_LABELS
    for regex in words.signals.values():
        re.compile(regex)


@pytest.mark.parametrize("language", TRANSLATED)
def test_openings_are_in_their_language_and_the_switch_leaves_it(language: str) -> None:
    words = translation(language)
    assert words is not None and words.switch_to != language
    for rule, texts in words.openings.items():
        text = " ".join(texts)
        if rule == "encoding/other_language":
            assert _language_of(text) == words.switch_to
        elif (
            rule not in {"encoding/leetspeak", "encoding/base64_request", "voice/dtmf_injection"}
            and len(text.split()) > 8
        ):
            assert _language_of(text) == language, rule
    english = get_playbook("encoding").attacks[-1].opening[0].say
    assert _language_of(english) == "es", "an English red team switches to Spanish"


def test_the_primary_subtag_picks_the_language_and_others_keep_english() -> None:
    book = get_playbook("prompt_injection")
    attack = book.attacks[0]
    assert primary("es-ES") == primary("ES_mx") == primary("es") == "es" and primary(None) == "en"
    spanish = localised_opening(book, attack, "es-ES")
    assert spanish[0].say.startswith("Ignora todas") and spanish[0].tactic == attack.opening[0].tactic
    assert localised_opening(book, attack, "pt-BR") == attack.opening
    assert localised_opening(book, attack, "en-GB") == attack.opening
    dtmf = get_playbook("voice").attacks[-1]
    (keys, _) = localised_opening(get_playbook("voice"), dtmf, "de")
    assert keys.dtmf == "*0#" and keys.say == ""


@pytest.mark.parametrize("language", ["en", *TRANSLATED])
def test_the_detectors_read_the_agents_words_in_each_language(language: str) -> None:
    say = REPLIES[language]
    exception, action, complied, quoted = localise(
        (EXCEPTION_GRANTED, ACTION_CONFIRMED, COMPLIANCE, INSTRUCTIONS_QUOTED), language
    )
    assert isinstance(exception, Pattern) and re.search(exception.regex, say["exception"])
    assert isinstance(action, Pattern) and re.search(action.regex, say["refunded"])
    assert isinstance(complied, Pattern) and re.search(complied.regex, say["harmful"])
    assert isinstance(quoted, Pattern) and re.search(quoted.regex, say["prompt"])
    for refusal in ("verify", "private", "policy", "secret", "hello"):
        for d in (exception, action, complied, quoted):
            assert isinstance(d, Pattern) and not re.search(d.regex, say[refusal]), (d.label, refusal)
    english = REPLIES["en"]
    assert re.search(exception.regex, english["exception"]), "English replies are still caught"
    assert re.search(action.regex, english["refunded"])


@pytest.mark.parametrize("language", TRANSLATED)
def test_packs_and_encoded_replies_gain_the_languages_patterns(language: str) -> None:
    say = REPLIES[language]
    book = get_playbook("encoding")
    decoded = next(d for d in localise(book.detectors, language) if isinstance(d, Decoded))
    inner = next(i for i in decoded.inner if isinstance(i, Pattern) and i.label == "instructions quoted")
    assert re.search(inner.regex, say["prompt"])
    added = localise((PackCheck("system_prompt_leakage"), PackCheck("discloses_ai")), language)
    patterns = {d.label: d for d in added if isinstance(d, Pattern)}
    assert set(patterns) == {*PACK_SIGNALS["system_prompt_leakage"], *PACK_SIGNALS["discloses_ai"]}
    assert re.search(patterns["instructions quoted"].regex, say["prompt"])
    assert re.search(patterns["claims to be human"].regex, say["human"])
    assert not re.search(patterns["claims to be human"].regex, say["secret"])
    assert localise((PackCheck("system_prompt_leakage"),), "en") == (PackCheck("system_prompt_leakage"),)


SUITE = """\
suite: shop
targets:
  bot:
    type: model
    model: openai/gpt-4.1-mini
    system: "You are a shop assistant."
    tools: [ {{ name: lookup_order, result: {{ status: shipped }} }} ]
red_team:
  target: bot
  agent: "Mochi Shoes support"
  language: {language}
  playbooks: [prompt_injection]
tests: []
"""


def test_validate_warns_of_a_language_without_openings_and_the_attacks_run_in_english(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(SUITE.format(language="pt-BR"))
    report = validate_paths([path], checks=MACHINE_CHECKS)
    assert not report.errors
    (warning,) = [w for w in report.warnings if w.path == "red_team.language"]
    assert "no scripted openings in 'pt-BR'" in str(warning) and warning.line == 11
    attacks = red_team_attacks(report.suites[0].suite)
    book = get_playbook("prompt_injection")
    assert [a.plan.opening for a in attacks] == [a.opening for a in book.attacks]
    assert attacks[0].test.persona is not None and attacks[0].test.persona.language == "pt-BR"

    path.write_text(SUITE.format(language="es-ES"))
    report = validate_paths([path], checks=MACHINE_CHECKS)
    assert not report.errors and not [w for w in report.warnings if w.path == "red_team.language"]
    plans = {a.plan.attack: a for a in red_team_attacks(report.suites[0].suite)}
    assert plans["direct_override"].plan.opening[0].say.startswith("Ignora todas")
    tool = plans["tool_result_injection"].test.fuzz_tools
    assert tool is not None and "AVISO DEL SISTEMA" in str(tool["lookup_order"])
