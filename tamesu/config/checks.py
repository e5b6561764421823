"""Checks that need the whole suite: names that refer to other parts, templates, files, dates.

The models check each object on its own; these checks run after them, on the file's plain data:
it still carries the key paths the position table knows, and the checks still run when the models
refused part of the file, so every problem of a file is reported at once. Each problem is a
located ConfigError.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tamesu.config.kinds import target_kinds
from tamesu.config.model_needs import assertion_items, tests_of
from tamesu.config.scriptparts import check_script_parts
from tamesu.config.valuechecks import check_values
from tamesu.config.yamlload import KeyPath, YamlDoc, format_path
from tamesu.errors import ConfigError
from tamesu.templates import DYNAMIC_NAMES, template_names
from tamesu.untrusted import OutsideFolder, inside

__all__ = ["SuiteCheck", "SuiteFile", "check_document"]


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """errors_map.did_you_mean, imported (with difflib) only when there is a problem to name."""
    from tamesu.config.errors_map import did_you_mean as suggest

    return suggest(word, options)


@dataclass(frozen=True)
class SuiteFile:
    """One suite file as a check outside the contract reads it: its data with positions, its folder,
    and the tamesu.yaml it is checked against."""

    doc: YamlDoc
    suite_dir: Path
    project: Mapping[str, Any] | None = None
    project_dir: Path | None = None

    @property
    def data(self) -> dict[str, Any]:
        return self.doc.data

    def error(self, message: str, path: KeyPath, *, hint: str = "") -> ConfigError:
        """A ConfigError located at ``path``'s value in the suite file."""
        line, col = self.doc.positions.value(path)
        return ConfigError(
            message, file=self.doc.file, line=line, column=col, path=format_path(path), hint=hint
        )


SuiteCheck = Callable[[SuiteFile], list[ConfigError]]
"""A check a face adds to loading (``load_suite(..., checks=...)``): it returns located errors; an
``Unrunnable`` among them leaves the suite loadable and marks the tests it reaches."""


@dataclass
class _Ctx:
    doc: YamlDoc
    suite_dir: Path
    errors: list[ConfigError]

    def error(self, message: str, path: KeyPath, *, hint: str = "", key: bool = False) -> None:
        pos = self.doc.positions
        line, col = pos.key(path) if key else pos.value(path)
        self.errors.append(
            ConfigError(message, file=self.doc.file, line=line, column=col, path=format_path(path), hint=hint)
        )


def check_document(
    doc: YamlDoc,
    suite_dir: Path,
    *,
    project: Mapping[str, Any] | None = None,
    update_golden: bool = False,
    project_dir: Path | None = None,
    checks: Sequence[SuiteCheck] = (),
) -> list[ConfigError]:
    """Every cross-reference problem of a suite file whose data the models accept, sorted by position.

    ``suite_dir`` is the suite's folder (files are relative to it); ``project`` is the tamesu.yaml
    mapping the suite is checked against, None when there is none; ``project_dir`` its folder.
    ``checks`` run after these on the same file: the machine's (``tamesu.environment.MACHINE_CHECKS``),
    which the contract cannot know, passed in by the faces that load suites to run them here.
    """
    ctx = _Ctx(doc, suite_dir, [])
    data: dict[str, Any] = doc.data
    _check_target_refs(ctx, data)
    _check_playbooks(ctx, data)
    _check_assertion_refs(ctx, data)
    _check_quarantine_dates(ctx, data)
    files_ok = _check_files(ctx, data, update_golden=update_golden)
    base_vars = {**_str_map((project or {}).get("vars")), **_str_map(data.get("vars"))}
    _check_unique_names(ctx, data, files_ok, base_vars)
    _check_templates(
        ctx,
        data,
        project_vars=set(_keys((project or {}).get("vars"))),
        secrets=set(_keys((project or {}).get("secrets"))) | set(_keys(data.get("secrets"))),
        case_vars=_case_vars(ctx, data, files_ok),
    )
    ctx.errors.extend(check_values(doc))
    ctx.errors.extend(check_script_parts(doc))
    file = SuiteFile(doc, suite_dir, project, project_dir)
    for check in checks:
        ctx.errors.extend(check(file))
    return sorted(ctx.errors, key=lambda e: (e.line or 0, e.column or 0, e.path))


