"""What an assertion is: a registered function of its spec and the run, returning a value.

A failed assertion is an ``AssertionResult`` with ``passed=False``; an assertion that could not be
evaluated at all (a state check whose endpoint is down, an unusable judge answer) has
``error=True`` and makes the run an infrastructure error rather than a failure.

Every string of a spec is rendered with the run's scope (``{{vars.x}}``, ``{{env.X}}``,
``{{captured.x}}``, ...) before its evaluator sees it, so a case can carry its own expected answer;
an evaluator that must treat some fields itself (a command line) names them when it registers.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from tamesu.errors import TemplateError
from tamesu.registry import Registry
from tamesu.templates import render_str, render_text, template_names

if TYPE_CHECKING:
    import httpx

    from tamesu.models.router import ModelRouter
    from tamesu.models.usage import UsageLedger
    from tamesu.templates import Scope
    from tamesu.transcript import Transcript

__all__ = [
    "AssertionContext",
    "AssertionResult",
    "Evaluator",
    "assertion",
    "assertions",
    "custom_assertion",
    "custom_assertions",
    "evaluate",
    "render_spec",
]


class AssertionResult(msgspec.Struct, kw_only=True):
    name: str
    """What the report calls it: the kind, prefixed defaults/ or slo/ or pack:NAME/ where it came from."""
    kind: str
    passed: bool
    expected: Any = None
    actual: Any = None
    message: str = ""
    error: bool = False
    on_turn: int | str | None = None

    @classmethod
    def of(cls, ok: bool, *, expected: Any = None, actual: Any = None, message: str = "") -> AssertionResult:
        """A result whose name and kind the caller (``evaluate``) fills in."""
        return cls(name="", kind="", passed=ok, expected=expected, actual=actual, message=message)

    @classmethod
    def failed_to_evaluate(cls, message: str) -> AssertionResult:
        return cls(name="", kind="", passed=False, error=True, message=message)


@dataclass
class AssertionContext:
    """Everything an evaluator may read besides its own spec."""

    transcript: Transcript
    scope: Scope
    """vars, secrets, captured.x, env, session."""
    suite_dir: Path = field(default_factory=Path.cwd)
    http: httpx.AsyncClient | None = None
    update_golden: bool = False
    target_type: str = ""
    models: ModelRouter | None = None
    """The invocation's model router, for judges, embeddings and evaluators (None: no model configured)."""
    ledger: UsageLedger | None = None
    """The run's own usage, so judge calls count towards llm_cost_usd of this run."""
    extra: dict[str, Any] = field(default_factory=dict)


Evaluator = Callable[[Any, AssertionContext], "AssertionResult | Awaitable[AssertionResult]"]

assertions: Registry[Evaluator] = Registry("assertion kind")
custom_assertions: Registry[Evaluator] = Registry("custom assertion")


_RENDERS_ITSELF: dict[str, frozenset[str]] = {}
"""Assertion kind -> the spec's fields its evaluator renders itself."""


def assertion(kind: str, *, renders: Iterable[str] = ()) -> Callable[[Evaluator], Evaluator]:
    """Decorator: the evaluator of the assertion key ``kind``.

    ``renders`` names the spec's fields the evaluator renders itself; every other string of the
    spec has been rendered with the run's scope when the evaluator is called.
    """
    _RENDERS_ITSELF[kind] = frozenset(renders)
    return assertions.register(kind)


def custom_assertion(name: str) -> Callable[[Evaluator], Evaluator]:
    """Decorator for projects: an assertion usable in suites as ``custom: name``."""
    return custom_assertions.register(name)


async def evaluate(
    kind: str, spec: Any, ctx: AssertionContext, *, name: str | None = None
) -> AssertionResult:
    """Render the spec and run its evaluator, sync or async; never let it raise."""
    try:
        evaluator = assertions.get(kind)
        result: AssertionResult | Awaitable[AssertionResult]
        try:
            spec = render_spec(spec, ctx.scope, keep=_RENDERS_ITSELF.get(kind, frozenset()))
        except TemplateError as exc:
            result = _unrendered(spec, ctx, exc)
        else:
            result = evaluator(spec, ctx)
        if type(result) is not AssertionResult and inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        result = AssertionResult.failed_to_evaluate(f"{type(exc).__name__}: {exc}")
    result.kind = kind
    result.name = name or kind
    return result


def render_spec(spec: Any, scope: Scope, *, keep: Iterable[str] = ()) -> Any:
    """``spec`` with every ``{{name}}`` in its strings rendered (the same object when it has none).

    A spec model's own string fields render as text; values inside mappings and lists keep the
    type of the value a lone template names. The fields named in ``keep`` are left as written.
    """
    if type(spec) is str:
        return render_text(spec, scope) if "{{" in spec else spec
    fields = getattr(type(spec), "model_fields", None)
    if fields is None:
        return _render_value(spec, scope)
    kept = frozenset(keep)
    changes: dict[str, Any] = {}
    for name in fields:
        if name in kept:
            continue
        value = getattr(spec, name)
        new = render_spec(value, scope)
        if new is not value:
            changes[name] = new
    return spec.model_copy(update=changes) if changes else spec


def _render_value(value: Any, scope: Scope) -> Any:
    if type(value) is str:
        return render_str(value, scope) if "{{" in value else value
    if isinstance(value, dict):
        out = {k: _render_value(v, scope) for k, v in value.items()}
        return out if any(out[k] is not v for k, v in value.items()) else value
    if isinstance(value, list):
        items = [_render_value(v, scope) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if getattr(type(value), "model_fields", None) is not None:
        return render_spec(value, scope)
    return value


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif getattr(type(value), "model_fields", None) is not None:
        for name in type(value).model_fields:
            yield from _strings(getattr(value, name))


def _unrendered(spec: Any, ctx: AssertionContext, exc: TemplateError) -> AssertionResult:
    """A spec naming a value the run did not produce fails (nothing was captured); any other name
    that does not render makes the assertion an error."""
    missing = [
        name
        for text in _strings(spec)
        for name in template_names(text)
        if name.startswith("captured.") and not ctx.scope.has(name)
    ]
    if missing:
        names = ", ".join(f"{{{{{n}}}}}" for n in dict.fromkeys(missing))
        return AssertionResult.of(False, message=f"{names}: nothing was captured in this run")
    return AssertionResult.failed_to_evaluate(f"cannot render the assertion: {exc}")
