"""The load report: the per-call grading of ``tamesu run`` plus what load shows, over time.

``build_load_report`` turns the calls of a load test (their samples and final results) into one
JSON-able dict: totals, faults by kind (the calls' errors, and apart from them every fault the
agent produced, the ones retried within a call included), latency percentiles over the whole test and per time
window (so a team sees where the agent degrades), per test and per assertion pass rates, and the
gates. ``render_load_report`` prints it for a person; every string passes through the redactor.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tamesu.load.stats import SERIES, CallSample, capacity_held, window_rows
from tamesu.metrics import percentile
from tamesu.untrusted import printable

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.load.gates import GateResult
    from tamesu.secrets import Redactor

__all__ = ["build_load_report", "render_load_report", "write_load_report"]

_LABEL = {
    "turn_latency_ms": "turn latency",
    "response_ms": "response time",
    "time_to_first_audio_ms": "time to first audio",
}


def _series_stats(values: Sequence[float]) -> dict[str, float | int | None]:
    return {
        "count": len(values),
        **{f"p{p}": percentile(values, p) for p in (50, 90, 95, 99)},
        "max": max(values) if values else None,
        "mean": (sum(values) / len(values)) if values else None,
    }


def _tests(results: Iterable[RunResult]) -> list[dict[str, Any]]:
    """Per expanded test: calls, outcomes, and each assertion's pass count (the per-call grading)."""
    by_test: dict[tuple[str, str], dict[str, Any]] = {}
    checks: dict[tuple[str, str], dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for r in results:
        key = (r.suite, r.test_id)
        row = by_test.setdefault(
            key, {"suite": r.suite, "test": r.test_id, "target": r.target, "outcomes": Counter()}
        )
        row["outcomes"][r.outcome] += 1
        for a in r.assertions:
            checks[key][a.name]["error" if a.error else ("passed" if a.passed else "failed")] += 1
    out = []
    for key, row in by_test.items():
        calls = sum(row["outcomes"].values())
        out.append(
            {
                **row,
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
) -> dict[str, Any]:
    """The whole report as plain data (what load-report.json holds)."""
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
        "capacity": capacity_held(samples),
        "latency": {name: _series_stats([v for s in finals for _, v in s.series(name)]) for name in SERIES},
        "windows": window_rows(samples, window),
        "window_s": window,
        "tests": _tests(results),
        "gates": [g.__dict__ for g in gates],
        "gates_passed": all(g.passed for g in gates),
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


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v:.0f}"


def _rate(v: Any) -> str:
    return "-" if v is None else f"{v * 100:.1f}%"


def _limit(g: dict[str, Any]) -> str:
    name = g["name"]
    if name in ("pass_rate", "error_rate"):
        return (
            f"{_rate(g['actual'])} ({'at least' if name == 'pass_rate' else 'at most'} {_rate(g['limit'])})"
        )
    if name == "drift":
        actual = "-" if g["actual"] is None else f"{g['actual']:.2f}x"
        return f"{actual} (at most {g['limit']:.2f}x)"
    return f"{_ms(g['actual'])} ms (at most {g['limit']:g})"


def render_load_report(
    report: dict[str, Any],
    *,
    color: bool = False,
    stream: TextIO | None = None,
    redactor: Redactor | None = None,
) -> None:
    """The report for a person: totals, percentiles, the windows, per test, then the gates."""
    from tamesu.untrusted import paint, table

    out = stream or sys.stdout

    def say(text: str = "") -> None:
        out.write((redactor.redact(text) if redactor is not None else text) + "\n")

    t = report["totals"]
    o = t["outcomes"]
    say(
        paint(
            f"Load test: {t['calls']} calls in {report['duration_s']:.1f}s ({t['calls_per_s']:.1f} calls/s)",
            "bold",
            color,
        )
    )
    say(
        f"  passed {o.get('passed', 0)}  failed {o.get('failed', 0)}  errors {o.get('error', 0)}"
        f"  quarantined {o.get('quarantined', 0)}  shed {t['shed']}  retried {t['retried']}"
    )
    if report["faults"]:
        say("  errors by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(report["faults"].items())))
    if report.get("capacity"):
        held = report["capacity"]
        say(
            f"  the target refused {held['refusals']} call(s) for capacity, holding "
            f"{held['held']} other call(s) at the fewest"
        )
    if report.get("agent_faults"):
        say(
            "  agent faults (retried ones included): "
            + ", ".join(f"{k} {v}" for k, v in sorted(report["agent_faults"].items()))
        )
    for name in SERIES:
        s = report["latency"][name]
        if s["count"]:
            say(
                f"  {_LABEL[name]} ms: p50 {_ms(s['p50'])}  p95 {_ms(s['p95'])}  p99 {_ms(s['p99'])}  max {_ms(s['max'])}"
            )
    rows = [
        [
            f"{w['start']:.0f}-{w['end']:.0f}s",
            str(w["calls"]),
            f"{w['calls_per_s']:.1f}",
            _rate(w["pass_rate"]),
            _ms(w["turn_latency_ms"]["p50"]),
            _ms(w["turn_latency_ms"]["p95"]),
            _ms(w["time_to_first_audio_ms"]["p95"]),
            ", ".join(f"{k} {v}" for k, v in sorted(w["faults"].items())) or "-",
            ", ".join(f"{k} {v}" for k, v in sorted(w.get("agent_faults", {}).items())) or "-",
        ]
        for w in report["windows"]
    ]
    if rows:
        say()
        say(f"Over time ({report['window_s']:g}s windows):")
        header = [
            "window",
            "calls",
            "calls/s",
            "pass",
            "lat p50",
            "lat p95",
            "audio p95",
            "errors",
            "agent faults",
        ]
        say(table(rows, header=header, color=color))
    tests = [
        [
            f"{x['suite']} / {x['test']}",
            str(x["calls"]),
            _rate(x["pass_rate"]),
            ", ".join(
                f"{n} ({c.get('failed', 0) + c.get('error', 0)})"
                for n, c in x["assertions"].items()
                if c.get("failed") or c.get("error")
            )
            or "-",
        ]
        for x in report["tests"]
    ]
    if tests:
        say()
        say(table(tests, header=["test", "calls", "pass", "failing checks"], color=color))
    say()
    say("Gates:")
    for g in report["gates"]:
        mark = paint("PASS", "green", color) if g["passed"] else paint("FAIL", "red", color)
        say(f"  {mark} {printable(str(g['name']))}: {_limit(g)}  {printable(str(g['detail']))}")
    if report.get("interrupted"):
        say(paint("interrupted: resume with tamesu load --resume", "yellow", color))
    if report.get("budget_exceeded"):
        say(paint(f"budget exceeded: {report['budget_exceeded']}", "yellow", color))
    if report.get("run_dir"):
        say(f"Results: {report['run_dir']}")