def _check_target_refs(ctx: _Ctx, data: dict[str, Any]) -> None:
    targets = list((data.get("targets") or {}).keys())

    def check(name: Any, path: KeyPath) -> None:
        if isinstance(name, str) and name not in targets:
            hint = did_you_mean(name, targets) or f"targets: {', '.join(targets) or 'none defined'}"
            ctx.error(f"unknown target '{name}'", path, hint=hint)

    for i, test in tests_of(data):
        check(test.get("target"), ("tests", i, "target"))
        counterpart = test.get("counterpart")
        if isinstance(counterpart, dict):
            check(counterpart.get("target"), ("tests", i, "counterpart", "target"))
    red_team = data.get("red_team")
    if isinstance(red_team, dict):
        check(red_team.get("target"), ("red_team", "target"))


def _check_playbooks(ctx: _Ctx, data: dict[str, Any]) -> None:
    """red_team.playbooks names registered playbooks; an audio playbook needs an audio target."""
    red_team = data.get("red_team")
    if not isinstance(red_team, dict) or not isinstance(red_team.get("playbooks"), list):
        return
    names = red_team["playbooks"]
    from tamesu.config.attacks import is_audio
    from tamesu.playbooks.catalogue import get_playbook, playbook_names, unknown_names

    unknown = set(unknown_names([n for n in names if isinstance(n, str)]))
    target = (data.get("targets") or {}).get(red_team.get("target"))
    for i, name in enumerate(names):
        if name in unknown:
            known = playbook_names()
            hint = did_you_mean(name, known) or f"playbooks: {', '.join(known)}"
            ctx.error(f"unknown playbook '{name}'", ("red_team", "playbooks", i), hint=hint)
        elif isinstance(name, str) and isinstance(target, dict) and get_playbook(name).requires == "audio":
            if not is_audio(target.get("type"), target.get("mode")):
                ctx.error(
                    f"the {name} playbook attacks calls, and target '{red_team.get('target')}' is not an audio target",
                    ("red_team", "playbooks", i),
                    hint="point red_team.target at a voice, twilio or sip target (or one in audio mode)",
                )


def _check_assertion_refs(ctx: _Ctx, data: dict[str, Any]) -> None:
    from tamesu.config.assertions.custom import BUILTIN_PACKS

    remote = list((data.get("remote_agents") or {}).keys())
    packs = [*BUILTIN_PACKS, *(data.get("packs") or {}).keys()]
    for path, kind, spec in assertion_items(data):
        if kind == "pack" and isinstance(spec, str) and spec not in packs:
            ctx.error(
                f"unknown pack '{spec}'", path, hint=did_you_mean(spec, packs) or f"packs: {', '.join(packs)}"
            )
        elif kind == "delegated_to":
            name, at = (
                (spec, path) if isinstance(spec, str) else ((spec or {}).get("agent"), (*path, "agent"))
            )
            if isinstance(name, str) and name not in remote:
                hint = did_you_mean(name, remote) or (
                    f"remote_agents: {', '.join(remote)}" if remote else "declare it under remote_agents"
                )
                ctx.error(f"unknown remote agent '{name}'", at, hint=hint)


def _check_quarantine_dates(ctx: _Ctx, data: dict[str, Any]) -> None:
    """The models check the form; a form such as 2026-02-30 still names no real day."""
    for i, test in tests_of(data):
        q = test.get("quarantine")
        until = q.get("until") if isinstance(q, dict) else None
        if isinstance(until, str):
            try:
                _dt.date.fromisoformat(until)
            except ValueError:
                ctx.error(
                    f"expected a real date written YYYY-MM-DD, got '{until}'",
                    ("tests", i, "quarantine", "until"),
                )


