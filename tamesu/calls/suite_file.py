"""Imported tests written out: a new suite with a target stub, or appended to an existing suite.

Appending edits the text, not a re-dump of the parsed YAML, so the suite keeps its comments and
layout: the new items go at the end of its ``tests:`` block, indented like the ones there. Either
way the result is validated before it replaces anything, so a failed import leaves the suite as it was.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tamesu.errors import UsageError

__all__ = ["append_tests", "new_suite_text", "suite_target_type", "write_suite"]

_TOP_KEY = re.compile(r"^[A-Za-z_\"'][^:]*:")
_TESTS = re.compile(r"^tests:\s*(#.*)?$")


def _dump(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


def new_suite_text(name: str, target: str, tests: list[dict[str, Any]], *, judge: bool) -> str:
    """A suite of the imported tests with a voice target stub to fill in."""
    head = [
        "# Imported by `tamesu import calls`: one test per recorded call. Point the target at the",
        "# agent under test (any audio target type works; a text target gets the caller's words).",
        "# similar_to runs offline with models.embedder local/minilm"
        + ("; the judge needs models.judge." if judge else "."),
    ]
    models: dict[str, str] = {"embedder": "local/minilm"}
    body: dict[str, Any] = {
        "suite": name,
        "models": models,
        "targets": {target: {"type": "voice", "url": "${VOICE_AGENT_URL:-ws://127.0.0.1:8766}/voice"}},
        "tests": tests,
    }
    return "\n".join(head) + "\n" + _dump(body)


def append_tests(text: str, tests: list[dict[str, Any]]) -> str:
    """``text`` (a suite) with ``tests`` added at the end of its block-style ``tests:`` list."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _TESTS.match(line)), None)
    if start is None:
        raise UsageError("the suite has no block-style tests: list to add the imported tests to")
    end = len(lines)
    indent = None
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if indent is None and line.lstrip().startswith("- "):
            indent = len(line) - len(line.lstrip())
        if _TOP_KEY.match(line):
            end = i
            break
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    pad = " " * (indent or 2)
    added = "".join(pad + line if line.strip() else line for line in _dump(tests).splitlines(keepends=True))
    before = "".join(lines[:end])
    if before and not before.endswith("\n"):
        before += "\n"
    return before + added + "".join(lines[end:])


def suite_target_type(text: str, target: str, *, file: str) -> tuple[str, set[str]]:
    """The type of ``target`` in a suite's text, and the names of its tests; a suite without that
    target cannot take the tests."""
    data = yaml.safe_load(text) or {}
    targets = data.get("targets") if isinstance(data, dict) else None
    if not isinstance(targets, dict) or target not in targets:
        known = ", ".join(sorted(targets)) if isinstance(targets, dict) else "none"
        raise UsageError(f"{file} defines no target {target!r} (targets: {known})")
    entry = targets[target]
    tests = data.get("tests")
    names = {str(t.get("name")) for t in tests if isinstance(t, dict)} if isinstance(tests, list) else set()
    return (str(entry.get("type", "")) if isinstance(entry, dict) else ""), names


def write_suite(path: Path, text: str) -> None:
    """Validate ``text`` as the suite at ``path`` and only then replace the file."""
    from tamesu.config.loader import load_suite
    from tamesu.environment import MACHINE_CHECKS

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".yaml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        load_suite(name, checks=MACHINE_CHECKS)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
