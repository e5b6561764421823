"""Loading suites and tamesu.yaml: parse with positions, validate, check, report every error at once.

``load_suite`` is what every command uses; ``validate`` is the public function behind
``tamesu validate``. Nothing here raises anything but ``ConfigErrors`` for bad input: an unexpected
failure while loading becomes one ConfigError that names the file, never a traceback.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from tamesu.config.yamlload import PROJECT_FILE, Positions, YamlDoc, display_path, read_doc
from tamesu.errors import ConfigError, ConfigErrors, Unrunnable

if TYPE_CHECKING:
    from tamesu.config import Project, Suite
    from tamesu.config.checks import SuiteCheck

__all__ = [
    "PROJECT_FILE",
    "LoadedSuite",
    "ValidationReport",
    "display_path",
    "find_project_file",
    "find_suites",
    "load_project",
    "load_suite",
    "read_doc",
    "validate",
    "validate_paths",
]

_SUITE_KEY = re.compile(r"^suite\s*:", re.MULTILINE)
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache", "tamesu-runs"}

M = TypeVar("M")


@dataclass
class LoadedSuite:
    """A validated suite with where it came from and the project it was checked against."""

    suite: Suite
    path: Path
    dir: Path
    project: Project | None = None
    project_dir: Path | None = None
    positions: Positions = field(default_factory=Positions)
    """Where each key path of the suite file is written, for errors found later (at run time)."""
    file: str = ""
    """The suite's name in messages: relative to the working directory when it is below it."""
    unrunnable: list[Unrunnable] = field(default_factory=list)
    """What this environment cannot run (a model, a variable, an extra...): the tests it reaches are
    reported as errors, and not run."""

    def where(self, *path: str | int) -> tuple[str, int, int]:
        """(file, line, column) of a key path, for errors that surface after loading."""
        line, col = self.positions.value(path)
        return self.file or str(self.path), line, col


@dataclass
class ValidationReport:
    """What ``tamesu validate`` prints: the suites that loaded, and every error found."""

    suites: list[LoadedSuite] = field(default_factory=list)
    errors: list[ConfigError] = field(default_factory=list)
    warnings: list[Unrunnable] = field(default_factory=list)
    """What this environment cannot run: valid, but ``tamesu run`` reports the tests it reaches as errors."""

    @property
    def tests(self) -> int:
        """The suites' tests and the attack tests their ``red_team`` blocks add (as ``tamesu list`` shows)."""
        from tamesu.config.attacks import attack_count

        return sum(len(s.suite.tests) + attack_count(s.suite) for s in self.suites)


def _validate_model(model: type[M], doc: YamlDoc, what: str) -> tuple[M | None, list[ConfigError]]:
    """``model.model_validate`` and every error located in the file: (the model, []) or (None, errors).

    Data that is not a mapping at all raises: nothing else can be said about such a file.
    """
    from pydantic import ValidationError

    from tamesu.config.errors_map import validation_errors

    if not isinstance(doc.data, dict):
        found = "an empty file" if doc.data is None else f"a {type(doc.data).__name__}"
        raise ConfigErrors(
            [ConfigError(f"{what} must be a mapping of keys, found {found}", file=doc.file, line=1, column=1)]
        )
    try:
        return model.model_validate(doc.data), []  # type: ignore[attr-defined]
    except ValidationError as exc:
        return None, _unset_first(validation_errors(exc, doc, model), doc)


def _all_problems(
    doc: YamlDoc, schema: list[ConfigError], semantic: Callable[[], list[ConfigError]]
) -> list[ConfigError]:
    """The file's YAML problems, the models' errors and the checks' errors, in one sorted list.

    When the models refused the data the checks still run on it (they read plain data and step
    over what they do not understand); a check's error inside a part the models already refused
    says nothing new and is left out, and a check that trips over such data is skipped.
    """
    errors = [*doc.errors, *schema]
    try:
        found = semantic()
    except Exception:
        if not errors:
            raise
        found = []
    refused = [e.path for e in errors if e.path]
    errors.extend(e for e in found if not any(_within(e.path, p) for p in refused))
    return sorted(errors, key=lambda e: (e.line or 0, e.column or 0, e.path))


