"""Each suite's setup for one invocation: hooks, budget, and the secrets its selected tests use.

Secrets are resolved when a selected test uses them, never before: a secret that no test of the
selection renders (in the test, its target, the packs it uses, the hooks, or the model settings
when it needs a model) is not read at all, so an unset ``AGENT_TOKEN`` cannot stop a run that never
sends it. A secret that is used but cannot be resolved makes the runs that use it errors that
are reported (and not started); every other run goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tamesu.errors import SecretError, TemplateError

if TYPE_CHECKING:
    from tamesu.config.loader import LoadedSuite
    from tamesu.runner.scheduler import SuiteSetup
    from tamesu.runner.spec import RunSpec
    from tamesu.secrets import Redactor

__all__ = ["suite_setups"]


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
    from tamesu.config.environment import Reach
    from tamesu.runner.hooks import collect_hooks
    from tamesu.runner.scheduler import Budget, SuiteSetup
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
    wanted = {i for i, spec in zip(tests, specs) if spec.cannot_run() is None}
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
        scope=Scope({"vars": variables}, resolvers={"secrets": secret}),
        secrets=values,
        budget=Budget(max_cost_usd=caps.max_cost_usd, max_tokens=caps.max_tokens),
    )
    return setup, [why(i) if problems else None for i in tests]
