"""What the agent said: ``contains``, ``not_contains``, ``regex``, ``not_regex``.

``contains`` is forgiving on purpose (case-insensitive, any whitespace matches any whitespace),
because agents reflow and recapitalise text; ``regex`` is exact and says so with ``(?i)`` when
case should not matter. The positive checks read the whole agent transcript (turns joined by
newlines); the negative checks look at each agent turn and name the turn that broke the rule.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tamesu.assertions.compare import closest_turn, numbered, shorten, snippet, text_pattern
from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.kernel.outcome import AssertionResult

if TYPE_CHECKING:
    from tamesu.kernel.transcript import Turn

__all__ = ["contains", "not_contains", "not_regex", "regex"]


def _no_agent_turns() -> AssertionResult:
    return AssertionResult.of(False, actual=None, message="the agent said nothing (no agent turn)")


def _joined(turns: list[Turn]) -> str:
    """What ``Transcript.agent_text`` gives, from the agent turns already in hand."""
    return "\n".join(t.text for t in turns)


def _describe(found: tuple[int, Turn] | None) -> str:
    if found is None:
        return ""
    return f"turn {found[0]}: {shorten(found[1].text)}"


@assertion("contains", spec=str)
def contains(spec: str, ctx: AssertionContext) -> AssertionResult:
    """The agent transcript contains the text, ignoring case and differences in whitespace."""
    turns = ctx.transcript.agent_turns()
    if not turns:
        return _no_agent_turns()
    if text_pattern(spec).search(_joined(turns)):
        return AssertionResult.of(True, expected=spec)
    closest = closest_turn(spec, turns)
    where = f"; the closest is turn {closest[0]}" if closest is not None else ""
    return AssertionResult.of(
        False,
        expected=spec,
        actual=_describe(closest),
        message=f"not in any of {len(turns)} agent turn(s){where}",
    )


@assertion("not_contains", spec=str)
def not_contains(spec: str, ctx: AssertionContext) -> AssertionResult:
    """No agent turn contains the text (case-insensitive, whitespace folded)."""
    pattern = text_pattern(spec)
    for n, turn in numbered(ctx.transcript.agent_turns()):
        m = pattern.search(turn.text)
        if m:
            seen = f"turn {n}: {snippet(turn.text, m.start(), m.end())}"
            return AssertionResult.of(
                False, expected=f"not {spec!r}", actual=seen, message=f"forbidden text in agent turn {n}"
            )
    return AssertionResult.of(True, expected=f"not {spec!r}")


def _compile(pattern: str) -> re.Pattern[str] | AssertionResult:
    try:
        return re.compile(pattern)
    except re.error as exc:
        return AssertionResult.failed_to_evaluate(f"bad regular expression {pattern!r}: {exc}")


@assertion("regex", spec=str)
def regex(spec: str, ctx: AssertionContext) -> AssertionResult:
    """The agent transcript matches the regular expression (``re.search``; ``(?i)`` ignores case)."""
    compiled = _compile(spec)
    if isinstance(compiled, AssertionResult):
        return compiled
    turns = ctx.transcript.agent_turns()
    if not turns:
        return _no_agent_turns()
    text = _joined(turns)
    m = compiled.search(text)
    if m:
        return AssertionResult.of(True, expected=spec, actual=shorten(m.group(0)))
    seen = shorten(text, 400)
    return AssertionResult.of(
        False, expected=spec, actual=seen, message=f"/{spec}/ matches none of {len(turns)} agent turn(s)"
    )


@assertion("not_regex", spec=str)
def not_regex(spec: str, ctx: AssertionContext) -> AssertionResult:
    """No agent turn matches the regular expression."""
    compiled = _compile(spec)
    if isinstance(compiled, AssertionResult):
        return compiled
    for n, turn in numbered(ctx.transcript.agent_turns()):
        m = compiled.search(turn.text)
        if m:
            seen = f"turn {n}: {snippet(turn.text, m.start(), m.end())}"
            return AssertionResult.of(
                False, expected=f"no match of /{spec}/", actual=seen, message=f"matched in agent turn {n}"
            )
    return AssertionResult.of(True, expected=f"no match of /{spec}/")
