"""What the agent did: ``tool_called``, ``tool_not_called``, ``tool_sequence``.

Arguments match as a subset (the suite names the arguments it cares about; nested mappings are
subsets too, lists and scalars are equal as JSON values). A ``schema`` holds for every call of the
tool, because a tool that is sometimes called with bad arguments is the bug worth catching.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tamesu.assertions.compare import json_subset
from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.config.assertions.tools import ToolCall, ToolSequence
from tamesu.kernel.outcome import AssertionResult

if TYPE_CHECKING:
    from tamesu.kernel.transcript import ToolCallRecord

__all__ = ["is_subsequence", "tool_called", "tool_not_called", "tool_sequence"]


def _field(spec: Any, key: str) -> Any:
    if isinstance(spec, str):
        return spec if key == "name" else None
    if isinstance(spec, dict):
        return spec.get(key)
    if key == "schema":
        return getattr(spec, "schema_", None)
    return getattr(spec, key, None)


def _show(call: ToolCallRecord) -> dict[str, Any]:
    return {"name": call.name, "args": call.args}


def _schema_error(schema: dict[str, Any], calls: Sequence[ToolCallRecord]) -> str | None:
    """The first way a call's arguments break the schema, with where in the arguments."""
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"the schema itself is invalid: {exc.message}") from None
    validator = cls(schema)
    for n, call in enumerate(calls, 1):
        errors = sorted(validator.iter_errors(call.args), key=lambda e: list(e.absolute_path))
        if errors:
            err = errors[0]
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            return f"call {n} of {call.name}: args{where}: {err.message}"
    return None


@assertion("tool_called", spec=ToolCall)
def tool_called(spec: ToolCall, ctx: AssertionContext) -> AssertionResult:
    """Some call has the name (and the arguments); with a schema, every call of it validates."""
    name = _field(spec, "name")
    args = _field(spec, "args")
    schema = _field(spec, "schema")
    calls = ctx.transcript.tool_calls()
    named = [c for c in calls if c.name == name]
    expected: dict[str, Any] = {"name": name}
    if args is not None:
        expected["args"] = args
    actual = [_show(c) for c in calls]
    if not named:
        names = sorted({c.name for c in calls})
        return AssertionResult.of(
            False,
            expected=expected,
            actual=actual,
            message=f"{name} was never called (calls: {', '.join(names) or 'none'})",
        )
    if args is not None and not any(json_subset(args, c.args) for c in named):
        return AssertionResult.of(
            False,
            expected=expected,
            actual=[_show(c) for c in named],
            message=f"{name} was called {len(named)} time(s), never with args {args}",
        )
    if schema is not None:
        try:
            problem = _schema_error(schema, named)
        except ValueError as exc:
            return AssertionResult.failed_to_evaluate(str(exc))
        if problem:
            return AssertionResult.of(
                False,
                expected={**expected, "schema": schema},
                actual=[_show(c) for c in named],
                message=problem,
            )
    return AssertionResult.of(True, expected=expected, actual=[_show(c) for c in named])


@assertion("tool_not_called", spec=ToolCall)
def tool_not_called(spec: ToolCall, ctx: AssertionContext) -> AssertionResult:
    """No call has the name (with args: no call has the name and those arguments)."""
    name = _field(spec, "name")
    args = _field(spec, "args")
    bad = [
        c
        for c in ctx.transcript.tool_calls()
        if c.name == name and (args is None or json_subset(args, c.args))
    ]
    expected: dict[str, Any] = {"not": {"name": name, **({"args": args} if args is not None else {})}}
    if bad:
        with_args = f" with args {args}" if args is not None else ""
        return AssertionResult.of(
            False,
            expected=expected,
            actual=[_show(c) for c in bad],
            message=f"{name} was called{with_args} {len(bad)} time(s): {bad[0].args}",
        )
    return AssertionResult.of(True, expected=expected)


def is_subsequence(want: Sequence[str], have: Sequence[str]) -> bool:
    """``want`` appears in ``have`` in order, other items allowed in between."""
    it = iter(have)
    return all(any(x == y for y in it) for x in want)


@assertion("tool_sequence", spec=ToolSequence)
def tool_sequence(spec: ToolSequence, ctx: AssertionContext) -> AssertionResult:
    """The named tools were called in this order (a subsequence unless exact)."""
    want = list(_field(spec, "calls") or [])
    exact = bool(_field(spec, "exact"))
    called = [c.name for c in ctx.transcript.tool_calls()]
    ok = called == want if exact else is_subsequence(want, called)
    if ok:
        return AssertionResult.of(True, expected=want, actual=called)
    how = "exactly" if exact else "in this order"
    return AssertionResult.of(
        False,
        expected=want,
        actual=called,
        message=f"expected {how}: {' -> '.join(want) or '(none)'}; called: {' -> '.join(called) or '(none)'}",
    )
