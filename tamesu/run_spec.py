"""What the planner hands the scheduler: one RunSpec per run (what a run gives back is in the kernel).

A RunSpec is one run of one expanded test (a case, a language, one repeat). It holds the
validated config models, so it can be shipped to a Ray worker as it is (pickle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tamesu.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from tamesu.config import Assertion, Models, Target, Test

__all__ = ["NamedAssertion", "RunSpec"]


@dataclass
class NamedAssertion:
    """An assertion with the name reports use: ``contains``, ``defaults/judge``, ``slo/llm_cost_usd``,
    ``pack:tone/judge``; ``index`` keeps two of the same kind apart (``contains#2``)."""

    name: str
    item: Assertion

    @cached_property
    def kind(self) -> str:
        """The item's kind, found once for every run of the test (the item looks it up each time)."""
        return self.item.kind

    @cached_property
    def spec(self) -> Any:
        """The item's value for its kind, read once like ``kind``."""
        return self.item.spec


@dataclass
class RunSpec:
    run_id: str
    """Unique in the invocation: the test id plus the repeat (``refund policy [late] (es)#2``)."""
    test_id: str
    """The expanded test's name, unique in the suite: ``name [case] (language)``."""
    test_name: str
    suite: str
    suite_path: str
    suite_dir: str
    target_name: str
    target: Target
    test: Test
    assertions: list[NamedAssertion] = field(default_factory=list)
    case: str | None = None
    language: str | None = None
    repeat_index: int = 0
    repeats: int = 1
    pass_threshold: float = 1.0
    retries: int = 0
    timeout: float = 180.0
    seed: int | None = None
    tags: list[str] = field(default_factory=list)
    vars: dict[str, str] = field(default_factory=dict)
    """project < suite < test < case."""
    secrets: dict[str, str] = field(default_factory=dict)
    """Secret refs by name (never values): project < suite."""
    models: Models | None = None
    quarantine: str | None = None
    """The reason, while the test's quarantine is in force."""
    counterpart_target: Target | None = None
    remote_agents: dict[str, Any] = field(default_factory=dict)
    """The suite's remote agents this run serves, by name (``tamesu.remote_agents.served``)."""
    limits: Limits = DEFAULT_LIMITS
    """What the run reads from its agent and keeps of it (tamesu.yaml ``limits:``)."""
    strict: bool = False
    """A skipped check makes the run an error, an inconclusive one a failure (``--strict``,
    ``defaults.strict``)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def evolve(self, **changes: Any) -> RunSpec:
        """A shallow copy with ``changes`` (what ``dataclasses.replace`` gives, without re-running
        ``__init__`` over every field: specs are copied on every run's path)."""
        if not changes.keys() <= _FIELDS:
            unknown = changes.keys() - _FIELDS
            raise TypeError(f"RunSpec has no field {', '.join(sorted(unknown))}")
        copy = object.__new__(RunSpec)
        copy.__dict__.update(self.__dict__)
        copy.__dict__.update(changes)
        return copy

    def with_extra(self, **extra: Any) -> RunSpec:
        """A copy whose ``extra`` has these keys too."""
        return self.evolve(extra={**self.extra, **extra})

    def cannot_run(self) -> tuple[str, str] | None:
        """(why, error kind) when this environment cannot run it (what validate warned about): the run
        is reported as an error and never started."""
        why = self.extra.get("unrunnable")
        return None if why is None else (str(why), str(self.extra.get("unrunnable_kind") or "environment"))

    def unrunnable(self, why: str, kind: str) -> RunSpec:
        """A copy that ``cannot_run`` for this reason (the first reason given is kept)."""
        return self if "unrunnable" in self.extra else self.with_extra(unrunnable=why, unrunnable_kind=kind)


_FIELDS = frozenset(RunSpec.__dataclass_fields__)