def _is_uri(value: str) -> bool:
    return "://" in value or value.startswith(("data:", "mailto:"))


def _referenced_files(data: dict[str, Any]) -> Iterator[tuple[KeyPath, Any, str]]:
    """(key path, the path as written, what it is) of every file a suite points at."""
    for name, target in (data.get("targets") or {}).items():
        if not isinstance(target, dict):
            continue
        yield ("targets", name, "system_file"), target.get("system_file"), "system_file"
        yield (
            ("targets", name, "auth", "storage_state"),
            _get(target, "auth", "storage_state"),
            "storage_state",
        )
    for i, test in tests_of(data):
        yield ("tests", i, "cases_file"), test.get("cases_file"), "cases_file"
        for k, step in enumerate(_get(test, "scenario", "script") or []):
            for m, f in enumerate(_get(step, "files") or []):
                at: KeyPath = ("tests", i, "scenario", "script", k, "files", m)
                if isinstance(f, str) and not _is_uri(f):
                    yield at, f, "file"
                elif isinstance(f, dict):
                    yield (*at, "path"), f.get("path"), "file"
        replay = _get(test, "scenario", "replay")
        if isinstance(replay, dict):
            yield ("tests", i, "scenario", "replay", "recording"), replay.get("recording"), "recording"
            for k, turn in enumerate(replay.get("turns") or []):
                if isinstance(turn, dict):
                    yield ("tests", i, "scenario", "replay", "turns", k, "clip"), turn.get("clip"), "clip"
        noise = _get(test, "persona", "behaviors", "background_noise")
        if isinstance(noise, str) and noise.lower().endswith(".wav"):
            yield ("tests", i, "persona", "behaviors", "background_noise"), noise, "noise file"
    for path, kind, spec in assertion_items(data):
        if kind == "golden" and isinstance(spec, dict):
            yield (*path, "file"), spec.get("file"), "golden file"


def _check_files(ctx: _Ctx, data: dict[str, Any], *, update_golden: bool) -> set[KeyPath]:
    """Files must exist next to the suite; returns the key paths whose file is there."""
    ok: set[KeyPath] = set()
    for path, value, what in _referenced_files(data):
        if not isinstance(value, str) or not value or "{{" in value or "${" in value:
            continue  # a ${VAR} still here is not set: the environment check reports it
        if what == "golden file":
            try:
                inside(ctx.suite_dir, value, what=what)
            except OutsideFolder as exc:
                ctx.error(str(exc), path, hint="golden files are kept inside the suite's folder")
                continue
        full = Path(value).expanduser()
        full = full if full.is_absolute() else ctx.suite_dir / full
        if full.is_file():
            ok.add(path)
        elif what == "golden file" and update_golden:
            continue
        else:
            hint = "paths are relative to the suite's folder"
            if what == "golden file":
                hint = "create it with tamesu run --update-golden"
            ctx.error(f"{what} not found: {value}", path, hint=hint)
    return ok


def _case_vars(ctx: _Ctx, data: dict[str, Any], files_ok: set[KeyPath]) -> dict[int, set[str]]:
    """Per test index, the vars its cases define (inline and cases_file columns or keys)."""
    from tamesu.config.expand import read_cases_file

    out: dict[int, set[str]] = {}
    for i, test in tests_of(data):
        names: set[str] = set()
        for case in test.get("cases") or []:
            if isinstance(case, dict):
                names.update((case.get("vars") or {}).keys())
        if ("tests", i, "cases_file") in files_ok:
            try:
                for row in read_cases_file(ctx.suite_dir / test["cases_file"]):
                    names.update(row.vars)
            except ConfigError:
                pass
        out[i] = names
    return out


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _check_unique_names(
    ctx: _Ctx, data: dict[str, Any], files_ok: set[KeyPath], base_vars: dict[str, str]
) -> None:
    """Test names must stay unique once every case and language has become a test of its own
    (and their ``{{vars.x}}`` rendered)."""
    from tamesu.config.expand import expanded_ids

    first: dict[str, int] = {}
    for i, test in tests_of(data):
        name_path: KeyPath = ("tests", i, "name")
        if not isinstance(test.get("name"), str):
            continue
        if test.get("cases_file") and ("tests", i, "cases_file") not in files_ok:
            ids = [test["name"]]
        else:
            try:
                ids = expanded_ids(test, ctx.suite_dir, base_vars=base_vars)
            except ConfigError as exc:
                _relocate(ctx, exc, i)
                continue
        for test_id in dict.fromkeys(ids):
            if test_id in first:
                line = ctx.doc.positions.value(("tests", first[test_id], "name"))[0]
                ctx.error(
                    f"duplicate test name '{test_id}' (tests[{first[test_id]}] at line {line} has it too)",
                    name_path,
                    hint="every test, case and language must have a name of its own",
                )
            else:
                first[test_id] = i


