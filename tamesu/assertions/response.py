"""What came back on the wire: ``json_path`` on the agent's raw responses and the HTTP ``status``.

A conversation has many responses, so ``json_path`` passes when some raw response of some agent
turn holds the path (and the value); ``on_turn`` narrows it to one turn. ``status`` is about every
turn, since one failed request in a conversation is already a failure.
"""

from __future__ import annotations

from typing import Any

from tamesu.assertions.compare import given, json_equal, numbered, shorten
from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.config.assertions.response import JSONPathAssertion
from tamesu.kernel.outcome import AssertionResult

__all__ = ["find_path", "json_path", "status"]


def find_path(path: str, data: Any) -> list[Any]:
    """Every value the JSONPath selects in ``data`` (the project's JSONPath dialect)."""
    from tamesu.jsonpath import find

    return find(path, data)


def _path_and_equals(spec: Any) -> tuple[str, bool, Any]:
    if isinstance(spec, dict):
        return spec["path"], "equals" in spec, spec.get("equals")
    return spec.path, given(spec, "equals"), spec.equals


@assertion("json_path", spec=JSONPathAssertion)
def json_path(spec: JSONPathAssertion, ctx: AssertionContext) -> AssertionResult:
    """Some raw response of some agent turn holds the path (with equals: a value equal to it)."""
    path, has_equals, equals = _path_and_equals(spec)
    expected: dict[str, Any] = {"path": path, **({"equals": equals} if has_equals else {})}
    responses = [(n, raw) for n, turn in numbered(ctx.transcript.agent_turns()) for raw in turn.raw]
    if not responses:
        return AssertionResult.of(
            False,
            expected=expected,
            message="no raw responses were recorded (json_path reads rest / a2a / websocket replies)",
        )
    seen: list[Any] = []
    for n, raw in responses:
        values = find_path(path, raw)
        if not values:
            continue
        if not has_equals:
            return AssertionResult.of(
                True, expected=expected, actual=values[0] if len(values) == 1 else values
            )
        for value in values:
            if json_equal(equals, value):
                return AssertionResult.of(True, expected=expected, actual=value)
        seen.extend((n, v) for v in values)
    if not seen:
        return AssertionResult.of(
            False,
            expected=expected,
            actual=None,
            message=f"{path} is not in any of {len(responses)} response(s); last: {shorten(repr(responses[-1][1]))}",
        )
    actual = [v for _, v in seen]
    first_turn, first_value = seen[0]
    return AssertionResult.of(
        False,
        expected=expected,
        actual=actual[0] if len(actual) == 1 else actual,
        message=f"{path} is {first_value!r} (turn {first_turn}), expected {equals!r}",
    )


@assertion("status", spec=int)
def status(spec: int, ctx: AssertionContext) -> AssertionResult:
    """Every agent turn that has an HTTP status has this one."""
    statuses = [(n, t.status) for n, t in numbered(ctx.transcript.agent_turns()) if t.status is not None]
    if not statuses:
        return AssertionResult.of(
            False, expected=spec, message="no agent turn has an HTTP status (status applies to rest targets)"
        )
    wrong = [(n, s) for n, s in statuses if s != spec]
    actual = [s for _, s in statuses]
    if wrong:
        n, s = wrong[0]
        return AssertionResult.of(
            False, expected=spec, actual=actual, message=f"turn {n} answered {s}, expected {spec}"
        )
    return AssertionResult.of(True, expected=spec, actual=actual)
