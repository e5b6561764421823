"""A loaded suite -> the list of runs to make (cases x languages x repeats), with every default,
var, tag and assertion of each run settled.

Planning is pure: it reads the validated config and the cases files and touches nothing else, so
``tamesu run --dry-run`` (and the tests) can show exactly what would run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from tamesu.config.expand import expand_test
from tamesu.config.packs import expand_packs
from tamesu.durations import parse_duration
from tamesu.errors import ConfigError, UsageError
from tamesu.limits import Limits
from tamesu.remote_agents import served
from tamesu.run_spec import NamedAssertion, RunSpec

if TYPE_CHECKING:
    from pathlib import Path

    from tamesu.config import Assertion, Defaults, Project, Quarantine, Suite, Target, Test
    from tamesu.errors import Unrunnable

__all__ = [
    "matches_filter",
    "name_assertions",
    "plan",
    "quarantine_reason",
    "red_team_tests",
    "selected",
]


class _Loaded(Protocol):
    suite: Suite
    path: Path
    dir: Path
    project: Project | None
    project_dir: Path | None


def plan(
    loaded: _Loaded,
    *,
    tags: Iterable[str] = (),
    exclude_tags: Iterable[str] = (),
    filter: str | None = None,
    today: date | None = None,
    repeat_override: int | None = None,
    strict: bool = False,
) -> list[RunSpec]:
    """Every run of the suite, in suite order; a test's repeats follow one another."""
    from tamesu.config import effective_defaults, effective_models, effective_secrets, effective_vars

    suite, project = loaded.suite, loaded.project
    file = str(getattr(loaded, "file", "") or loaded.path)
    today = today or date.today()
    base_vars = {k: str(v) for k, v in effective_vars(project, suite).items()}
    secrets = dict(effective_secrets(project, suite))
    models = effective_models(project, suite)
    limits = Limits.from_config(project.limits if project is not None else None)
    shared = _shared_assertions(effective_defaults(project, suite), suite, file)
    keep, drop = set(tags), set(exclude_tags)

    problems: list[Unrunnable] = list(getattr(loaded, "unrunnable", None) or [])

    attacks = _attacks(loaded)
    entries: list[tuple[Test, Any]] = [(t, None) for t in suite.tests] + [(a.test, a.plan) for a in attacks]
    out: list[RunSpec] = []
    seen: set[str] = set()
    for index, (test, attack) in enumerate(entries):
        expansions = expand_test(test, loaded.dir, base_vars=base_vars)
        for expanded in expansions:
            if expanded.test_id in seen:
                raise ConfigError(
                    f"two tests are both named {expanded.test_id!r}",
                    file=file,
                    path="tests",
                    hint="test names (with their cases and languages) must be unique",
                )
            seen.add(expanded.test_id)
        test_tags = _unique([*(suite.tags or []), *(test.tags or [])])
        if not selected(test_tags, tags=keep, exclude_tags=drop):
            continue
        target = _target(suite, test.target, file, f"tests.{test.name}.target")
        counterpart = None
        if test.counterpart is not None:
            counterpart = _target(
                suite, test.counterpart.target, file, f"tests.{test.name}.counterpart.target"
            )
        prefix = "red_team/" if attack is not None else ""
        own = name_assertions(test.assert_ or [], prefix=prefix, suite_packs=suite.packs, file=file)
        assertions = _numbered([*own, *shared])
        remote = served(
            suite.remote_agents,
            target=target,
            counterpart=counterpart,
            test=test,
            assertions=assertions,
            hooks=suite.hooks,
        )
        defaults = effective_defaults(project, suite, test)
        repeats = repeat_override or defaults.repeat
        template = RunSpec(
            run_id="",
            test_id="",
            test_name=test.name,
            suite=suite.suite,
            suite_path=str(loaded.path),
            suite_dir=str(loaded.dir),
            target_name=test.target,
            target=target,
            test=test,
            repeats=repeats,
            pass_threshold=defaults.pass_threshold,
            retries=defaults.retries,
            timeout=parse_duration(defaults.timeout),
            seed=test.seed,
            models=models,
            quarantine=quarantine_reason(test.quarantine, today),
            counterpart_target=counterpart,
            remote_agents=remote,
            limits=limits,
            strict=strict or (project is not None and project.defaults.strict),
            project_dir=str(loaded.project_dir) if loaded.project_dir is not None else None,
            attack=attack,
            max_goal_steps=defaults.max_goal_steps if test.steps else None,
            prices=project.prices if project is not None else None,
            **_project_blocks(project, target),
        )
        for expanded in expansions:
            if filter and not matches_filter(expanded.test_id, filter):
                continue
            why = next((p for p in problems if p.reaches(index, expanded.language)), None)
            run = template if why is None else template.unrunnable(str(why), why.kind)
            out.extend(
                run.evolve(
                    run_id=f"{expanded.test_id}#{i + 1}" if repeats > 1 else expanded.test_id,
                    test_id=expanded.test_id,
                    case=expanded.case,
                    language=expanded.language,
                    repeat_index=i,
                    vars=expanded.vars,
                    assertions=list(assertions),
                    tags=list(test_tags),
                    secrets=dict(secrets),
                )
                for i in range(repeats)
            )
    return out