def _within(path: str, outer: str) -> bool:
    return path == outer or path.startswith((f"{outer}.", f"{outer}["))


def _unset_first(errors: list[ConfigError], doc: YamlDoc) -> list[ConfigError]:
    """A value refused only because its ``${VAR}`` is not set here says so (then the file cannot load)."""
    from tamesu.config.reach import unset_variables
    from tamesu.config.yamlload import format_path

    unset = {format_path(path): name for path, name in unset_variables(doc.data)}
    if not unset:
        return errors
    return [
        ConfigError(f"environment variable {unset[e.path]} is not set", file=e.file, line=e.line,
                    column=e.column, path=e.path, hint=f"set it, or give a default: ${{{unset[e.path]}:-value}}")
        if e.path in unset else e
        for e in errors
    ]  # fmt: skip


def _guarded(file: str, load: Callable[[], M]) -> M:
    """Run a load step; anything but ConfigErrors becomes one ConfigError naming the file."""
    try:
        return load()
    except ConfigErrors:
        raise
    except ConfigError as exc:
        raise ConfigErrors([exc]) from None
    except RecursionError:
        raise ConfigErrors([ConfigError("the file is nested too deeply to load", file=file)]) from None
    except Exception as exc:
        raise ConfigErrors(
            [
                ConfigError(
                    f"could not load the file: {type(exc).__name__}: {exc}",
                    file=file,
                    hint="this is a bug in tamesu; please report it with the file",
                )
            ]
        ) from None


_project_cache: dict[tuple[str, int, int], Project] = {}


def find_project_file(start: Path | str) -> Path | None:
    """tamesu.yaml in ``start`` (a folder or a file's folder) or the nearest parent that has one."""
    here = Path(start).resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def load_project(start: Path | str) -> tuple[Project, Path] | None:
    """The project (tamesu.yaml) that ``start`` belongs to and its folder; None when there is none."""
    path = find_project_file(start)
    if path is None:
        return None
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _project_cache:
        file = display_path(path)

        def load() -> Project:
            from tamesu.config import Project
            from tamesu.config.valuechecks import check_values

            doc = read_doc(path, file)
            project, schema = _validate_model(Project, doc, "tamesu.yaml")
            errors = _all_problems(doc, schema, lambda: check_values(doc))
            if errors or project is None:
                raise ConfigErrors(errors)
            return project

        _project_cache[key] = _guarded(file, load)
    return _project_cache[key], path.parent


def _resolve_project(
    project: tuple[Project, Path] | Project | Literal[False] | None, suite_dir: Path
) -> tuple[Project | None, Path | None]:
    if project is False:
        return None, None
    if project is None:
        found = load_project(suite_dir)
        return found if found else (None, None)
    if isinstance(project, tuple):
        return project[0], project[1]
    return project, suite_dir


def load_suite(
    path: Path | str,
    *,
    project: tuple[Project, Path] | Project | Literal[False] | None = None,
    update_golden: bool = False,
    checks: Sequence[SuiteCheck] = (),
) -> LoadedSuite:
    """Load, validate and check one suite; raises ConfigErrors with every problem found.

    ``project`` is what ``load_project`` returned, a Project (its folder taken to be the suite's),
    None to look for tamesu.yaml from the suite's folder up, or False for no project.
    ``update_golden`` accepts golden files that do not exist yet (the run is about to write them).
    ``checks`` are added to the contract's (``tamesu.environment.MACHINE_CHECKS`` to ask whether this
    machine can run the suite); their ``Unrunnable`` problems land in ``LoadedSuite.unrunnable``.
    """
    path = Path(path)
    file = display_path(path)
    suite_dir = path.resolve().parent
    proj, proj_dir = _resolve_project(project, suite_dir)

    def load() -> LoadedSuite:
        from tamesu.config import Suite
        from tamesu.config.checks import check_document

        doc = read_doc(path, file)
        suite, schema = _validate_model(Suite, doc, "a suite")
        project_data = None if proj is None else proj.model_dump(by_alias=True, exclude_unset=True)
        errors = _all_problems(
            doc,
            schema,
            lambda: check_document(
                doc,
                suite_dir,
                project=project_data,
                update_golden=update_golden,
                project_dir=proj_dir,
                checks=checks,
            ),
        )
        hard = [e for e in errors if not isinstance(e, Unrunnable)]
        if hard or suite is None:
            raise ConfigErrors(hard)
        loaded = LoadedSuite(suite, path, suite_dir, proj, proj_dir, doc.positions, file)
        loaded.unrunnable = [e for e in errors if isinstance(e, Unrunnable)]
        return loaded

    return _guarded(file, load)


