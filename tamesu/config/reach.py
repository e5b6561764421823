"""Which tests each part of a suite reaches, and what each test uses: read from the suite as written.

``Reach`` tells which tests a problem at a key path reaches (a missing secret fails only the tests
that render it); the machine checks (``tamesu.environment``) and the runner (to resolve only the
secrets its tests use) ask it. ``unset_variables`` finds the ``${VAR}`` this process lacks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tamesu.config.kinds import target_kinds
from tamesu.config.yamlload import KeyPath
from tamesu.templates import template_names

__all__ = ["Reach", "audio_tests", "get_in", "mapping", "strings", "unset_variables"]

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SHARED = ("hooks", "defaults")
"""Parts of a suite (and of tamesu.yaml) that every test runs."""


def strings(value: Any, path: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from strings(v, (*path, k))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield from strings(v, (*path, k))


def _names(value: Any) -> set[str]:
    """Every ``{{name}}`` written anywhere in ``value``."""
    return {n for _, text in strings(value, ()) if "{{" in text for n in template_names(text)}


def get_in(value: Any, *keys: str) -> Any:
    for k in keys:
        value = value.get(k) if isinstance(value, Mapping) else None
    return value


def unset_variables(data: Any, env: Mapping[str, str] | None = None) -> Iterator[tuple[KeyPath, str]]:
    """(key path, NAME) of every ``${NAME}`` without a default whose variable is not set.

    The YAML loader leaves such a string as written, so this finds them in the loaded data; secret
    refs are skipped (their ``${VAR}`` is expanded against vars when the secret is resolved).
    """
    environ = os.environ if env is None else env
    for path, text in strings(data, ()):
        if "${" in text and path[:1] != ("secrets",):
            for m in _ENV.finditer(text):
                if m.group(2) is None and m.group(1) not in environ:
                    yield path, m.group(1)


class Reach:
    """Which tests each part of a suite (and of its tamesu.yaml) reaches, and what each test uses."""

    def __init__(self, suite: Mapping[str, Any], project: Mapping[str, Any] | None = None) -> None:
        from tamesu.config.model_needs import assertion_lists, model_needs

        self.suite, self.project = suite, project or {}
        raw_tests = suite.get("tests")
        self.tests = [(i, t) for i, t in enumerate(raw_tests or []) if isinstance(t, Mapping)]
        targets = suite.get("targets")
        self.targets: Mapping[str, Any] = targets if isinstance(targets, Mapping) else {}
        self.by_target: dict[str, set[int]] = {}
        for i, test in self.tests:
            for name in (test.get("target"), get_in(test, "counterpart", "target")):
                if isinstance(name, str):
                    self.by_target.setdefault(name, set()).add(i)
        self.by_pack: dict[str, set[int] | None] = {}
        for path, items in assertion_lists(dict(suite)):
            reached = {"tests": self.tests_at(path[:2]), "defaults": None}.get(str(path[0]), ())
            for item in items:
                pack = item.get("pack") if isinstance(item, Mapping) else None
                if isinstance(pack, str):
                    self.by_pack[pack] = _union(self.by_pack.get(pack, set()), reached)
        self.model_tests: set[int] | None = {i for i, t in self.tests if self._target_type(t) == "model"}
        for need in model_needs(dict(suite)):
            self.model_tests = _union(self.model_tests, self.tests_at(need.path))
        packs = mapping(suite.get("packs"))
        model_config = _names(
            [suite.get("models"), self.project.get("models"), self.project.get("providers")]
        )
        self.shared = _names([suite.get(k) for k in _SHARED] + [self.project.get(k) for k in _SHARED])
        self.uses: dict[int, set[str]] = {}
        for i, test in self.tests:
            parts: list[Any] = [test, *(self.targets.get(n) for n in _test_targets(test))]
            parts += [packs.get(p) for p in _names_of_packs(test)]
            self.uses[i] = _names(parts) | (model_config if self._needs_model(i) else set())

    def _target_type(self, test: Mapping[str, Any]) -> Any:
        return get_in(self.targets.get(str(test.get("target"))), "type")

    def _needs_model(self, index: int) -> bool:
        return self.model_tests is None or index in self.model_tests

    def tests_using(self, name: str) -> tuple[int, ...] | None:
        """The tests whose parts render ``{{name}}``; None when a part every test runs does."""
        if name in self.shared:
            return None
        return tuple(i for i, used in self.uses.items() if name in used)

    def names_used(self, tests: Iterable[int]) -> set[str]:
        """Every ``{{name}}`` the given tests render, the parts every test runs included."""
        out = set(self.shared)
        for i in tests:
            out |= self.uses.get(i, set())
        return out

    def tests_at(self, path: KeyPath, *, in_project: bool = False) -> tuple[int, ...] | None:
        """The tests a problem at ``path`` reaches; None: every test of the suite."""
        head = path[0] if path else ""
        name = path[1] if len(path) > 1 else None
        if in_project and head in ("vars", "secrets") and name in (self.suite.get(head) or {}):
            return ()
        if head == "tests" and isinstance(name, int):
            return (name,)
        if head == "targets" and isinstance(name, str):
            return tuple(sorted(self.by_target.get(name, ())))
        if head == "packs" and isinstance(name, str):
            reached = self.by_pack.get(name, set())
            return None if reached is None else tuple(sorted(reached))
        if head in ("vars", "secrets") and isinstance(name, str):
            return self.tests_using(f"{head}.{name}")
        if head in ("models", "providers"):
            return None if self.model_tests is None else tuple(sorted(self.model_tests))
        if head == "red_team":
            return ()
        if in_project and isinstance(head, str) and head in _read_by_kinds():
            return tuple(i for i, t in self.tests if head in _blocks_of(self._target_type(t)))
        return None


def _blocks_of(kind: Any) -> tuple[str, ...]:
    """The tamesu.yaml blocks a target type reads (``TargetKind.project_blocks``)."""
    return target_kinds.get(kind).project_blocks if isinstance(kind, str) and kind in target_kinds else ()


def _read_by_kinds() -> set[str]:
    """Every tamesu.yaml block some target type reads: a problem there reaches only their tests."""
    return {block for name in target_kinds.names() for block in target_kinds.get(name).project_blocks}


def _union(a: set[int] | None, b: Iterable[int] | None) -> set[int] | None:
    return None if a is None or b is None else a | set(b)


def _test_targets(test: Mapping[str, Any]) -> list[str]:
    names = [test.get("target"), get_in(test, "counterpart", "target")]
    return [n for n in names if isinstance(n, str)]


def _names_of_packs(test: Mapping[str, Any]) -> list[str]:
    items = test.get("assert")
    if not isinstance(items, list):
        return []
    return [i["pack"] for i in items if isinstance(i, Mapping) and isinstance(i.get("pack"), str)]


def mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def audio_tests(data: Mapping[str, Any]) -> Iterator[tuple[int, Mapping[str, Any], Mapping[str, Any]]]:
    """(index, test, target) of every test that places a call with audio."""
    targets = mapping(data.get("targets"))
    for i, test in enumerate(data.get("tests") or []):
        target = targets.get(str(test.get("target"))) if isinstance(test, Mapping) else None
        if not isinstance(target, Mapping):
            continue
        if target_kinds.carries_audio(target.get("type"), test.get("mode") or target.get("mode")):
            yield i, test, target
