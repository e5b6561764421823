"""What an invocation leaves in the history: built from a finished run (or a run directory), with
the git commit and branch it ran on.

``record_invocation`` is called at the end of every ``tamesu run``; it raises ``HistoryError`` for
anything that goes wrong, and the caller turns that into a warning, so history never fails a run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.costs import cost_summary, result_cost
from tamesu.history.store import HistoryDB, HistoryError, Invocation, RunRow, TestRow

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.reports.rundir import RunDirectory
    from tamesu.runner.invocation import InvocationResult

__all__ = [
    "git_state",
    "history_location",
    "invocation_of",
    "invocation_of_load",
    "invocation_of_run_dir",
    "record",
    "record_invocation",
]

_GIT_TIMEOUT_S = 5.0


def history_location(
    project: Any, project_dir: Path | None, *, output: Path | None = None
) -> str | Path | None:
    """The project's history: a server URL (``history.url``, its secret ref resolved), else the
    file, or None when tamesu.yaml turns history off. Without a tamesu.yaml the file lies beside the
    run directories' folder (``output``), else in the working directory. Raises ``HistoryError``
    when the URL's secret cannot be read."""
    settings = getattr(project, "history", None)
    if settings is not None and not settings.enabled:
        return None
    base = project_dir or (output.parent if output is not None else Path.cwd())
    url = getattr(settings, "url", None)
    if url:
        return _server_url(str(url), base)
    relative = Path(settings.path if settings is not None else ".tamesu/history.db")
    return relative if relative.is_absolute() else base / relative


def _server_url(ref: str, base: Path) -> str:
    from tamesu.errors import SecretError
    from tamesu.history.databases import is_server_url
    from tamesu.secrets import secret_backends

    if is_server_url(ref):
        return ref
    scheme, _, rest = ref.partition(":")
    try:
        value = secret_backends.get(scheme)(rest, base).strip()
    except (SecretError, KeyError) as exc:
        raise HistoryError(f"history.url: {exc}") from None
    if not is_server_url(value):
        raise HistoryError(f"history.url: {ref} does not hold a postgresql:// URL")
    return value


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_state(cwd: Path) -> tuple[str | None, str | None, bool | None]:
    """(commit, branch, dirty) of the work tree at ``cwd``; Nones outside git. On CI's detached
    checkouts the branch comes from the usual variables (GITHUB_HEAD_REF, GITHUB_REF_NAME,
    CI_COMMIT_REF_NAME)."""
    commit = _git(["rev-parse", "HEAD"], cwd)
    if commit is None:
        return None, None, None
    branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], cwd)
    if branch in (None, "HEAD"):
        branch = next(
            (
                os.environ[v]
                for v in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME")
                if os.environ.get(v)
            ),
            branch,
        )
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return commit, branch, None if status is None else bool(status)


def _runs(results: list[RunResult]) -> list[RunRow]:
    return [
        RunRow(
            run_id=r.run_id,
            repeat_index=r.repeat_index,
            outcome=r.outcome,
            duration=r.duration,
            metrics=dict(r.metrics),
            attempt=r.attempt,
            error_kind=r.error_kind,
        )
        for r in sorted(results, key=lambda r: r.repeat_index)
    ]


def invocation_of(result: InvocationResult) -> Invocation:
    """The history rows of a finished invocation (git state not filled in)."""
    tests = [
        TestRow(
            suite=t.suite,
            test_id=t.test_id,
            verdict=t.verdict,
            passed=t.passed,
            runs=len(t.runs),
            repeats=t.repeats,
            pass_threshold=t.pass_threshold,
            duration=t.duration,
            target=t.target,
            tags=list(t.runs[0].tags) if t.runs else [],
            run_rows=_runs(t.runs),
        )
        for t in result.tests
    ]
    counts = dict(result.counts)
    made = {id(r) for r in result.attempts}  # resumed runs: their attempts were an earlier invocation's
    cost = cost_summary([*result.attempts, *(r for r in result.results if id(r) not in made)], result.results)
    return Invocation(
        suites=list(result.suites),
        started_at=result.started_at,
        duration=result.duration,
        exit_code=result.exit_code,
        counts={k: counts.get(k, 0) for k in _VERDICTS},
        summary={
            **_facts(result.settings.get("options") or {}, sum(len(t.skipped_checks) for t in result.tests)),
            "cost": cost,
        },
        tests=tests,
        run_dir=str(result.run_dir) if result.run_dir else None,
        argv=[str(a) for a in result.settings.get("argv") or []],
        tamesu_version=result.settings.get("tamesu_version"),
        cost_usd=cost["total_usd"],
        tokens=sum(float(r.metrics.get("llm_tokens", 0) or 0) for r in result.results),
    )


_VERDICTS = ("passed", "failed", "error", "quarantined", "inconclusive", "not_run")
_SELECTING = ("tags", "exclude_tags", "filter", "only")
"""The run options that choose tests: a run with one of them set did not run every test."""


def _facts(options: dict[str, Any], skipped: int) -> dict[str, Any]:
    """What a diff needs besides the tests: how they were chosen, how many checks were skipped."""
    out: dict[str, Any] = {}
    selection = {k: options[k] for k in _SELECTING if options.get(k)}
    if selection:
        out["selection"] = selection
    if skipped:
        out["checks_skipped"] = skipped
    return out


