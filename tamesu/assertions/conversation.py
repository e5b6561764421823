"""The shape of the conversation: ``turns``, ``captured``, ``handoff`` and ``metric``.

These read what the run recorded besides the words: how many turns, the values captured on the
way, whether and where a person took over, and the metric table of ``tamesu.metrics``.
"""

from __future__ import annotations

import re
from typing import Any

from tamesu.assertions.compare import compare, given, rounded, shorten, text_pattern
from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.config.assertions.conversation import (
    CapturedAssertion,
    HandoffAssertion,
    IntCompare,
    MetricAssertion,
)
from tamesu.kernel.outcome import AssertionResult

__all__ = ["NEEDS_A_MODEL", "captured", "handoff", "metric", "turns"]

NEEDS_A_MODEL = "needs a model: set models.judge (or models.default) in tamesu.yaml or the suite"


def _get(spec: Any, key: str, default: Any = None) -> Any:
    if isinstance(spec, dict):
        return spec.get(key, default)
    value = getattr(spec, key, default)
    return default if value is None else value


@assertion("turns", spec=IntCompare)
def turns(spec: IntCompare, ctx: AssertionContext) -> AssertionResult:
    """The number of agent turns satisfies every comparator given."""
    count = len(ctx.transcript.agent_turns())
    ok, want = compare(count, spec)
    message = "" if ok else f"{count} agent turn(s), expected {want}"
    return AssertionResult.of(ok, expected=want, actual=count, message=message)


@assertion("captured", spec=CapturedAssertion)
def captured(spec: CapturedAssertion, ctx: AssertionContext) -> AssertionResult:
    """The capture exists, and equals the value / matches the pattern when those are given."""
    name = _get(spec, "name")
    equals = _get(spec, "equals")
    matches = _get(spec, "matches")
    expected: dict[str, Any] = {"name": name}
    if given(spec, "equals"):
        expected["equals"] = equals
    if matches is not None:
        expected["matches"] = matches
    caps = ctx.transcript.captures
    if name not in caps:
        known = ", ".join(sorted(caps)) or "none"
        return AssertionResult.of(
            False, expected=expected, message=f"nothing was captured as {name!r} (captured: {known})"
        )
    value = caps[name]
    if given(spec, "equals") and str(value) != str(equals):
        return AssertionResult.of(
            False, expected=expected, actual=value, message=f"{name} is {value!r}, expected {equals!r}"
        )
    if matches is not None:
        try:
            hit = re.search(matches, str(value))
        except re.error as exc:
            return AssertionResult.failed_to_evaluate(f"bad regular expression {matches!r}: {exc}")
        if not hit:
            return AssertionResult.of(
                False,
                expected=expected,
                actual=value,
                message=f"{name} is {value!r}, which does not match /{matches}/",
            )
    return AssertionResult.of(True, expected=expected, actual=value)


def _handoff_spec(spec: Any) -> dict[str, Any]:
    """The object form, whether the suite wrote ``handoff: true``, ``handoff: "false"`` or an object."""
    if isinstance(spec, bool):
        return {"expected": spec}
    if isinstance(spec, str):
        return {"expected": spec.strip().lower() not in ("false", "no", "0", "off")}
    keys = ("expected", "within_turns", "to", "summary_contains", "summary")
    out = {k: _get(spec, k) for k in keys}
    out["expected"] = True if out["expected"] is None else bool(out["expected"])
    return out


@assertion("handoff", spec=HandoffAssertion)
async def handoff(spec: HandoffAssertion, ctx: AssertionContext) -> AssertionResult:
    """Whether the agent handed off to a person, and when, to whom and with what summary."""
    want = _handoff_spec(spec)
    info = ctx.transcript.handoff
    expected = {k: v for k, v in want.items() if v is not None}
    if not want["expected"]:
        if info is None:
            return AssertionResult.of(True, expected=expected, actual=None)
        to = f" to {info.to}" if info.to else ""
        return AssertionResult.of(
            False,
            expected=expected,
            actual=_show(info),
            message=f"the agent handed off{to} on turn {info.turn}",
        )
    if info is None:
        return AssertionResult.of(False, expected=expected, actual=None, message="the agent never handed off")
    actual = _show(info)
    within = want["within_turns"]
    if within is not None and info.turn > within:
        return AssertionResult.of(
            False,
            expected=expected,
            actual=actual,
            message=f"handed off on turn {info.turn}, later than turn {within}",
        )
    to = want["to"]
    if to is not None:
        try:
            hit = info.to is not None and re.search(to, info.to)
        except re.error as exc:
            return AssertionResult.failed_to_evaluate(f"bad regular expression {to!r}: {exc}")
        if not hit:
            where = repr(info.to) if info.to is not None else "an unknown destination"
            return AssertionResult.of(
                False,
                expected=expected,
                actual=actual,
                message=f"handed off to {where}, which does not match /{to}/",
            )
    summary = info.summary or ""
    for text in want["summary_contains"] or []:
        if not text_pattern(text).search(summary):
            shown = shorten(summary) if summary else "(no summary)"
            return AssertionResult.of(
                False,
                expected=expected,
                actual=actual,
                message=f"the handoff summary lacks {text!r}: {shown}",
            )
    if want["summary"]:
        return await _judge_summary(want["summary"], summary, ctx, expected, actual)
    return AssertionResult.of(True, expected=expected, actual=actual)


async def _judge_summary(
    rubric: str, summary: str, ctx: AssertionContext, expected: Any, actual: Any
) -> AssertionResult:
    """The handoff summary graded against its rubric by the judge model."""
    if ctx.models is None:
        result = AssertionResult.failed_to_evaluate(f"handoff summary rubric {NEEDS_A_MODEL}")
        result.expected, result.actual = expected, actual
        return result
    from tamesu.errors import TamesuError
    from tamesu.judging import grade

    try:
        verdict = await grade(
            ctx.models, rubric, summary or "(no summary)", ledger=ctx.ledger, what="handoff summary"
        )
    except TamesuError as exc:
        return AssertionResult.failed_to_evaluate(f"handoff summary: {exc}")
    if verdict.inconclusive:
        return AssertionResult.cannot_tell(
            expected=expected, actual=actual, message=f"the judge cannot tell: {verdict.reason}"
        )
    message = f"summary {'meets' if verdict.passed else 'fails'} the rubric: {verdict.reason}"
    return AssertionResult.of(verdict.passed, expected=expected, actual=actual, message=message)


def _show(info: Any) -> dict[str, Any]:
    return {"turn": info.turn, "to": info.to, "summary": info.summary}


@assertion("metric", spec=MetricAssertion)
def metric(spec: MetricAssertion, ctx: AssertionContext) -> AssertionResult:
    """A metric of the run (``tamesu.metrics``) satisfies every comparator given."""
    from tamesu.metrics import metric_names, metric_value

    name = _get(spec, "name")
    try:
        value = metric_value(ctx.transcript, name)
    except KeyError:
        return AssertionResult.failed_to_evaluate(
            f"unknown metric {name!r}; known: {', '.join(metric_names())}"
        )
    _, want = compare(0.0, spec)
    if value is None:
        return AssertionResult.of(
            False,
            expected=f"{name} {want}",
            actual=None,
            message=f"{name} has no value in this run (nothing was measured for it)",
        )
    ok, want = compare(value, spec)
    return AssertionResult.of(ok, expected=f"{name} {want}", actual=rounded(value))