def _relocate(ctx: _Ctx, exc: ConfigError, i: int) -> None:
    """A problem found while expanding a test: keep the cases file's own position when it has one."""
    if exc.line is not None and exc.file != "<suite>":
        ctx.errors.append(exc)
        return
    key = "cases_file" if "cases_file" in exc.message or exc.file != "<suite>" else "cases"
    test = ctx.doc.data["tests"][i]
    path: KeyPath = ("tests", i, key) if key in test else ("tests", i, "name")
    ctx.error(exc.message, path, hint=exc.hint)


_BARE_WHERE = {
    "message": "only in a target's request.body (and a voice target's audio.send)",
    "session": "only in a target's configuration, its tests and the per-run hooks",
    "cursor": "only in a target's response.poll",
    "audio": "only in a voice target's audio.send",
    "digit": "only in a voice target's messages.dtmf",
}
_NAMESPACE_WHERE = {
    "args": "only in tool results (tools[].result, tool_results, fuzz_tools)",
    "captured": "only in tests, for names the test's capture list defines",
    "session": "only for names captured by the target's session.open or request.handshake",
    "sent": "only in response.poll, for names in request.capture",
    "listen": "only in a target with response.listen",
    "sip": "in sip targets and hooks (sip.inbound_uri in a hook needs sip.inbound_port or a port in sip.inbound_number)",
    "livekit": "only in hooks, of the server livekit: { serve: true } starts",
}
_ANY: None = None
SIP_NAMES = frozenset({"inbound_number", "inbound_uri"})
"""What ``{{sip.…}}`` offers (``config.sip_inbound``)."""
LIVEKIT_SERVED = frozenset({"url", "api_key", "api_secret"})
"""What hooks read of the run's LiveKit server (tamesu.yaml's ``livekit: { serve: true }``)."""


@dataclass(frozen=True)
class _Where:
    """The template names available at one place of a suite."""

    vars: frozenset[str]
    members: Mapping[str, frozenset[str] | None]
    """namespace -> the first segment of the names it offers there (None: any)."""
    bare: frozenset[str] = frozenset()
    place: str = ""

    def plus(self, *, bare: Iterable[str] = (), place: str = "", **members: frozenset[str] | None) -> _Where:
        return replace(
            self,
            bare=self.bare | frozenset(bare),
            members={**self.members, **members},
            place=place or self.place,
        )


def _keys(value: Any) -> frozenset[str]:
    return frozenset(value.keys()) if isinstance(value, dict) else frozenset()


def _get(value: Any, *keys: str) -> Any:
    for k in keys:
        value = value.get(k) if isinstance(value, dict) else None
    return value


