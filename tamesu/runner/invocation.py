"""One invocation of ``tamesu run``: what it is asked (``RunOptions``), the progress it shows
(``Reporter``) and what it gives back (``InvocationResult``).

Reports read these; the scheduler calls the reporter. Neither needs the other's module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.config import Project
    from tamesu.kernel.outcome import RunResult
    from tamesu.run_spec import RunSpec
    from tamesu.runner.results import ResultsStore
    from tamesu.runner.verdict import TestVerdict
    from tamesu.secrets import Redactor

__all__ = [
    "Finished",
    "InvocationResult",
    "Publisher",
    "Reporter",
    "RunOptions",
    "check_processes",
    "check_stt_engine",
]


@dataclass
class RunOptions:
    """Everything ``tamesu run`` can be asked, as keyword arguments of ``tamesu.run``."""

    concurrency: int | None = None
    """Runs in flight at once; default tamesu.yaml ``concurrency``, else 4."""
    per_target: int | None = None
    """Runs in flight against one target; default the concurrency."""
    tags: Sequence[str] = ()
    exclude_tags: Sequence[str] = ()
    filter: str | None = None
    repeat: int | None = None
    timeout: float | None = None
    """Seconds, overriding every test's timeout."""
    seed: int | None = None
    ray: bool = False
    address: str | None = None
    stt_engine: str | None = None
    """The STT engine that hears every call's agent (a registered name: ``whisper``,
    ``whisper-base``, ``openai``...); None: chosen per line and language."""
    processes: int | str | None = None
    """Worker processes on this machine that run the tests (``auto``: the cores the agent leaves
    free); None or 1: the runs stay in this process."""
    resume: bool | str | Path = False
    """True: the latest run directory of the same suites; a path: that run directory."""
    output: str | Path | None = None
    junit: str | Path | None = None
    json: str | Path | None = None
    sarif: str | Path | None = None
    """Also write the red-team findings as SARIF 2.1.0 to this path."""
    html: bool | None = None
    """Write report.html into the run directory; None: tamesu.yaml's ``html_report`` (on by default)."""
    update_golden: bool = False
    fail_fast: bool = False
    strict: bool = False
    """A skipped check is an error (exit 3) and an inconclusive one a failure (``defaults.strict``)."""
    cache: bool | str | Path = False
    """Replay model answers from a response cache: True for .tamesu-cache/models, or a folder."""
    today: date | None = None
    grid: Sequence[str] = ()
    """``KEY=V1,V2`` items: every audio test once per cell of the grid (``tamesu.runner.grid``)."""
    only: Sequence[str] | None = None
    """Run only these run ids (after the other selection options); the pytest plugin's selection."""


@dataclass
class InvocationResult:
    """One ``tamesu run``: its verdicts, every run's final result, and where they were written."""

    exit_code: int
    tests: list[TestVerdict]
    results: list[RunResult]
    """The final result of every run (resumed ones included)."""
    attempts: list[RunResult] = field(default_factory=list)
    """Every attempt this invocation made (retries included)."""
    run_dir: Path | None = None
    suites: list[str] = field(default_factory=list)
    started_at: float = 0.0
    duration: float = 0.0
    interrupted: bool = False
    budget_exceeded: str | None = None
    resumed: int = 0
    """Runs taken from the results of an earlier invocation (``--resume``)."""
    report: Path | None = None
    """The HTML report written into the run directory (None when it was turned off or failed)."""
    settings: dict[str, Any] = field(default_factory=dict)
    capacity: list[dict[str, Any]] = field(default_factory=list)
    """Each target that refused sessions for capacity: suite, target, concurrency (its limit at the
    start), held (the limit it ended with) and refusals."""

    @property
    def counts(self) -> Counter[str]:
        """Tests per verdict."""
        return Counter(t.verdict for t in self.tests)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class Reporter:
    """Progress events; subclasses override what they show. Every method must be cheap."""

    def started(self, total: int) -> None:
        """The scheduler is about to start ``total`` runs."""

    def run_started(self, spec: RunSpec) -> None:
        """An attempt of ``spec`` begins."""

    def run_finished(self, result: RunResult) -> None:
        """An attempt ended; ``result.final`` is False when it will be retried."""

    def run_skipped(self, spec: RunSpec) -> None:
        """A planned run was not started: its test's verdict was already decided (early stop)."""

    def note(self, text: str) -> None:
        """Something worth a line in a log: a teardown hook failed, the budget stopped the run."""


@dataclass(frozen=True)
class Finished:
    """An invocation whose tests have their verdicts, handed to each ``Publisher`` in turn."""

    result: InvocationResult
    store: ResultsStore
    """The run directory, still open: a publisher may add files to it."""
    opts: RunOptions
    redactor: Redactor
    project: Project | None
    project_dir: Path | None
    note: Callable[[str], None]
    """A warning line: a publisher that cannot do its part says so here and never fails the run."""


Publisher = Callable[[Finished], None]
"""What is done with a finished invocation beyond its results (reports, history, telemetry): the
layers above the runner, passed in by the faces (``tamesu.run``)."""


def check_processes(processes: object, *, ray: bool) -> None:
    """``processes`` is a whole number of 1 or more, ``auto`` or None, and not asked with Ray."""
    from tamesu.errors import UsageError

    if processes is None:
        return
    if processes != "auto" and (
        isinstance(processes, bool) or not isinstance(processes, int) or processes < 1
    ):
        raise UsageError(f"processes: expected a whole number of 1 or more or auto, got {processes!r}")
    if ray:
        raise UsageError(
            "--processes runs the tests on this machine; on Ray (--ray, --address) workers are Ray's"
        )


def check_stt_engine(name: str | None) -> None:
    """``--stt-engine`` names a registered STT engine (its models are not loaded here); the hosted
    ``openai`` one has its key or server."""
    if name is None:
        return
    from tamesu.audio.stt import stt_engines
    from tamesu.config.errors_map import did_you_mean
    from tamesu.errors import UsageError

    known = stt_engines.names()
    if name not in known:
        near = did_you_mean(name, known)
        raise UsageError(
            f"--stt-engine: unknown STT engine {name!r} (known: {', '.join(known)})"
            + (f"; {near}" if near else "")
        )
    if name == "openai":  # the hosted engine needs a key or a server of its own before any call
        from tamesu.audio.tts.hosted import openai_settings
        from tamesu.errors import ConfigError

        try:
            openai_settings(None, None, engine="openai")
        except ConfigError as exc:
            raise UsageError(
                "--stt-engine openai: the hosted engine needs OPENAI_API_KEY (or OPENAI_BASE_URL "
                "for an OpenAI-compatible server of your own)"
            ) from exc
