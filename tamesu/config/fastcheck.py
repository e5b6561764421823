"""``tamesu validate`` without the models: prove every file valid, or step aside.

Building the pydantic models costs several times Python's own start-up, which is most of what
``tamesu validate`` on a valid suite would spend. So validate first tries this path: each file
is parsed with positions as usual, its plain data is checked by the validator generated from the
JSON Schema (``_fastschema``, which answers True only where the models accept the data), and
then the semantic checks run on that same data, exactly as they do after the models.

The only answer this path gives is "all valid" (with warnings for what this environment cannot run,
which the models' path reports the same way). At the first sign of any problem (a schema
refusal, a check's error, an unreadable file, even a bug here) it returns None, and validate
runs the models, which report every error with their own messages and positions. A file the
fast path refuses but the models accept is merely slower, never wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tamesu.errors import ConfigError, Unrunnable

__all__ = ["FastResult", "validate_fast"]


@dataclass(frozen=True)
class FastResult:
    """What ``tamesu validate`` prints when every file is valid."""

    suites: int
    tests: int
    warnings: list[ConfigError] = field(default_factory=list)
    """What this environment cannot run (``Unrunnable``): a model, a variable, an extra, an adapter."""


class _Defer(Exception):
    """Something the fast path cannot vouch for: the models must judge."""


def validate_fast(paths: Iterable[Path | str] = (".",)) -> FastResult | None:
    """Counts of suites and tests when every suite under ``paths`` (and its tamesu.yaml) is valid.

    None when anything is or may be wrong: then ``validate_paths`` must run to report it.
    """
    try:
        return _validate(list(paths) or ["."])
    except Exception:
        return None


def _validate(paths: list[Path | str]) -> FastResult:
    from tamesu.config._fastschema import valid_project, valid_suite
    from tamesu.config.checks import check_document
    from tamesu.config.load import display_path, find_project_file, find_suites, read_doc
    from tamesu.config.valuechecks import check_values

    projects: dict[Path, tuple[dict[str, Any], Path]] = {}

    def project_at(start: Path) -> tuple[dict[str, Any], Path] | None:
        path = find_project_file(start)
        if path is None:
            return None
        if path not in projects:
            doc = read_doc(path, display_path(path))
            if (
                doc.errors
                or not isinstance(doc.data, dict)
                or not valid_project(doc.data)
                or check_values(doc)
            ):
                raise _Defer(path)
            projects[path] = (doc.data, path.parent)
        return projects[path]

    files = find_suites(paths, project_at=project_at)
    if not files:
        raise _Defer("no suites")
    tests = 0
    warnings: list[ConfigError] = []
    for file in files:
        doc = read_doc(file, display_path(file))
        data = doc.data
        if doc.errors or not isinstance(data, dict) or not valid_suite(data):
            raise _Defer(file)
        suite_dir = file.resolve().parent
        found = project_at(suite_dir)
        problems = check_document(
            doc, suite_dir, project=found[0] if found else None, project_dir=found[1] if found else None
        )
        if any(not isinstance(e, Unrunnable) for e in problems):
            raise _Defer(file)
        warnings.extend(problems)
        tests += len(data["tests"])
    return FastResult(suites=len(files), tests=tests, warnings=warnings)