def _check_templates(
    ctx: _Ctx,
    data: dict[str, Any],
    *,
    project_vars: set[str],
    secrets: set[str],
    case_vars: dict[int, set[str]],
) -> None:
    """``{{name}}`` must name something that exists where the template is rendered."""
    suite_vars = frozenset(project_vars) | _keys(data.get("vars"))
    red_vars = _keys(_get(data, "red_team", "vars"))
    test_vars = {i: _keys(t.get("vars")) | frozenset(case_vars.get(i, ())) for i, t in tests_of(data)}
    captures = {i: frozenset(c["name"] for c in t.get("capture") or [] if isinstance(c, dict) and "name" in c)
                for i, t in tests_of(data)}  # fmt: skip
    all_vars = suite_vars | red_vars | frozenset().union(*test_vars.values())
    all_captured = frozenset().union(*captures.values())
    targets = data.get("targets") or {}
    session_caps = {name: _session_captures(t) for name, t in targets.items()}
    base = _Where(
        vars=all_vars,
        members={
            "secrets": frozenset(secrets),
            "env": _ANY,
            "faker": _ANY,
            "remote": _keys(data.get("remote_agents")),
        },
        place="here",
    )
    anywhere = base.plus(captured=all_captured, session=frozenset().union(*session_caps.values()))
    for key, value in data.items():
        if key in ("secrets", "targets", "tests", "hooks"):
            continue
        _walk_templates(ctx, value, (key,), anywhere)
    for key, value in (data.get("hooks") or {}).items():
        where = base.plus(sip=SIP_NAMES)
        where = where.plus(bare=("session",)) if key.endswith("_each") else where
        where = where.plus(livekit=LIVEKIT_SERVED)
        where = where.plus(captured=all_captured) if key == "after_each" else where
        _walk_templates(ctx, value, ("hooks", key), where)
    for name, target in targets.items():
        where = base.plus(
            bare=("session",), captured=all_captured, session=session_caps[name], place=f"in target '{name}'"
        )
        if _get(target, "response", "listen") is not None:
            where = where.plus(listen=_ANY)
        kind = _get(target, "type")
        if isinstance(kind, str) and kind in target_kinds and "sip" in target_kinds.get(kind).project_blocks:
            where = where.plus(sip=SIP_NAMES)
        _walk_target(ctx, target, ("targets", name), where)
    for i, test in tests_of(data):
        target_caps = session_caps.get(test.get("target"), frozenset())
        where = replace(base, vars=suite_vars | test_vars[i]).plus(
            bare=("session",),
            captured=captures[i],
            session=target_caps,
            place=f"in test '{test.get('name', i)}'",
        )
        for key, value in test.items():
            if key == "name":
                _check_name_templates(ctx, value, ("tests", i, key), where.vars)
                continue
            if key == "cases" and isinstance(value, list):
                for j, case in enumerate(value):
                    if isinstance(case, dict) and "name" in case:
                        _check_name_templates(ctx, case["name"], ("tests", i, key, j, "name"), where.vars)
                        case = {k: v for k, v in case.items() if k != "name"}
                    _walk_templates(ctx, case, ("tests", i, key, j), where)
                continue
            sub = where.plus(args=_ANY) if key == "fuzz_tools" else where
            _walk_templates(ctx, value, ("tests", i, key), sub)


def _check_name_templates(ctx: _Ctx, value: Any, path: KeyPath, variables: frozenset[str]) -> None:
    """A test or case name renders ``{{vars.x}}`` and ``{{env.X}}`` only: it is shown everywhere
    (never a secret) and names the same test in every run (never a value of one run)."""
    if not isinstance(value, str) or "{{" not in value:
        return
    for name in dict.fromkeys(template_names(value)):
        ns, dot, member = name.partition(".")
        if (ns == "vars" and member in variables) or (ns == "env" and dot):
            continue
        if ns == "vars":
            hint = did_you_mean(member, variables) or "define it in vars (suite, test, case or tamesu.yaml)"
            ctx.error(f"unknown var '{member}' in {{{{{name}}}}}", path, hint=hint)
        else:
            ctx.error(
                f"{{{{{name}}}}} cannot render in a name",
                path,
                hint="test and case names take {{vars.x}} and {{env.X}}",
            )


def _session_captures(target: Any) -> frozenset[str]:
    names = set(_keys(_get(target, "session", "open", "capture")))
    for step in _get(target, "request", "handshake") or []:
        names.update(_keys(_get(step, "capture")))
    return frozenset(names)


