"""Strings of a suite or tamesu.yaml that must mean something before anything runs.

The models check a regular expression, a JSONPath or a metric name only as a string; a pattern
that does not compile or a name that does not exist would otherwise surface in the middle of a
run, once per run, as an infrastructure error. These checks read the file's plain data (so both
of ``tamesu validate``'s paths run them) and name each problem at its ``file:line:col``. Strings
with ``{{templates}}`` are left to the run: only the rendered text can be compiled.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from tamesu.config.model_needs import assertion_lists
from tamesu.config.yamlload import KeyPath, YamlDoc, format_path
from tamesu.errors import ConfigError

__all__ = ["check_values"]

_REGEX = "regex"
_JSONPATH = "jsonpath"

_ASSERTION_FIELDS: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "regex": (((), _REGEX),),
    "not_regex": (((), _REGEX),),
    "captured": ((("matches",), _REGEX),),
    "transferred_to": ((("matches",), _REGEX),),
    "delegated_to": ((("regex",), _REGEX),),
    "handoff": ((("to",), _REGEX),),
    "http": ((("regex",), _REGEX), (("json_path", "path"), _JSONPATH)),
    "command": ((("regex",), _REGEX),),
    "json_path": ((("path",), _JSONPATH),),
    "grounded": ((("context", "json_path"), _JSONPATH),),
}
"""Assertion kind -> (where in its value, what it must be) of each pattern it holds."""

_TARGET_FIELDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("handoff", "regex"), _REGEX),
    (("handoff", "json_path"), _JSONPATH),
    (("response", "text"), _JSONPATH),
    (("response", "tool_calls"), _JSONPATH),
    (("response", "done"), _JSONPATH),
    (("response", "turn_done"), _JSONPATH),
    (("response", "poll", "cursor"), _JSONPATH),
    (("response", "listen", "session"), _JSONPATH),
    (("audio", "receive"), _JSONPATH),
    (("messages", "transcript"), _JSONPATH),
    (("messages", "done"), _JSONPATH),
    (("messages", "interrupted"), _JSONPATH),
    (("messages", "tool_calls"), _JSONPATH),
)
"""Patterns a target holds, by key path inside the target."""

_TARGET_CAPTURES: tuple[tuple[str, ...], ...] = (("request", "capture"), ("session", "open", "capture"))
"""Mappings of a target whose values are JSONPaths."""


class _Report:
    def __init__(self, doc: YamlDoc) -> None:
        self.doc = doc
        self.errors: list[ConfigError] = []

    def error(self, message: str, path: KeyPath, *, hint: str = "", key: bool = False) -> None:
        line, col = self.doc.positions.key(path) if key else self.doc.positions.value(path)
        self.errors.append(
            ConfigError(message, file=self.doc.file, line=line, column=col, path=format_path(path), hint=hint)
        )

    def pattern(self, value: Any, path: KeyPath, kind: str) -> None:
        if not isinstance(value, str) or "{{" in value:
            return
        problem = _regex_problem(value) if kind == _REGEX else _jsonpath_problem(value)
        if problem:
            what = "regular expression" if kind == _REGEX else "JSONPath"
            self.error(f"invalid {what} {value!r}: {problem}", path)


def check_values(doc: YamlDoc) -> list[ConfigError]:
    """Every regular expression, JSONPath, metric name and ``captured`` name of a suite (or of
    tamesu.yaml, which holds only ``defaults``) that cannot work."""
    report = _Report(doc)
    data = doc.data if isinstance(doc.data, dict) else {}
    captures = _captures(data)
    tests = dict(_tests(data))
    everywhere = _Captures(frozenset().union(*captures.values()), "in any test")
    for path, items in assertion_lists(data):
        index = path[1] if path[0] == "tests" and isinstance(path[1], int) else None
        where = everywhere
        if index is not None:
            where = _Captures(captures[index], f"in test '{tests[index].get('name', index)}'")
        for j, item in enumerate(items):
            for kind, spec in item.items() if isinstance(item, dict) else ():
                _check_assertion(report, kind, spec, (*path, j, kind), where)
    for name, _ in _items(_get(data, "defaults", "slo")):
        _check_metric(report, name, ("defaults", "slo", name), key=True)
    for i, test in _tests(data):
        for j, cap in enumerate(test.get("capture") or []):
            if isinstance(cap, dict):
                report.pattern(cap.get("regex"), ("tests", i, "capture", j, "regex"), _REGEX)
                report.pattern(cap.get("json_path"), ("tests", i, "capture", j, "json_path"), _JSONPATH)
    for name, agent in _items(data.get("remote_agents")):
        for j, reply in enumerate(_get(agent, "replies") or []):
            report.pattern(_get(reply, "when"), ("remote_agents", name, "replies", j, "when"), _REGEX)
    for name, target in _items(data.get("targets")):
        for keys, kind in _TARGET_FIELDS:
            report.pattern(_get(target, *keys), ("targets", name, *keys), kind)
        for keys in _TARGET_CAPTURES:
            for key, path in _items(_get(target, *keys)):
                report.pattern(path, ("targets", name, *keys, key), _JSONPATH)
        for k, step in enumerate(_get(target, "request", "handshake") or []):
            at = ("targets", name, "request", "handshake", k)
            report.pattern(_get(step, "wait"), (*at, "wait"), _JSONPATH)
            for key, path in _items(_get(step, "capture")):
                report.pattern(path, (*at, "capture", key), _JSONPATH)
    return report.errors


class _Captures(NamedTuple):
    """The capture names an assertion list may name, and how a message says where."""

    names: frozenset[str]
    place: str


def _check_assertion(report: _Report, kind: str, spec: Any, path: KeyPath, captures: _Captures) -> None:
    for keys, what in _ASSERTION_FIELDS.get(kind, ()):
        report.pattern(_get(spec, *keys) if keys else spec, (*path, *keys), what)
    if kind == "metric":
        _check_metric(report, _get(spec, "name"), (*path, "name"))
    elif kind == "captured":
        name = _get(spec, "name")
        if isinstance(name, str) and name not in captures.names and "{{" not in name:
            from tamesu.config.errors_map import did_you_mean

            hint = did_you_mean(name, captures.names) or "add it to the test's capture list"
            report.error(f"no capture named '{name}' {captures.place}", (*path, "name"), hint=hint)


def _check_metric(report: _Report, name: Any, path: KeyPath, *, key: bool = False) -> None:
    if not isinstance(name, str) or "{{" in name:
        return
    from tamesu.metrics import ALIASES, METRICS, resolve_metric

    if resolve_metric(name) is None:
        from tamesu.config.errors_map import did_you_mean

        hint = did_you_mean(name, [*METRICS, *ALIASES]) or "the README's Metrics table lists them"
        report.error(f"unknown metric '{name}'", path, hint=hint, key=key)


def _regex_problem(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        return str(exc)
    except (OverflowError, RecursionError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return ""


def _jsonpath_problem(path: str) -> str:
    from tamesu.jsonpath import JSONPathError, validate

    try:
        validate(path)
    except JSONPathError as exc:
        return str(exc).split(": ", 1)[-1]
    return ""


def _captures(data: dict[str, Any]) -> dict[int, frozenset[str]]:
    return {
        i: frozenset(
            c["name"]
            for c in t.get("capture") or []
            if isinstance(c, dict) and isinstance(c.get("name"), str)
        )
        for i, t in _tests(data)
    }


def _tests(data: Mapping[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    tests = data.get("tests")
    for i, test in enumerate(tests if isinstance(tests, list) else []):
        if isinstance(test, dict):
            yield i, test


def _items(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        yield from value.items()


def _get(value: Any, *keys: str) -> Any:
    for k in keys:
        value = value.get(k) if isinstance(value, dict) else None
    return value
