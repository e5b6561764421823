"""What the planner hands the scheduler: one RunSpec per run (what a run gives back is in the kernel).

A RunSpec is one run of one expanded test (a case, a language, one repeat). It holds the
validated config models, so it can be shipped to a Ray worker as it is (pickle).
"""

from __future__ import annotations

import contextlib
import os
import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tamesu.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from tamesu.config import Assertion, Models, Target, Test
    from tamesu.config.prices import Prices
    from tamesu.config.project import LiveKitConfig, SipConfig
    from tamesu.playbooks.model import AttackPlan
    from tamesu.remote_agents.suite_agents import HeldRun
    from tamesu.templates import Scope

__all__ = ["NamedAssertion", "RunSpec", "new_session"]

_IDS = random.Random()
"""Session ids: random version-4 uuids from a generator of our own (seeded from the OS, untouched
by suites that seed ``random``), without a system call per run."""
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_IDS.seed)
_V4 = (0x4000 << 64) | (0x8000 << 48)
"""The version (4) and variant (RFC 4122) bits of a random uuid."""
_NOT_V4 = ~((0xF000 << 64) | (0xC000 << 48))


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
    project_dir: str | None = None
    """The folder of the suite's tamesu.yaml (custom assertions live beside it); None without one."""
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
    attack: AttackPlan | None = None
    """The attack a red-team run makes (``red_team:``); None for the suite's own tests."""
    max_goal_steps: int | None = None
    """The steps a scripted goal may take (``defaults.max_goal_steps``); set for tests with steps."""
    prices: Prices | None = None
    """What speech and call minutes cost (tamesu.yaml ``prices:``)."""
    sip: SipConfig | None = None
    """tamesu.yaml's ``sip:`` block, for a target type that reads it (``TargetKind.project_blocks``)."""
    livekit: LiveKitConfig | None = None
    """tamesu.yaml's ``livekit:`` block, for a target type that reads it (``TargetKind.project_blocks``)."""
    session: str | None = None
    """The session id the attempt made for its hooks (``session_id``); the graph uses it as it is."""
    held_by_driver: HeldRun | None = None
    """The suite's remote agents as the driver serves them for this run (a run in a Ray worker)."""
    grid: dict[str, str] | None = None
    """The ``--grid`` cell this run is (grid key -> value), for its result."""
    cannot_run: tuple[str, str] | None = None
    """(why, error kind) when this environment cannot run it (what validate warned about): the run
    is reported as an error and never started."""
    stt_engine: str | None = None
    """The STT engine that hears the agent on this run's calls (``--stt-engine``); None: the one
    chosen for the line and language (``tamesu.audio.engines.stt_for``)."""

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

    def unrunnable(self, why: str, kind: str) -> RunSpec:
        """A copy that ``cannot_run`` for this reason (the first reason given is kept)."""
        return self if self.cannot_run is not None else self.evolve(cannot_run=(why, kind))


_FIELDS = frozenset(RunSpec.__dataclass_fields__)


def new_session(target: Any, scope: Scope) -> str:
    """A session id for a call to ``target``: its ``session.id`` template rendered in ``scope``, else
    (no template, or one that cannot render) a fresh uuid. The one maker: the attempt's for the run
    (its hooks see it), the graph's for a counterpart and for a run made without an attempt."""
    template = getattr(getattr(target, "session", None), "id", None)
    if template:
        from tamesu.templates import render_text

        with contextlib.suppress(Exception):
            return render_text(template, scope)
    return _uuid4()


def _uuid4() -> str:
    """A random version-4 uuid in the form ``str(uuid.uuid4())`` has, drawn from ``_IDS``, without
    building a ``UUID`` object."""
    digits = f"{_IDS.getrandbits(128) & _NOT_V4 | _V4:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"