def _walk_target(ctx: _Ctx, target: Any, path: KeyPath, where: _Where) -> None:
    if not isinstance(target, dict):
        return
    for key, value in target.items():
        at = (*path, key)
        if key == "request" and isinstance(value, dict):
            for sub, v in value.items():
                _walk_templates(ctx, v, (*at, sub), where.plus(bare=("message",)) if sub == "body" else where)
        elif key == "response" and isinstance(value, dict):
            for sub, v in value.items():
                w = where
                if sub == "poll":
                    w = where.plus(bare=("cursor",), sent=_keys(_get(target, "request", "capture")))
                _walk_templates(ctx, v, (*at, sub), w)
        elif key == "tool_results":
            _walk_templates(ctx, value, at, where.plus(args=_ANY))
        elif key == "tools" and isinstance(value, list):
            for k, tool in enumerate(value):
                for sub, v in tool.items() if isinstance(tool, dict) else ():
                    _walk_templates(
                        ctx, v, (*at, k, sub), where.plus(args=_ANY) if sub == "result" else where
                    )
        elif key == "audio":
            _walk_templates(ctx, value, at, where.plus(bare=("audio", "message")))
        elif key == "messages" and isinstance(value, dict):
            for sub, v in value.items():
                _walk_templates(ctx, v, (*at, sub), where.plus(bare=("digit",)) if sub == "dtmf" else where)
        else:
            _walk_templates(ctx, value, at, where)


def _walk_templates(ctx: _Ctx, value: Any, path: KeyPath, where: _Where) -> None:
    if isinstance(value, str):
        if "{{" in value:
            for name in dict.fromkeys(template_names(value)):
                problem = _template_problem(name, where)
                if problem:
                    ctx.error(problem[0], path, hint=problem[1])
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk_templates(ctx, v, (*path, k), where)
    elif isinstance(value, list):
        for k, v in enumerate(value):
            _walk_templates(ctx, v, (*path, k), where)


def _template_problem(name: str, where: _Where) -> tuple[str, str] | None:
    """(message, hint) when ``{{name}}`` is not available at ``where``; None when it is."""
    if name in DYNAMIC_NAMES or name in where.bare:
        return None
    ns, dot, member = name.partition(".")
    if not dot:
        if name in _BARE_WHERE:
            return f"{{{{{name}}}}} is not available {where.place}", _BARE_WHERE[name]
        known = [*DYNAMIC_NAMES, *where.bare, *(f"{n}.x" for n in ("vars", "secrets", "env", "faker"))]
        return f"unknown template name {{{{{name}}}}}", did_you_mean(name, known)
    if ns == "vars":
        if member in where.vars:
            return None
        hint = did_you_mean(member, where.vars) or "define it in vars (suite, test, case or tamesu.yaml)"
        return f"unknown var '{member}' in {{{{{name}}}}}", hint
    if ns not in where.members:
        if ns in _NAMESPACE_WHERE:
            return f"{{{{{name}}}}} is not available {where.place}", _NAMESPACE_WHERE[ns]
        return f"unknown template name {{{{{name}}}}}", did_you_mean(ns, [*where.members, "vars"])
    allowed = where.members[ns]
    first = member.split(".", 1)[0]
    if allowed is None or first in allowed:
        return None
    words = {
        "secrets": ("secret '{m}' is not declared", "declare it under secrets (suite or tamesu.yaml)"),
        "captured": ("no capture named '{m}' {p}", "add it to the test's capture list"),
        "session": ("no session value named '{m}' {p}", _NAMESPACE_WHERE["session"]),
        "sent": ("no request.capture named '{m}'", _NAMESPACE_WHERE["sent"]),
        "remote": ("unknown remote agent '{m}'", "declare it under remote_agents"),
    }
    message, fallback = words.get(ns, ("{{{{" + name + "}}}} is not available {p}", ""))
    return message.format(m=first, p=where.place), did_you_mean(first, allowed) or fallback
