"""What ``tamesu run``, ``tamesu load`` and a submitted job do before the first run starts.

Each loads the suites, plans the runs and makes the model routers the same way, through these
functions, so a call under load is the same test a plain run would run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.errors import ConfigError, ConfigErrors, NoTestSelected

if TYPE_CHECKING:
    from tamesu.config.loader import LoadedSuite
    from tamesu.models.setup import RouterFactory
    from tamesu.run_spec import RunSpec
    from tamesu.runner.invocation import RunOptions
    from tamesu.runner.suite_setup import SuiteSetup

__all__ = ["load_suites", "needs_speech", "nothing_selected", "plan_runs", "router_factory"]


def load_suites(paths: Sequence[str | Path], opts: RunOptions) -> list[LoadedSuite]:
    """The suites at ``paths``, validated; ``ConfigErrors`` (exit 2) before anything runs."""
    from tamesu.config.loader import validate_paths
    from tamesu.environment import MACHINE_CHECKS

    report = validate_paths(paths, update_golden=opts.update_golden, checks=MACHINE_CHECKS)
    if report.errors:
        raise ConfigErrors(report.errors)
    return report.suites


def plan_runs(loaded: Sequence[LoadedSuite], opts: RunOptions) -> list[RunSpec]:
    """Every run the selection asks for (``NoTestSelected`` when none), with the timeout and seed
    overrides applied."""
    from tamesu.runner.plan import plan

    specs: list[RunSpec] = []
    errors: list[ConfigError] = []
    for suite in loaded:
        try:
            specs.extend(
                plan(
                    suite,
                    tags=opts.tags,
                    exclude_tags=opts.exclude_tags,
                    filter=opts.filter,
                    today=opts.today,
                    repeat_override=opts.repeat,
                    strict=opts.strict,
                )
            )
        except ConfigErrors as exc:
            errors.extend(exc.errors)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigErrors(errors)
    if opts.grid:
        from tamesu.runner.grid import expand_grid, parse_grid

        specs = expand_grid(specs, parse_grid(opts.grid))
    if opts.only is not None:
        wanted = set(opts.only)
        specs = [s for s in specs if s.run_id in wanted]
    if not specs:
        raise NoTestSelected(nothing_selected(opts))
    changes: dict[str, Any] = {}
    if opts.timeout is not None:
        changes["timeout"] = float(opts.timeout)
    if opts.seed is not None:
        changes["seed"] = opts.seed
    if opts.stt_engine is not None:
        changes["stt_engine"] = opts.stt_engine
    return [s.evolve(**changes) for s in specs] if changes else specs


def nothing_selected(opts: RunOptions) -> str:
    """``no test selected``, with the options that did the selecting."""
    chosen = [
        f"{flag} {','.join(value) if isinstance(value, (list, tuple)) else value}"
        for flag, value in (
            ("--tags", opts.tags),
            ("--exclude-tags", opts.exclude_tags),
            ("--filter", opts.filter),
        )
        if value
    ]
    return "no test selected" + (f" by {' '.join(chosen)}" if chosen else "")


def router_factory(
    project: Any, project_dir: Path | None, setups: Mapping[str, SuiteSetup], opts: RunOptions
) -> RouterFactory:
    """The model routers of this invocation: credentials and providers rendered with the secrets."""
    from tamesu.models.setup import RouterFactory

    secrets: dict[str, str] = {}
    for setup in setups.values():
        secrets.update(setup.secrets)
    cache: str | None = None
    if opts.cache:
        base = project_dir or Path.cwd()
        cache = str(base / ".tamesu-cache" / "models") if opts.cache is True else str(opts.cache)
    base_dirs = [str(s.dir) for s in setups.values()] + ([str(project_dir)] if project_dir else [])
    return RouterFactory.for_project(project, secrets=secrets, cache_dir=cache, base_dirs=base_dirs)


def needs_speech(specs: Sequence[RunSpec]) -> bool:
    """Whether any run speaks or listens (then a Ray placement gets the shared speech pool)."""
    from tamesu.config.kinds import target_kinds

    return any(
        target_kinds.carries_audio(
            getattr(spec.target, "type", None),
            getattr(spec.test, "mode", None) or getattr(spec.target, "mode", None),
        )
        for spec in specs
    )