def invocation_of_load(
    report: dict[str, Any],
    calls: Sequence[RunResult],
    *,
    suites: Sequence[str],
    started_at: float,
    argv: Sequence[str] = (),
    verdicts: Mapping[tuple[str, str], str] | None = None,
) -> Invocation:
    """A load test's history rows: each call a run of its test (so ``tamesu diff`` compares the
    latency and cost distributions of two load tests), the report's figures as the summary. A
    test's verdict is the one the load test gave it (its pass rate against its pass_threshold);
    without ``verdicts``, it passed when every call of it passed."""
    by_test: dict[tuple[str, str], list[RunResult]] = {}
    for call in calls:
        by_test.setdefault((call.suite, call.test_id), []).append(call)
    tests = []
    for (suite, test_id), runs in by_test.items():
        seen = {r.outcome for r in runs}
        verdict = next((v for v in ("failed", "error", "quarantined", "inconclusive") if v in seen), "passed")
        verdict = (verdicts or {}).get((suite, test_id), verdict)
        tests.append(
            TestRow(
                suite=suite,
                test_id=test_id,
                verdict=verdict,
                passed=sum(r.outcome == "passed" for r in runs),
                runs=len(runs),
                repeats=len(runs),
                duration=sum(r.duration for r in runs),
                tags=list(runs[0].tags),
                run_rows=_runs(runs),
            )
        )
    counts = {v: sum(t.verdict == v for t in tests) for v in ("passed", "failed", "error", "quarantined")}
    summary = {
        key: report.get(key)
        for key in ("totals", "pass_rate", "error_rate", "latency", "gates_passed", "interrupted")
    }
    if isinstance(report.get("cost"), dict):
        summary["cost"] = report["cost"]
    summary["gates"] = [
        {k: g.get(k) for k in ("name", "passed", "actual", "limit")} for g in report.get("gates") or []
    ]
    if isinstance(report.get("capacity"), dict):
        summary["capacity"] = {k: report["capacity"].get(k) for k in ("concurrency", "broke", "stopped")}
    return Invocation(
        suites=list(dict.fromkeys(suites)),
        started_at=started_at,
        duration=float(report.get("duration_s") or 0.0),
        exit_code=int(report.get("exit_code", 0)),
        counts={**counts, "not_run": 0},
        tests=tests,
        run_dir=report.get("run_dir"),
        argv=[str(a) for a in argv],
        tamesu_version=_version(),
        cost_usd=sum(result_cost(r) for r in calls),
        tokens=sum(float(r.metrics.get("llm_tokens", 0) or 0) for r in calls),
        kind="load",
        summary=summary,
    )


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tamesu")
    except PackageNotFoundError:
        return None


def invocation_of_run_dir(run: RunDirectory) -> Invocation:
    """A run directory read as if it came from the history (for ``tamesu diff DIR_A DIR_B``)."""
    rows = run.tests()
    tests = [
        TestRow(
            suite=row.suite,
            test_id=row.test_id,
            verdict=row.verdict,
            passed=int(row.info.get("passed") or sum(r.outcome == "passed" for r in row.runs)),
            runs=len(row.runs),
            repeats=int(row.info.get("repeats") or len(row.runs) or 1),
            pass_threshold=float(row.info.get("pass_threshold") or 1.0),
            duration=float(row.info.get("duration") or sum(r.duration for r in row.runs)),
            target=row.target,
            tags=row.tags,
            run_rows=_runs(row.runs),
        )
        for row in rows
    ]
    summary = run.summary or {}
    counts = {v: sum(t.verdict == v for t in tests) for v in _VERDICTS}
    skipped = int(summary.get("checks_skipped") or 0) or len(
        {(row.test_id, a.name) for row in rows for r in row.runs for a in r.assertions if a.skipped}
    )
    return Invocation(
        suites=run.suites,
        started_at=min((r.started_at for r in run.results), default=0.0),
        duration=float(summary.get("duration") or 0.0),
        exit_code=int(summary.get("exit_code", -1)),
        counts=counts,
        tests=tests,
        run_dir=str(run.dir),
        argv=[str(a) for a in run.settings.get("argv") or []],
        tamesu_version=run.settings.get("tamesu_version"),
        cost_usd=sum(result_cost(r) for r in run.results),
        summary=_facts(run.settings.get("options") or {}, skipped),
    )


def record_invocation(result: InvocationResult, location: str | Path, *, cwd: Path | None = None) -> int:
    """Add the invocation to the history at ``location``; raises ``HistoryError`` when it cannot."""
    return record(invocation_of(result), location, cwd=cwd)


def record(inv: Invocation, location: str | Path, *, cwd: Path | None = None) -> int:
    """Add ``inv`` with the git state of ``cwd``; anything that goes wrong is a ``HistoryError``."""
    inv.git_commit, inv.git_branch, inv.git_dirty = git_state(
        cwd or (location.parent if isinstance(location, Path) else Path.cwd())
    )
    db = HistoryDB(location)
    try:
        return db.record(inv)
    except HistoryError:
        raise
    except Exception as exc:  # never let history fail a run
        from tamesu.history.databases import masked

        raise HistoryError(masked(f"{db.name}: {type(exc).__name__}: {exc}", location)) from None
