"""The pytest plugin: ``pytest --tamesu suites/`` collects tamesu suites as pytest items.

Each expanded test of a suite is an item, its repeats are parameters (``refund policy[2]``), its
tags are markers (``-m smoke``; characters a marker name cannot hold become ``_``), and ``-k``
selects as usual. The selected items of a suite file run together through ``tamesu.run`` (the same
path as ``tamesu run``: hooks, concurrency, retries, the run directory and the history), when the
first of them runs; each item then reports its own run:

- a run that passed passes (with a ``SkippedChecks`` warning naming any check that was not
  evaluated); a quarantined one is xfailed with the quarantine's reason; an inconclusive one (a
  judge could not tell) is skipped, naming the check;
- a run that failed fails, unless its test's ``pass_threshold`` still passes the test, in which
  case it is xfailed ("this repeat failed; the test passed 2/3");
- an infrastructure error fails with its message; a run that never started (budget, early stop)
  is skipped with the reason.

Loaded by its ``pytest11`` entry point; without ``--tamesu`` it only adds its options.
"""

from __future__ import annotations

import re
import shlex
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tamesu.run_spec import RunSpec
    from tamesu.runner.invocation import InvocationResult

__all__ = ["SkippedChecks", "SuiteFile", "TamesuItem", "TamesuRunFailed"]

_SUITE_LINE = re.compile(rb"^suite\s*:", re.M)
_NOT_MARKER = re.compile(r"\W")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tamesu", "tamesu suites as tests")
    group.addoption(
        "--tamesu", action="store_true", help="collect tamesu suite files (YAML with a top-level suite:)"
    )
    group.addoption(
        "--tamesu-concurrency", type=int, default=None, metavar="N", help="runs in flight at once per suite"
    )


def pytest_configure(config: pytest.Config) -> None:
    # Registered always, so ``--strict-markers`` and ``-W error`` accept ``-m tamesu`` and the items' marker.
    config.addinivalue_line("markers", "tamesu: a test of a tamesu suite (collected with --tamesu)")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not parent.config.getoption("tamesu", default=False):
        return None
    if file_path.suffix not in (".yaml", ".yml") or file_path.name == "tamesu.yaml":
        return None
    try:
        head = file_path.read_bytes()[:65536]
    except OSError:
        return None
    if not _SUITE_LINE.search(head):
        return None
    return SuiteFile.from_parent(parent, path=file_path)  # type: ignore[no-any-return]


class TamesuRunFailed(Exception):
    """A run failed or errored: its lines are what the report shows."""


class SkippedChecks(UserWarning):
    """A run passed, but some of its checks were not evaluated here (a model, key or extra missing)."""


class SuiteFile(pytest.File):
    """One suite file: an item per planned run, and the invocation that runs the selected ones."""

    result: InvocationResult | None = None

    def collect(self) -> Iterator[pytest.Item]:
        from tamesu.config.loader import validate_paths
        from tamesu.environment import MACHINE_CHECKS
        from tamesu.errors import ConfigErrors
        from tamesu.runner.plan import plan

        report = validate_paths([self.path], checks=MACHINE_CHECKS)
        if report.errors:
            raise ConfigErrors(report.errors)
        for loaded in report.suites:
            for spec in plan(loaded):
                name = f"{spec.test_id}[{spec.repeat_index + 1}]" if spec.repeats > 1 else spec.test_id
                item = TamesuItem.from_parent(self, name=name, spec=spec)
                item.add_marker(pytest.mark.tamesu)
                for tag in spec.tags:
                    marker = _NOT_MARKER.sub("_", tag)
                    self.config.addinivalue_line("markers", f"{marker}: tamesu tag {tag}")
                    item.add_marker(getattr(pytest.mark, marker))
                yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from tamesu.errors import ConfigErrors

        if isinstance(excinfo.value, ConfigErrors):
            return "\n".join(str(e) for e in excinfo.value.errors)
        return super().repr_failure(excinfo)

    def invocation(self) -> InvocationResult:
        """Run this file's selected items once, the first time one of them asks."""
        if self.result is None:
            import tamesu

            selected = [
                i.spec.run_id for i in self.session.items if isinstance(i, TamesuItem) and i.parent is self
            ]
            self.result = tamesu.run(
                [self.path],
                only=selected,
                concurrency=self.config.getoption("tamesu_concurrency"),
                argv=["pytest", "--tamesu", str(self.path)],
            )
        return self.result


class TamesuItem(pytest.Item):
    """One run of one expanded test."""

    def __init__(self, *, spec: RunSpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec = spec

    def runtest(self) -> None:
        from tamesu.reports.junit import assertion_line

        assert isinstance(self.parent, SuiteFile)
        result = self.parent.invocation()
        spec = self.spec
        run = next((r for r in result.results if r.run_id == spec.run_id and r.suite == spec.suite), None)
        verdict = next((t for t in result.tests if t.test_id == spec.test_id and t.suite == spec.suite), None)
        if run is None:
            why = (
                "its test was decided early"
                if verdict is not None and verdict.stopped
                else "it never started"
            )
            pytest.skip(f"not run: {why}")
        if run.outcome == "passed":
            skipped = [a for a in run.assertions if a.skipped]
            if skipped:
                warnings.warn(
                    f"{spec.suite} / {run.run_id} passed with {len(skipped)} check(s) not evaluated: "
                    + "; ".join(assertion_line(a) for a in skipped),
                    SkippedChecks,
                    stacklevel=1,
                )
            return
        if run.outcome == "quarantined":
            pytest.xfail(f"quarantined: {run.quarantine or spec.quarantine}")
        if run.outcome == "inconclusive":
            unsure = next((a for a in run.assertions if a.inconclusive), None)
            pytest.skip(f"inconclusive: {assertion_line(unsure) if unsure else run.run_id}")
        if verdict is not None and verdict.verdict == "passed":
            pytest.xfail(f"this repeat {run.outcome}; the test passed ({verdict.pass_count})")
        lines = [f"{run.outcome}: {spec.suite} / {run.run_id}"]
        if run.error:
            lines.append(f"  error: {run.error}")
        lines += [f"  {assertion_line(a)}" for a in run.assertions if a.state != "passed"]
        if verdict is not None:
            lines.append(f"  verdict: {verdict.verdict} ({verdict.pass_count})")
        if result.run_dir is not None and run.transcript_file:
            lines.append(
                f"  transcript: tamesu show --run-dir {shlex.quote(str(result.run_dir))} {shlex.quote(run.run_id)}"
            )
        raise TamesuRunFailed("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TamesuRunFailed):
            from tamesu.untrusted import printable

            return printable(str(excinfo.value))
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"tamesu: {self.name}"
