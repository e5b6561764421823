"""What this machine cannot run of a valid suite, and which tests that reaches.

A suite can be right and still not run everywhere: a ``${VAR}`` is not set here, a secret's
variable or file is missing, an extra is not installed, the STT engine installed cannot hear the
test's language, or a target type or assertion kind is registered with no adapter or evaluator yet.
Each such problem is an ``Unrunnable``: ``tamesu validate`` prints it as a warning naming what to
set or install (an error with ``--strict``), and ``tamesu run`` reports the
tests it reaches as errors without running them, while the others run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tamesu.config.kinds import assertion_kinds, target_kinds
from tamesu.config.reach import Reach, audio_tests, get_in, mapping, strings, unset_variables
from tamesu.config.yamlload import KeyPath, Positions, format_path
from tamesu.errors import Unrunnable
from tamesu.templates import template_names

__all__ = ["check_environment", "unsupported_step"]


class _Report:
    """Gathers the problems of one suite, located in the suite or in its tamesu.yaml."""

    def __init__(self, reach: Reach, file: str, positions: Positions, project_file: Path | None) -> None:
        self.reach, self.file, self.positions = reach, file, positions
        self.project_file = project_file
        self._project_positions: Positions | None = None
        self.out: list[Unrunnable] = []

    def add(
        self,
        message: str,
        path: KeyPath,
        *,
        hint: str = "",
        kind: str = "environment",
        in_project: bool = False,
        tests: tuple[int, ...] | str | None = "at",
        language: str | None = None,
    ) -> None:
        reached = self.reach.tests_at(path, in_project=in_project) if isinstance(tests, str) else tests
        if reached == ():
            return
        file, positions = self.file, self.positions
        if in_project:
            file, positions = self._project()
        line, col = positions.value(path)
        self.out.append(
            Unrunnable(message, file=file, line=line, column=col, path=format_path(path), hint=hint,
                       tests=reached, language=language, kind=kind)
        )  # fmt: skip

    def _project(self) -> tuple[str, Positions]:
        from tamesu.config.yamlload import display_path, read_doc

        if self.project_file is None:  # a project given as data alone
            return "tamesu.yaml", Positions()
        name = display_path(self.project_file)
        if self._project_positions is None:
            self._project_positions = read_doc(self.project_file, name).positions
        return name, self._project_positions


def check_environment(
    data: Mapping[str, Any],
    *,
    file: str,
    positions: Positions,
    suite_dir: Path,
    project: Mapping[str, Any] | None = None,
    project_dir: Path | None = None,
) -> list[Unrunnable]:
    """Every part of a valid suite that this environment cannot run, with the tests it reaches."""
    from tamesu.config.yamlload import PROJECT_FILE

    reach = Reach(data, project)
    report = _Report(reach, file, positions, project_dir / PROJECT_FILE if project_dir else None)
    _variables(report, data, in_project=False)
    if project:
        _variables(report, project, in_project=True)
    _secrets(report, data, project or {}, suite_dir)
    _adapters(report, data)
    _evaluators(report, data)
    _voice(report, data)
    _a2a(report, data)
    _steps(report, data)
    _red_team_language(report, data)
    return report.out


def _red_team_language(report: _Report, data: Mapping[str, Any]) -> None:
    """A red team in a language without scripted openings runs them in English: said, not refused."""
    language = get_in(data, "red_team", "language")
    if not isinstance(language, str):
        return
    from tamesu.playbooks.languages import LANGUAGES, supported

    if supported(language):
        return
    line, col = report.positions.value(("red_team", "language"))
    report.out.append(
        Unrunnable(
            f"the red team has no scripted openings in {language!r}: they are played in English",
            file=report.file, line=line, column=col, path="red_team.language", tests=(),
            kind="language", hint=f"openings exist in {', '.join(LANGUAGES)}; a simulator model "
            f"(models.simulator) writes the adaptive turns in {language}",
        )
    )  # fmt: skip


def _variables(report: _Report, data: Mapping[str, Any], *, in_project: bool) -> None:
    for path, name in unset_variables(data):
        report.add(
            f"environment variable {name} is not set", path, in_project=in_project,
            hint=f"set it, or give a default: ${{{name}:-value}}",
        )  # fmt: skip
    for path, text in strings(data, ()):
        if "{{" in text and path[:1] != ("secrets",):
            for name in dict.fromkeys(template_names(text)):
                ns, _, member = name.partition(".")
                if ns == "env" and member and member not in os.environ:
                    report.add(f"environment variable {member} is not set ({{{{{name}}}}})", path,
                               in_project=in_project, hint=f"set {member} before tamesu run")  # fmt: skip


def _secrets(report: _Report, data: Mapping[str, Any], project: Mapping[str, Any], suite_dir: Path) -> None:
    """``env:`` and ``file:`` secrets the tests use must resolve here; ``exec:`` ones run only in a run."""
    suite_refs = mapping(data.get("secrets"))
    refs = {**mapping(project.get("secrets")), **suite_refs}
    used = {
        name: reached
        for name, ref in refs.items()
        if isinstance(ref, str) and ref.split("${", 1)[0].startswith(("env:", "file:"))
        and (reached := report.reach.tests_using(f"secrets.{name}")) != ()
    }  # fmt: skip
    if not used:
        return
    from tamesu.errors import SecretError
    from tamesu.secrets import Redactor, SecretStore

    variables = {k: str(v) for k, v in {**mapping(project.get("vars")), **mapping(data.get("vars"))}.items()}
    store = SecretStore(refs, redactor=Redactor(), base_dir=suite_dir, vars=variables)
    for name, reached in used.items():
        try:
            store.get(name)
        except SecretError as exc:
            in_project = name not in suite_refs
            hint = "set the variable, or run only tests that do not use it"
            report.add(str(exc), ("secrets", name), hint=hint, kind="secret", in_project=in_project,
                       tests=reached)  # fmt: skip


def _adapters(report: _Report, data: Mapping[str, Any]) -> None:
    """A target type whose adapter needs an extra or a program that is missing, or that has no
    adapter yet: each asked of its kind in the registry."""
    without = target_kinds.without_adapter()
    for name, target in report.reach.targets.items():
        kind = get_in(target, "type")
        entry = target_kinds.get(kind) if kind in target_kinds else None
        where: KeyPath = ("targets", name, "type")
        if entry is not None and entry.extra is not None:
            from tamesu.extras import EXTRAS

            needed = EXTRAS[entry.extra]
            if missing := needed.missing():
                report.add(
                    f"{_article(str(kind))} {kind} target needs the {needed.name} extra ({', '.join(missing)} not installed)",
                    where, kind="extra", hint=needed.install,
                )  # fmt: skip
        if entry is not None and entry.needs is not None:
            lacking = _resolve(entry.needs)()
            if lacking is not None:
                hint = f"apt-get install {lacking.debian}" if lacking.debian else ""
                report.add(str(lacking), where, kind="extra", hint=hint)
        if kind in without:
            report.add(
                f"the {kind} target type has no adapter in this version of tamesu yet", where,
                kind="adapter", hint=f"its tests are reported as errors; adapters: {', '.join(target_kinds.with_adapter())}",
            )  # fmt: skip


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _resolve(ref: str) -> Any:
    """``"module:function"`` -> the function."""
    import importlib

    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _evaluators(report: _Report, data: Mapping[str, Any]) -> None:
    """An assertion kind registered with no evaluator."""
    from tamesu.config.model_needs import assertion_lists

    without = assertion_kinds.without_evaluator()
    for path, items in assertion_lists(dict(data)):
        for j, item in enumerate(items):
            for kind in item if isinstance(item, Mapping) else ():
                if kind in without:
                    report.add(
                        f"the {kind} assertion has no evaluator in this version of tamesu yet", (*path, j, kind),
                        kind="adapter", hint="the tests that assert it are reported as errors",
                    )  # fmt: skip


def _voice(report: _Report, data: Mapping[str, Any]) -> None:
    """Audio tests need the voice extra, and an STT engine that hears their language."""
    from tamesu.extras import EXTRAS

    with_adapter = target_kinds.with_adapter()
    calls = [(i, test, target) for i, test, target in audio_tests(data) if target.get("type") in with_adapter]
    if not calls:
        return
    voice = EXTRAS["voice"]
    missing = voice.missing()
    if missing:
        for i, _, _ in calls:
            report.add(
                f"a call with audio needs the voice extra ({', '.join(missing)} not installed)",
                ("tests", i, "target"), kind="extra", hint=voice.install,
            )  # fmt: skip
        return
    from tamesu.environment.audio_checks import stt_problem

    for i, test, target in calls:
        seen: set[str] = set()
        listed = bool(test.get("languages"))
        for k, language in enumerate(test.get("languages") or [get_in(test, "persona", "language")]):
            why = stt_problem(target, language)
            if why and why not in seen:
                seen.add(why)
                where: KeyPath = (
                    ("tests", i, "languages", k) if listed else ("tests", i, "persona", "language")
                )
                report.add(why, where, tests=(i,), language=language if listed else None)


def _a2a(report: _Report, data: Mapping[str, Any]) -> None:
    """The tests that serve remote agents need the a2a extra (the A2A SDK serves them)."""
    agents = mapping(data.get("remote_agents"))
    if not agents:
        return
    from tamesu.extras import EXTRAS

    extra = EXTRAS["a2a"]
    missing = extra.missing()
    if not missing:
        return
    for name, agent in agents.items():
        report.add(
            f"serving remote agent {name} needs the a2a extra ({', '.join(missing)} not installed)",
            ("remote_agents", name), kind="extra", hint=extra.install,
            tests=None if get_in(agent, "addr") else _serving(report.reach, name),
        )  # fmt: skip


def unsupported_step(step: Any) -> str | None:
    """Why this installation cannot run a browser step (an a11y step without axe-core); None when
    it can. Validate warns of it, and the step runner refuses the step with the same words."""
    if next(iter(step.action or {}), "") == "a11y":
        from tamesu.extras import axe_missing

        return axe_missing()
    return None


def _steps(report: _Report, data: Mapping[str, Any]) -> None:
    """A step this installation cannot run (a11y without axe-core vendored) makes its test an error
    that says so (Chromium itself is the browser kind's ``needs``)."""
    for i, test in enumerate(data.get("tests") or []):
        steps = test.get("steps") if isinstance(test, Mapping) else None
        for j, step in enumerate(steps or []):
            if not isinstance(step, Mapping):
                continue
            action = step.get("action")
            view = _StepView(
                step.get("goal"), step.get("expect"), action if isinstance(action, Mapping) else None
            )
            why = unsupported_step(view)
            if why is not None:
                report.add(why, ("tests", i, "steps", j), kind="adapter", tests=(i,),
                           hint="its test is reported as an error")  # fmt: skip


@dataclass(frozen=True)
class _StepView:
    goal: Any
    expect: Any
    action: Mapping[str, Any] | None


def _serving(reach: Reach, agent: str) -> tuple[int, ...]:
    """The tests that name remote agent ``agent`` (a template or a delegated_to), so serve it."""
    out = []
    for i, test in reach.tests:
        named = any(n.split(".")[:2] == ["remote", agent] for n in reach.uses.get(i, ()))
        delegated = any(
            isinstance(item, Mapping)
            and agent in (get_in(item, "delegated_to"), get_in(item, "delegated_to", "agent"))
            for item in test.get("assert") or []
        )
        if named or delegated:
            out.append(i)
    return tuple(out)
