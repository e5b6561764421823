"""``red_team:`` -> the adversarial tests a suite gains when it loads: one per attack.

Each test is an ordinary ``Test`` (visible in ``tamesu list``, selectable by its tags ``red-team``
and ``playbook:NAME``) plus the attack's plan, which the run carries in ``RunSpec.attack``:
the scripted opening, the tactics, and the detectors with every pack they use already resolved
(a suite pack of the same name replaces the built-in one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tamesu.errors import ConfigError
from tamesu.playbooks.catalogue import get_playbook, playbook_names, unknown_names
from tamesu.playbooks.languages import localise, localised_opening, localised_tool_result
from tamesu.playbooks.model import Attack, AttackPlan, Canary, Decoded, PackCheck, Playbook

if TYPE_CHECKING:
    from tamesu.config import RedTeam, Suite, Test

__all__ = [
    "AttackTest",
    "attack_count",
    "is_audio",
    "is_audio_target",
    "red_team_attacks",
    "test_name",
    "tool_names",
]

Where = Callable[..., tuple[str, int, int]]


@dataclass
class AttackTest:
    """One generated test and the plan of its attack."""

    test: Test
    plan: AttackPlan


def test_name(playbook: str, attack: str) -> str:
    return f"red_team/{playbook}/{attack}"


def is_audio(kind: object, mode: object) -> bool:
    """A call: a type registered as always carrying audio, or one in audio mode that can."""
    from tamesu.config.kinds import target_kinds

    return target_kinds.carries_audio(kind, mode)


def is_audio_target(target: Any) -> bool:
    return is_audio(getattr(target, "type", None), getattr(target, "mode", None))


def tool_names(target: Any) -> list[str]:
    """The tools whose results tamesu gives the agent (model ``tools``, realtime / pipecat ``tool_results``)."""
    names = [t.name for t in getattr(target, "tools", None) or []]
    return names + list(getattr(target, "tool_results", None) or {})


def _no_where(*path: str | int) -> tuple[str, int, int]:
    return "<suite>", 0, 0


def red_team_attacks(suite: Suite, *, where: Where | None = None) -> list[AttackTest]:
    """Every attack of the chosen playbooks (all when none are named) that fits the target.

    An unknown playbook, or an audio playbook named for a text target, is a ConfigError located
    at its entry; with no playbooks named, attacks the target cannot receive are left out.
    """
    red = suite.red_team
    if red is None:
        return []
    where = where or _no_where
    for i, name in enumerate(red.playbooks):
        if unknown_names([name]):
            from tamesu.config.errors_map import did_you_mean

            file, line, col = where("red_team", "playbooks", i)
            known = playbook_names()
            raise ConfigError(
                f"unknown playbook {name!r}",
                file=file,
                line=line,
                column=col,
                path=f"red_team.playbooks[{i}]",
                hint=did_you_mean(name, known) or f"playbooks: {', '.join(known)}",
            )
    tools = tool_names(suite.targets.get(red.target))
    out: list[AttackTest] = []
    for book, attack, at in _chosen(suite, where):
        plan = _plan(suite, red, book, attack, at)
        out.append(AttackTest(_test(red, book, attack, plan, tools), plan))
    return out


def attack_count(suite: Suite) -> int:
    """How many tests ``red_team`` adds (what ``tamesu validate`` counts), without building them."""
    return sum(1 for _ in _chosen(suite, _no_where)) if suite.red_team is not None else 0


def _chosen(suite: Suite, where: Where) -> Iterator[tuple[Playbook, Attack, tuple[str, int, int]]]:
    """Each (playbook, attack, where it is asked for) the target can receive."""
    red = suite.red_team
    assert red is not None
    target = suite.targets.get(red.target)
    audio = is_audio_target(target)
    tools = tool_names(target)
    named = list(dict.fromkeys(red.playbooks))
    for name in named or playbook_names():
        book = get_playbook(name)
        at = where("red_team", "playbooks", red.playbooks.index(name)) if named else where("red_team")
        if book.requires == "audio" and not audio and named:
            raise ConfigError(
                f"the {name} playbook attacks calls, and target {red.target!r} is not an audio target",
                file=at[0],
                line=at[1],
                column=at[2],
                path=f"red_team.playbooks[{red.playbooks.index(name)}]",
                hint="point red_team.target at a voice, twilio or sip target (or one in audio mode)",
            )
        for attack in book.attacks:
            if (attack.requires == "audio" and not audio) or (attack.requires == "tools" and not tools):
                continue
            yield book, attack, at


def _plan(suite: Suite, red: RedTeam, book: Playbook, attack: Attack, at: tuple[str, int, int]) -> AttackPlan:
    detectors = list(localise(book.detectors_of(attack), red.language))
    if "canary" in red.vars or "canary" in (suite.vars or {}):
        secret = Canary("{{vars.canary}}", label="system prompt canary")
        detectors += [secret, Decoded(inner=(secret,), label="encoded system prompt canary")]
    packs = {d.pack: _pack_items(suite, d.pack) for d in detectors if isinstance(d, PackCheck)}
    return AttackPlan(
        playbook=book.name,
        attack=attack.name,
        rule=book.rule(attack),
        severity=attack.severity,
        goal=attack.goal.replace("{agent}", red.agent),
        opening=localised_opening(book, attack, red.language),
        tactics=book.tactics,
        detectors=tuple(detectors),
        pack_items=packs,
        file=at[0],
        line=at[1],
        column=at[2],
    )


def _pack_items(suite: Suite, name: str) -> tuple[Any, ...]:
    from tamesu.config import Assertion
    from tamesu.config.packs import expand_packs

    items = expand_packs([Assertion.model_validate({"pack": name})], suite_packs=suite.packs)
    return tuple(p.item for p in items)


def _test(red: RedTeam, book: Playbook, attack: Attack, plan: AttackPlan, tools: list[str]) -> Test:
    from tamesu.config import Test

    persona: dict[str, Any] = {"adversarial": True, "tactics": list(book.tactics)}
    if red.language:
        persona["language"] = red.language
    if attack.behaviors:
        persona["behaviors"] = dict(attack.behaviors)
    data: dict[str, Any] = {
        "name": test_name(book.name, attack.name),
        "target": red.target,
        "tags": list(dict.fromkeys(["red-team", f"playbook:{book.name}", *red.tags])),
        "vars": dict(red.vars),
        "persona": persona,
        "scenario": {"goal": plan.goal, "max_turns": red.max_turns},
    }
    if red.repeat is not None:
        data["repeat"] = red.repeat
    tool_result = localised_tool_result(book, attack, red.language)
    if attack.requires == "tools" and tool_result:
        result = {"note": tool_result}
        data["fuzz_tools"] = {name: {"mode": "custom", "result": result} for name in tools}
    test = Test.model_validate(data)
    return test.model_copy(update={"assert_": list(red.assert_)})
