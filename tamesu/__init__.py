"""tamesu: test conversational and voice AI agents the way users would.

The public functions load lazily so that ``import tamesu`` (and ``tamesu --help``) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tamesu.version import __version__

__all__ = ["__version__", "run", "run_async", "validate"]

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from tamesu.errors import ConfigError
    from tamesu.runner.invocation import InvocationResult


def run(paths: Iterable[str | Path] | str | Path = (), **options: Any) -> InvocationResult:
    """Run suites (files or folders; default the current folder) as ``tamesu run`` does: the run
    directory, its reports, the history and telemetry. ``options`` are ``tamesu.runner.api.run``'s
    (the fields of ``RunOptions``, a ``reporter``, a ``redactor``...)."""
    from tamesu.reports.publish import PUBLISHERS
    from tamesu.runner.api import run as run_suites

    return run_suites(paths, publishers=PUBLISHERS, **options)


async def run_async(paths: Iterable[str | Path] | str | Path = (), **options: Any) -> InvocationResult:
    """``run`` inside a running event loop."""
    from tamesu.reports.publish import PUBLISHERS
    from tamesu.runner.api import run_async as run_suites

    return await run_suites(paths, publishers=PUBLISHERS, **options)


def validate(paths: Iterable[Path | str] | Path | str = (".",)) -> list[ConfigError]:
    """Every problem in the suites (files or folders) named by ``paths``, as ``tamesu validate`` finds
    them on this machine; an empty list when all is well."""
    from tamesu.config.loader import validate as check
    from tamesu.environment import MACHINE_CHECKS

    return check(paths, checks=MACHINE_CHECKS)