def _has_suite_key(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return bool(_SUITE_KEY.search(f.read(65536)))
    except OSError:
        return False


def _walk_yaml(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")) and name != PROJECT_FILE:
                yield Path(root) / name


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A ``suites`` glob as a regex on paths relative to the project: ``**/`` spans folders.

    Matching while walking (rather than ``Path.glob``) lets the walk skip .venv, node_modules and
    hidden folders, which a ``**`` glob would otherwise search through.
    """
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def find_suites(paths: Iterable[Path | str]) -> list[Path]:
    """The suite files named by ``paths``: files as given; folders through the project's ``suites``
    globs, else every ``*.yaml`` / ``*.yml`` below them with a top-level ``suite:`` key."""
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.is_dir():
            out.append(p)
            continue
        globs = _project_globs(p)
        if globs is not None:
            root, patterns = globs
            matchers = [_glob_regex(g) for g in patterns]
            out.extend(
                f
                for f in _walk_yaml(root)
                if any(m.fullmatch(f.relative_to(root).as_posix()) for m in matchers)
            )
        else:
            out.extend(f for f in _walk_yaml(p) if _has_suite_key(f))
    seen: set[Path] = set()
    unique = []
    for f in out:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _project_globs(folder: Path) -> tuple[Path, list[str]] | None:
    """The project's ``suites`` globs when ``folder`` is the project's folder and it sets them."""
    if not (folder / PROJECT_FILE).is_file():
        return None
    found = load_project(folder)
    if not found:
        return None
    patterns = found[0].suites
    if not patterns:
        return None
    return found[1], [patterns] if isinstance(patterns, str) else list(patterns)


def validate_paths(
    paths: Iterable[Path | str] = (".",), *, update_golden: bool = False, checks: Sequence[SuiteCheck] = ()
) -> ValidationReport:
    """Load every suite under ``paths`` and gather every error (project files included, once each);
    ``checks`` as for ``load_suite``."""
    report = ValidationReport()
    paths = list(paths) or ["."]
    seen_errors: set[str] = set()

    def add(errors: Iterable[ConfigError]) -> None:
        for e in errors:
            if str(e) not in seen_errors:
                seen_errors.add(str(e))
                report.errors.append(e)

    try:
        files = find_suites(paths)
    except ConfigErrors as exc:
        add(exc.errors)
        return report
    if not files:
        add([ConfigError("no suites found (a suite is a YAML file with a top-level suite: key)", file=str(p))
             for p in paths])  # fmt: skip
    for f in files:
        try:
            loaded = load_suite(f, update_golden=update_golden, checks=checks)
        except ConfigErrors as exc:
            add(exc.errors)
        else:
            report.suites.append(loaded)
            report.warnings.extend(loaded.unrunnable)
    return report


def validate(
    paths: Iterable[Path | str] | Path | str = (".",), *, checks: Sequence[SuiteCheck] = ()
) -> list[ConfigError]:
    """Every problem in the suites (files or folders) named by ``paths``; an empty list when all is well."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    return validate_paths(paths, checks=checks).errors
