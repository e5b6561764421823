"""``--json PATH`` and the run directory's summary.json: the invocation as plain, redacted JSON.

The JSON report holds everything (tests, verdicts, every run with its assertion results and
metrics, the red-team findings most severe first) so that other tools never need to read
results.jsonl; the summary is the same without the runs (findings counted by severity), small
enough to read at a glance. ``agent_faults`` totals every 5xx, refusal, timeout and drop the
agents produced over every attempt, the ones the connect policy retried included (each run holds
its own). ``cost`` is what the invocation cost (``tamesu.costs.cost_summary``: in all, per run,
per passed run, by part and by test), and each test has its ``cost_usd``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from tamesu.costs import cost_summary
from tamesu.redteam.findings import by_severity, severity_counts
from tamesu.untrusted import json_text

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.runner.invocation import InvocationResult
    from tamesu.runner.verdict import TestVerdict
    from tamesu.secrets import Redactor

__all__ = ["VERDICTS", "agent_faults", "counts", "invocation_dict", "statistics", "summary", "write_json"]

VERDICTS = ("passed", "failed", "error", "quarantined", "inconclusive", "not_run")


def counts(tests: Iterable[TestVerdict]) -> dict[str, int]:
    """Tests per verdict, every verdict present (zero when none)."""
    out = dict.fromkeys(VERDICTS, 0)
    for t in tests:
        out[t.verdict] += 1
    return out


def agent_faults(results: Iterable[RunResult]) -> dict[str, int]:
    """The agent faults of these attempts added up, by kind."""
    out: dict[str, int] = {}
    for r in results:
        for kind, n in r.agent_faults.items():
            out[kind] = out.get(kind, 0) + n
    return dict(sorted(out.items()))


def _every_attempt(result: InvocationResult) -> list[RunResult]:
    """This invocation's attempts, and the final results it took over from an earlier one (--resume)."""
    made = {id(r) for r in result.attempts}
    return [*result.attempts, *(r for r in result.results if id(r) not in made)]


def _test(t: TestVerdict, *, runs: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "suite": t.suite,
        "test_id": t.test_id,
        "test_name": t.test_name,
        "target": t.target,
        "verdict": t.verdict,
        "passed": t.passed,
        "repeats": t.repeats,
        "pass_threshold": t.pass_threshold,
        "pass_count": t.pass_count,
        "quarantine": t.quarantine,
        "duration": round(t.duration, 3),
        "skipped_checks": t.skipped_checks,
        "inconclusive_checks": t.inconclusive_checks,
        **statistics(t),
    }
    if runs:
        data["runs"] = [_run(r) for r in sorted(t.runs, key=lambda r: r.repeat_index)]
    return data


def _run(r: RunResult) -> dict[str, Any]:
    """A run as stored, each check with its one-word ``state`` (passed, failed, error, skipped,
    inconclusive) so a reader need not combine the flags."""
    data: dict[str, Any] = msgspec.to_builtins(r)
    for check, a in zip(data["assertions"], r.assertions, strict=True):
        check["state"] = a.state
    return data


def statistics(t: TestVerdict) -> dict[str, Any]:
    """The test's pass rate over the runs made, its interval, pass^k and how its repeats ended."""
    stopped = t.stopped
    return {
        "spent": t.spent,
        "pass_rate": round(t.passed / t.spent, 6) if t.spent else None,
        "interval": [round(x, 6) for x in t.interval] if t.interval is not None else None,
        "confidence": t.confidence,
        "pass_hat_k": {str(k): round(v, 6) for k, v in sorted(t.pass_hat.items())},
        "threshold_on": t.threshold_on,
        "stopped": (
            {"reason": stopped.reason, "after": stopped.after, "decision": stopped.decision}
            if stopped is not None
            else None
        ),
        "note": t.note,
    }


def summary(result: InvocationResult) -> dict[str, Any]:
    """The invocation without its runs: what summary.json holds."""
    cost = cost_summary(_every_attempt(result), result.results)
    spent = {(row["suite"], row["test_id"]): row["cost_usd"] for row in cost["tests"]}
    return {
        "suites": result.suites,
        "run_dir": str(result.run_dir) if result.run_dir else None,
        "started_at": result.settings.get("started_at"),
        "duration": round(result.duration, 3),
        "exit_code": result.exit_code,
        "interrupted": result.interrupted,
        "budget_exceeded": result.budget_exceeded,
        "resumed": result.resumed,
        "counts": counts(result.tests),
        "checks_skipped": sum(len(t.skipped_checks) for t in result.tests),
        "runs": len(result.results),
        "attempts": len(result.attempts),
        "agent_faults": agent_faults(_every_attempt(result)),
        "capacity": result.capacity,
        "tests": [
            {**_test(t, runs=False), "cost_usd": spent.get((t.suite, t.test_id), 0.0)} for t in result.tests
        ],
        "findings": severity_counts(f for r in result.results for f in r.findings),
        "cost": cost,
        **_grid(result),
    }


def _grid(result: InvocationResult) -> dict[str, Any]:
    """``grid``: the cells of a ``--grid`` run; ``failures_by_cause``: the failed calls by cause
    (each absent when there is none)."""
    from tamesu.reports.grid_table import failures_by_cause, grid_keys, grid_order, grid_table

    out: dict[str, Any] = {}
    keys = grid_keys(result.results)
    if keys:
        order = grid_order(result.settings)
        out["grid"] = {"keys": keys, "cells": grid_table(result.results, order=order)}
    causes = failures_by_cause(result.results)
    if causes:
        out["failures_by_cause"] = causes
    return out


def invocation_dict(
    result: InvocationResult, *, redactor: Redactor | None = None, summarised: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The whole invocation: settings, verdicts, runs, assertion results and metrics.

    ``summarised`` is ``summary(result)`` when the caller made it already (summary.json): the
    totals, costs and statistics of every test are then worked out once per run of ``tamesu run``.
    """
    data = dict(summarised if summarised is not None else summary(result))
    data["settings"] = result.settings
    spent = {(row["suite"], row["test_id"]): row["cost_usd"] for row in data["cost"]["tests"]}
    data["tests"] = [
        {**_test(t, runs=True), "cost_usd": spent.get((t.suite, t.test_id), 0.0)} for t in result.tests
    ]
    data["findings"] = [
        msgspec.to_builtins(f) for f in by_severity(f for r in result.results for f in r.findings)
    ]
    return redactor.redact_obj(data) if redactor else data  # type: ignore[no-any-return]


def write_json(
    result: InvocationResult,
    path: str | os.PathLike[str],
    *,
    redactor: Redactor | None = None,
    summarised: dict[str, Any] | None = None,
) -> Path:
    """Write the JSON report (parent folders are made); returns the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    data = invocation_dict(result, redactor=redactor, summarised=summarised)
    tmp.write_text(json_text(data), encoding="utf-8")
    os.replace(tmp, out)
    return out
