"""Each suite's setup for one invocation: hooks, budget, and the secrets its selected tests use.

Secrets are resolved when a selected test uses them, never before: a secret that no test of the
selection renders (in the test, its target, the packs it uses, the hooks, or the model settings
when it needs a model) is not read at all, so an unset ``AGENT_TOKEN`` cannot stop a run that never
sends it. A secret that is used but cannot be resolved makes the runs that use it errors that
are reported (and not started); every other run goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import SecretError, TemplateError

if TYPE_CHECKING:
    from tamesu.config import Hook, Project
    from tamesu.config.loader import LoadedSuite
    from tamesu.run_spec import RunSpec
    from tamesu.secrets import Redactor
    from tamesu.templates import Scope

__all__ = ["Budget", "SuiteSetup", "sip_values", "suite_setups"]


@dataclass
class Budget:
    """The spend caps checked before every run; spend is added from each run's metrics.

    A run whose model layer raises ``BudgetExceeded`` trips it too. Once tripped, no new run starts
    and the invocation exits 4; runs in flight finish normally.
    """

    max_cost_usd: float | None = None
    max_tokens: float | None = None
    spent_usd: float = 0.0
    spent_tokens: float = 0.0
    tripped: str | None = None

    def record(self, metrics: Mapping[str, float]) -> None:
        """Add one run's spend (its ``llm_cost_usd`` / ``llm_tokens`` metrics, which also come back from Ray)."""
        self.spent_usd += float(metrics.get("llm_cost_usd", 0.0) or 0.0)
        self.spent_tokens += float(metrics.get("llm_tokens", 0.0) or 0.0)
        if self.max_cost_usd is not None and self.spent_usd > self.max_cost_usd:
            self.trip(
                f"model spend ${self.spent_usd:.4f} exceeded budgets.max_cost_usd ${self.max_cost_usd:g}"
            )
        elif self.max_tokens is not None and self.spent_tokens > self.max_tokens:
            self.trip(f"{self.spent_tokens:.0f} model tokens exceeded budgets.max_tokens {self.max_tokens:g}")

    def trip(self, reason: str) -> None:
        if self.tripped is None:
            self.tripped = reason

    def exceeded(self) -> str | None:
        return self.tripped


@dataclass
class SuiteSetup:
    """One suite's hooks (the project's already merged in) and the scope they render in."""

    name: str
    dir: Path
    before_all: list[Hook] = field(default_factory=list)
    after_all: list[Hook] = field(default_factory=list)
    before_each: list[Hook] = field(default_factory=list)
    after_each: list[Hook] = field(default_factory=list)
    scope: Scope | None = None
    """vars and secrets; each run adds its own vars and session."""
    secrets: dict[str, str] = field(default_factory=dict)
    """Resolved secret values by name, handed to the placement with each run (Ray workers need them)."""
    budget: Budget | None = None
    """The suite's caps (budgets:); any budget tripping stops the whole invocation."""
    remote_agents: dict[str, Any] = field(default_factory=dict)
    """The suite's remote agents (config by name), served before ``before_all`` until ``after_all``."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables every hook of the suite sees (the run's LiveKit server: ``livekit_serve``)."""


def suite_setups(
    loaded: Sequence[LoadedSuite], specs: Sequence[RunSpec], redactor: Redactor
) -> tuple[dict[str, SuiteSetup], list[RunSpec]]:
    """The setup of every suite (by path), and ``specs`` with those that use a secret that cannot be
    resolved marked as runs that cannot run (``RunSpec.cannot_run``)."""
    setups: dict[str, SuiteSetup] = {}
    out = list(specs)
    for suite in loaded:
        path = str(suite.path)
        mine = [k for k, spec in enumerate(out) if spec.suite_path == path]
        setups[path], failed = _setup(suite, [out[k] for k in mine], redactor)
        for k, why in zip(mine, failed):
            if why is not None:
                out[k] = out[k].unrunnable(why, "secret")
    return setups, out


def _setup(
    loaded: LoadedSuite, specs: list[RunSpec], redactor: Redactor
) -> tuple[SuiteSetup, list[str | None]]:
    """One suite's setup, and for each of its specs why it cannot run for want of a secret (or None)."""
    from tamesu.config import effective_budgets, effective_secrets, effective_vars
    from tamesu.config.reach import Reach
    from tamesu.runner.hooks import collect_hooks
    from tamesu.secrets import SecretStore
    from tamesu.templates import Scope

    suite, project = loaded.suite, loaded.project
    variables = {k: str(v) for k, v in effective_vars(project, suite).items()}
    store = SecretStore(
        effective_secrets(project, suite), redactor=redactor, base_dir=loaded.dir, vars=variables
    )
    reach = Reach(
        suite.model_dump(by_alias=True, exclude_unset=True),
        None if project is None else project.model_dump(by_alias=True, exclude_unset=True),
    )
    index = {id(test): i for i, test in enumerate(suite.tests)}
    tests = [index.get(id(spec.test), -1) for spec in specs]
    wanted = {i for i, spec in zip(tests, specs) if spec.cannot_run is None}
    values: dict[str, str] = {}
    problems: dict[str, str] = {}
    used = reach.names_used(wanted) if wanted else set()
    for name in sorted(n.partition(".")[2] for n in used if n.startswith("secrets.")):
        if name not in store.refs:
            continue
        try:
            values[name] = store.get(name)
        except SecretError as exc:
            problems[name] = f"{loaded.file or loaded.path}: {exc} (this test uses {{{{secrets.{name}}}}})"

    def why(i: int) -> str | None:
        used = reach.names_used([i])
        return next((text for name, text in problems.items() if f"secrets.{name}" in used), None)

    def secret(name: str) -> str:
        if name in problems:
            raise SecretError(problems[name])
        if name not in values:
            raise TemplateError(f"{{{{secrets.{name}}}}}: no secret {name} is declared")
        return values[name]

    caps = effective_budgets(project, suite)
    setup = SuiteSetup(
        name=suite.suite,
        dir=loaded.dir,
        before_all=collect_hooks("before_all", project, suite),
        after_all=collect_hooks("after_all", project, suite),
        before_each=collect_hooks("before_each", project, suite),
        after_each=collect_hooks("after_each", project, suite),
        scope=Scope({"vars": variables, "sip": sip_values(project)}, resolvers={"secrets": secret}),
        secrets=values,
        budget=Budget(max_cost_usd=caps.max_cost_usd, max_tokens=caps.max_tokens),
        remote_agents=dict(suite.remote_agents or {}),
    )
    return setup, [why(i) if problems else None for i in tests]


def sip_values(project: Project | None) -> dict[str, str]:
    """What hooks know of ``sip.``: the inbound number, and the inbound URI when its port is fixed
    (``sip.inbound_port`` or a port in ``inbound_number``); a sip target's own scope has both."""
    from tamesu.config.sip_inbound import inbound_address

    sip = project.sip if project is not None else None
    if sip is None or "{{" in f"{sip.inbound_number or ''}{sip.bind or ''}":
        return {}
    try:
        address = inbound_address(sip.inbound_number, bind=sip.bind, port=sip.inbound_port)
    except ValueError:
        return {}
    values = {"inbound_number": address.number}
    if address.port is not None:
        values["inbound_uri"] = address.uri(address.host or "127.0.0.1", address.port)
    return values
