"""The load report and the live view, as data and as text."""

from __future__ import annotations

import io

import pytest

from tamesu.kernel.outcome import AssertionResult, RunResult
from tamesu.load.gates import Gates, evaluate_gates
from tamesu.load.live import LiveView, progress_line
from tamesu.load.report_data import build_load_report
from tamesu.load.samples import CallSample, LoadStats
from tamesu.reports.load_report import render_load_report

pytestmark = pytest.mark.unit


def samples() -> list[CallSample]:
    out = []
    for i in range(20):
        ok = i % 5 != 4
        out.append(
            CallSample(
                index=i,
                run_id=f"t@{i}",
                test_id="t",
                start=i * 0.5,
                end=i * 0.5 + 1,
                outcome="passed" if ok else "error",
                fault=None if ok else "http_5xx",
                agent_faults={"http_5xx": 1} if not ok or i % 5 == 0 else {},
                turn_latency_ms=[(i * 0.5 + 0.2, 100.0 + 10 * i)] if ok else [],
            )
        )
    return out


def results() -> list[RunResult]:
    out = []
    for i in range(20):
        failed = i % 5 == 3
        out.append(
            RunResult(
                run_id=f"t@{i}",
                test_id="t",
                test_name="t",
                suite="s",
                target="api",
                outcome="failed" if failed else "passed",
                assertions=[AssertionResult(name="contains", kind="contains", passed=not failed)],
            )
        )
    return out


def test_the_report_holds_totals_windows_tests_and_gates() -> None:
    gates = evaluate_gates(Gates(pass_rate=0.9, slo={"turn_latency_ms_p95": 300.0}, window=5.0), samples())
    report = build_load_report(
        samples(), results(), gates, profile={"concurrency": 5}, window=5.0, elapsed=10.5, shed=2, exit_code=1
    )
    assert report["totals"]["outcomes"] == {"passed": 16, "error": 4}
    assert (report["totals"]["shed"], report["pass_rate"], report["faults"]) == (2, 0.8, {"http_5xx": 4})
    assert [w["calls"] for w in report["windows"]] == [8, 10, 2]
    # the last window lasted half a second (the test ended at 10.5s): 2 calls in it are 4 calls/s
    assert [w["calls_per_s"] for w in report["windows"]] == [pytest.approx(x) for x in (1.6, 2.0, 4.0)]
    assert report["windows"][-1]["end"] == pytest.approx(10.5)
    assert report["agent_faults"] == {"http_5xx": 8}
    assert [w["agent_faults"] for w in report["windows"]] == [{"http_5xx": n} for n in (3, 4, 1)]
    assert report["latency"]["turn_latency_ms"]["count"] == 16
    [test] = report["tests"]
    assert test["assertions"] == {"contains": {"passed": 16, "failed": 4}}
    assert [(g["name"], g["passed"]) for g in report["gates"]] == [
        ("pass_rate", False),
        ("slo/turn_latency_ms_p95", True),
    ]
    out = io.StringIO()
    render_load_report(report, stream=out)
    text = out.getvalue()
    assert "Load test: 20 calls in 10.5s" in text
    assert "errors by kind: http_5xx 4" in text
    assert "agent faults (retried ones included): http_5xx 8" in text
    assert "0-5s" in text and "10-10.5s" in text
    assert "s / t  20     80.0%  contains (4)" in text
    assert "FAIL pass_rate: 80.0% (at least 90.0%)  16/20 calls passed" in text
    assert "PASS slo/turn_latency_ms_p95:" in text


def test_the_live_numbers_as_a_line_and_as_a_table() -> None:
    stats = LoadStats()
    stats.active = 3
    for s in samples():
        stats.add(s)
    snap = stats.snapshot(10.0)
    line = progress_line(snap)
    assert line.startswith("t=10s  active 3  done 20")
    assert "pass 80.0%" in line and "errors: http_5xx 4  agent faults: http_5xx 8" in line
    view = LiveView(lambda: snap, live=True)
    from rich.console import Console

    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(view.render(snap))
    table = console.file.getvalue()  # type: ignore[attr-defined]
    assert "active calls" in table and "http_5xx 4" in table and "in-process" not in table


async def test_plain_lines_go_to_a_log_while_the_test_runs() -> None:
    import asyncio

    out = io.StringIO()
    stats = LoadStats()
    view = LiveView(lambda: stats.snapshot(1.0), live=False, stream=out, line_every=0.01)
    view.start()
    for _ in range(100):
        if out.getvalue():
            break
        await asyncio.sleep(0.01)
    await view.stop()
    assert out.getvalue().startswith("t=1s  active 0  done 0")
