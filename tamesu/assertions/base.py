"""What an assertion is: a registered function of its spec and the run, returning a value.

A failed assertion is an ``AssertionResult`` with ``passed=False``; an assertion that could not be
evaluated at all (a state check whose endpoint is down, an unusable judge answer) has
``error=True`` and makes the run an infrastructure error rather than a failure.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from tamesu.registry import Registry

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


def assertion(kind: str) -> Callable[[Evaluator], Evaluator]:
    """Decorator: the evaluator of the assertion key ``kind``."""
    return assertions.register(kind)


def custom_assertion(name: str) -> Callable[[Evaluator], Evaluator]:
    """Decorator for projects: an assertion usable in suites as ``custom: name``."""
    return custom_assertions.register(name)


async def evaluate(
    kind: str, spec: Any, ctx: AssertionContext, *, name: str | None = None
) -> AssertionResult:
    """Run one evaluator, sync or async, and never let it raise."""
    try:
        result = assertions.get(kind)(spec, ctx)
        if type(result) is not AssertionResult and inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        result = AssertionResult.failed_to_evaluate(f"{type(exc).__name__}: {exc}")
    result.kind = kind
    result.name = name or kind
    return result