def red_team_tests(suite: Suite) -> list[Test]:
    """The adversarial tests ``red_team:`` adds to the suite: one per attack of its playbooks."""
    if suite.red_team is None:
        return []
    from tamesu.config.attacks import red_team_attacks

    return [a.test for a in red_team_attacks(suite)]


def _attacks(loaded: _Loaded) -> list[Any]:
    """The suite's red-team attacks (tamesu.redteam), located in the suite file for errors and reports."""
    if loaded.suite.red_team is None:
        return []
    from tamesu.config.attacks import red_team_attacks

    return red_team_attacks(loaded.suite, where=getattr(loaded, "where", None))


def selected(test_tags: Iterable[str], *, tags: Iterable[str] = (), exclude_tags: Iterable[str] = ()) -> bool:
    """``--tags`` keeps a test carrying any of them; ``--exclude-tags`` drops one carrying any."""
    have, keep, drop = set(test_tags), set(tags), set(exclude_tags)
    if keep and not have & keep:
        return False
    return not have & drop


def matches_filter(test_id: str, pattern: str) -> bool:
    """``--filter``: ``/REGEX/`` searched for in the test id; else a case-insensitive substring, or a
    glob when it has a ``*`` (only ``*`` is special, so the brackets of ``refund [late]`` match
    themselves)."""
    return _filter_regex(pattern).search(test_id) is not None


@lru_cache(maxsize=32)
def _filter_regex(pattern: str) -> re.Pattern[str]:
    if len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            return re.compile(pattern[1:-1])
        except re.error as exc:
            raise UsageError(f"--filter {pattern}: not a valid regular expression: {exc}") from None
    if "*" not in pattern:
        return re.compile(re.escape(pattern), re.IGNORECASE)
    glob = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.compile(rf"\A(?:{glob})\Z", re.IGNORECASE | re.DOTALL)


def quarantine_reason(quarantine: Quarantine | None, today: date) -> str | None:
    """The reason while the quarantine is in force: no ``until``, or ``until`` not yet past."""
    if quarantine is None:
        return None
    until = quarantine.until
    if until is None:
        return quarantine.reason
    last = until if isinstance(until, date) else date.fromisoformat(str(until))
    return quarantine.reason if today <= last else None


def name_assertions(
    items: Sequence[Assertion], *, prefix: str = "", suite_packs: Any = None, file: str = "<suite>"
) -> list[NamedAssertion]:
    """Expand packs in place and name each assertion the way reports show it: ``contains``,
    ``pack:pii_leakage/not_regex``, with ``prefix`` (``defaults/``) in front. Unnumbered."""
    return [
        NamedAssertion(f"{prefix}{'' if p.pack is None else f'pack:{p.pack}/'}{p.item.kind}", p.item)
        for p in expand_packs(items, suite_packs=suite_packs, file=file)
    ]


def _numbered(items: list[NamedAssertion]) -> list[NamedAssertion]:
    """The second assertion with a name becomes ``name#2``, the third ``name#3``."""
    counts: dict[str, int] = {}
    out = []
    for named in items:
        n = counts[named.name] = counts.get(named.name, 0) + 1
        out.append(named if n == 1 else NamedAssertion(f"{named.name}#{n}", named.item))
    return out


def _shared_assertions(defaults: Defaults, suite: Suite, file: str) -> list[NamedAssertion]:
    """``defaults.assert`` (``defaults/<kind>``) and one ``metric`` per ``defaults.slo`` entry (``slo/<metric>``)."""
    from tamesu.config import Assertion

    out = name_assertions(defaults.assert_ or [], prefix="defaults/", suite_packs=suite.packs, file=file)
    for metric, limit in (defaults.slo or {}).items():
        item = Assertion.model_validate({"metric": {"name": metric, "lte": limit}})
        out.append(NamedAssertion(f"slo/{metric}", item))
    return out


def _project_blocks(project: Project | None, target: Target) -> dict[str, Any]:
    """The tamesu.yaml blocks the target's type reads (``TargetKind.project_blocks``) that the
    project sets, by name: the spec's fields of the same names."""
    from tamesu.config.kinds import target_kinds

    kind = str(getattr(target, "type", ""))
    if project is None or kind not in target_kinds:
        return {}
    blocks = ((name, getattr(project, name, None)) for name in target_kinds.get(kind).project_blocks)
    return {name: block for name, block in blocks if block is not None}


def _target(suite: Suite, name: str, file: str, path: str) -> Target:
    try:
        return suite.targets[name]
    except KeyError:
        known = ", ".join(sorted(suite.targets))
        raise ConfigError(
            f"no target named {name!r}", file=file, path=path, hint=f"targets: {known}"
        ) from None


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
