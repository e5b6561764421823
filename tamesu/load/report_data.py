"""The load report's data: the per-call grading of ``tamesu run`` plus what load shows, over time.

``build_load_report`` turns the calls of a load test (their samples and final results) into one
JSON-able dict: totals, faults by kind (the calls' errors, and apart from them every fault the
agent produced, the ones retried within a call included), latency percentiles over the whole test
and per time window (so a team sees where the agent degrades), per test and per assertion pass
rates, and the gates. The load test writes it (``load-report.json``); ``tamesu.reports.load_report``
renders it.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.load.samples import SERIES, CallSample, capacity_held, window_rows
from tamesu.metrics import percentile

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.load.gates import GateResult
    from tamesu.secrets import Redactor

__all__ = ["build_load_report", "write_load_report"]


def _series_stats(values: Sequence[float]) -> dict[str, float | int | None]:
    return {
        "count": len(values),
        **{f"p{p}": percentile(values, p) for p in (50, 90, 95, 99)},
        "max": max(values) if values else None,
        "mean": (sum(values) / len(values)) if values else None,
    }


def _tests(
    results: Iterable[RunResult], verdicts: Mapping[tuple[str, str], tuple[str, float]]
) -> list[dict[str, Any]]:
    """Per expanded test: calls, outcomes, each assertion's pass count (the per-call grading), and
    the test's verdict against its own pass_threshold when the caller judged it."""
    by_test: dict[tuple[str, str], dict[str, Any]] = {}
    checks: dict[tuple[str, str], dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for r in results:
        key = (r.suite, r.test_id)
        row = by_test.setdefault(
            key, {"suite": r.suite, "test": r.test_id, "target": r.target, "outcomes": Counter()}
        )
        row["outcomes"][r.outcome] += 1
        for a in r.assertions:
            checks[key][a.name][a.state] += 1
    out = []
    for key, row in by_test.items():
        calls = sum(row["outcomes"].values())
        verdict, threshold = verdicts.get(key, (None, None))
        out.append(
            {
                **row,
                "verdict": verdict,
                "pass_threshold": threshold,
                "outcomes": dict(row["outcomes"]),
                "calls": calls,
                "pass_rate": row["outcomes"]["passed"] / calls if calls else None,
                "assertions": {name: dict(c) for name, c in checks[key].items()},
            }
        )
    return out


def build_load_report(
    samples: Sequence[CallSample],
    results: Sequence[RunResult],
    gates: Sequence[GateResult],
    *,
    profile: dict[str, Any],
    window: float,
    elapsed: float,
    shed: int = 0,
    exit_code: int = 0,
    run_dir: str | None = None,
    interrupted: bool = False,
    budget_exceeded: str | None = None,
    verdicts: Mapping[tuple[str, str], tuple[str, float]] | None = None,
    capacity: dict[str, Any] | None = None,
    cost: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole report as plain data (what load-report.json holds); ``verdicts`` is each test's
    (verdict, pass_threshold)."""
    finals = [s for s in samples if s.final]
    outcomes = Counter(s.outcome for s in finals)
    faults = Counter(s.fault for s in samples if s.fault is not None)
    agent_faults: Counter[str] = Counter()
    for s in samples:
        agent_faults.update(s.agent_faults)
    graded = len(finals)
    first = min((s.start for s in samples), default=0.0)
    span = max(elapsed - first, 1e-9)
    return {
        "run_dir": run_dir,
        "profile": profile,
        "exit_code": exit_code,
        "interrupted": interrupted,
        "budget_exceeded": budget_exceeded,
        "duration_s": elapsed,
        "totals": {
            "calls": graded,
            "attempts": len(samples),
            "retried": sum(1 for s in samples if not s.final),
            "shed": shed,
            "outcomes": dict(outcomes),
            "calls_per_s": graded / span,
        },
        "pass_rate": outcomes["passed"] / graded if graded else None,
        "error_rate": outcomes["error"] / graded if graded else None,
        "faults": dict(faults),
        "agent_faults": dict(agent_faults),
        "capacity_refusals": capacity_held(samples),
        "latency": {name: _series_stats([v for s in finals for _, v in s.series(name)]) for name in SERIES},
        "windows": window_rows(samples, window, end=elapsed),
        "window_s": window,
        "tests": _tests(results, verdicts or {}),
        "gates": [g.__dict__ for g in gates],
        "gates_passed": all(g.passed for g in gates),
        **({"capacity": capacity} if capacity is not None else {}),
        **({"cost": cost} if cost is not None else {}),
    }


def write_load_report(
    report: dict[str, Any], path: str | os.PathLike[str], *, redactor: Redactor | None = None
) -> None:
    """Write the report as JSON (atomically), redacted."""
    data = redactor.redact_obj(report) if redactor is not None else report
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, target)
