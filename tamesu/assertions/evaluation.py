"""What an assertion is: a registered function of its spec and the run, returning a value.

Every evaluator, built-in or a project's custom one, is called the same way: ``fn(spec, ctx)``, sync
or async, where ``spec`` is the kind's value from the suite (its spec model, or a plain value) and
``ctx.transcript`` is the run; it returns an ``AssertionResult``, a bool, or ``(bool, message)``.

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
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args, get_origin

from tamesu.config.kinds import AssertionKind, AssertionKinds, assertion_kinds
from tamesu.errors import TemplateError
from tamesu.kernel.outcome import AssertionResult
from tamesu.registry import Registry
from tamesu.templates import render_str, render_text, template_names

if TYPE_CHECKING:
    import httpx

    from tamesu.kernel.transcript import Transcript
    from tamesu.models.router import ModelRouter
    from tamesu.models.usage import UsageLedger
    from tamesu.secrets import Redactor
    from tamesu.templates import Scope

__all__ = [
    "AssertionContext",
    "AssertionResult",
    "Evaluator",
    "Verdict",
    "assertion",
    "assertions",
    "custom_assertion",
    "custom_assertions",
    "evaluate",
    "render_spec",
    "verdict",
]


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
    redactor: Redactor | None = None
    """The run's redactor, for what a check quotes of a backend's answer."""
    project_dir: Path | None = None
    """The folder of tamesu.yaml (where ``tamesu_assertions/`` is looked for); None: none."""


Verdict = Union["AssertionResult", bool, tuple[bool, str]]
"""What an evaluator returns: a result, or a bool with an optional message."""
Evaluator = Callable[[Any, AssertionContext], "Verdict | Awaitable[Verdict]"]
"""``fn(spec, ctx)``: every assertion, built-in or custom."""

assertions: AssertionKinds = assertion_kinds
"""The assertion kinds (``tamesu.config.kinds``): ``assertions.evaluator(kind)`` is a kind's evaluator."""
custom_assertions: Registry[Evaluator] = Registry("custom assertion")


def assertion(
    kind: str,
    *,
    spec: Any,
    renders: Iterable[str] = (),
    description: str = "",
    example: Any = None,
    summary: str = "",
) -> Callable[[Evaluator], Evaluator]:
    """Decorator: the evaluator of the assertion key ``kind``, whose value validates as ``spec``.

    A kind whose spec registered already (naming this function lazily) gets the function bound;
    otherwise the whole kind is registered here (a plugin's kind in one module), with
    ``description`` and ``example`` for the JSON Schema and ``summary`` for the docs. ``renders``
    names the spec's fields the evaluator renders itself; every other string of the spec has been
    rendered with the run's scope when the evaluator is called.
    """

    def deco(fn: Evaluator) -> Evaluator:
        if kind in assertions:
            entry = assertions.get(kind)
            if _unwrapped(entry.spec) is not _unwrapped(spec):
                raise ValueError(f"assertion kind {kind!r} is registered with another spec")
            entry.evaluator = fn
        else:
            entry = assertions.add(
                AssertionKind(kind, spec, description or kind, example, evaluator=fn, summary=summary)
            )
        entry.renders = frozenset(renders)
        return fn

    return deco


def _unwrapped(spec: Any) -> Any:
    """The type an ``Annotated`` spec is built on (``HttpStatus`` is an int)."""
    return _unwrapped(get_args(spec)[0]) if get_origin(spec) is Annotated else spec


def custom_assertion(name: str) -> Callable[[Evaluator], Evaluator]:
    """Decorator for projects: ``fn(spec, ctx)`` usable in suites as ``custom: name`` (the spec is
    that name; the run is ``ctx.transcript``)."""
    return custom_assertions.register(name)


def verdict(value: Any) -> AssertionResult:
    """An evaluator's answer as a result: a bool passes or fails, ``(bool, message)`` says why."""
    if isinstance(value, AssertionResult):
        return value
    if isinstance(value, bool):
        return AssertionResult.of(value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool):
        return AssertionResult.of(value[0], message=str(value[1]))
    return AssertionResult.failed_to_evaluate(
        f"an assertion must return an AssertionResult, a bool or (bool, message), not {type(value).__name__}"
    )


async def evaluate(
    kind: str, spec: Any, ctx: AssertionContext, *, name: str | None = None
) -> AssertionResult:
    """Render the spec and run its evaluator, sync or async; never let it raise."""
    try:
        evaluator = assertions.evaluator(kind)
        answer: Any
        try:
            spec = render_spec(spec, ctx.scope, keep=assertions.get(kind).renders)
        except TemplateError as exc:
            answer = _unrendered(spec, ctx, exc)
        else:
            answer = evaluator(spec, ctx)
        if type(answer) is not AssertionResult and inspect.isawaitable(answer):
            answer = await answer
        result = answer if type(answer) is AssertionResult else verdict(answer)
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
