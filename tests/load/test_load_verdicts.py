"""A finished load test reads as finished everywhere: each test judged by its own pass_threshold,
an equal share of calls per test, durations and gates as a person reads them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tamesu.reports.html import render_html
from tamesu.reports.rundir import RunDirectory

from .agents import load, rest_suite, says, serve_fault_agent

pytestmark = pytest.mark.integration


def suite(url: str, hello: str = "hello") -> str:
    return rest_suite(
        url, [says("ok", hello, "repeat: 10, "), says("flaky", "flaky", "pass_threshold: 0.5, ")]
    )


async def test_a_passing_load_test_reads_as_finished_with_each_test_judged_by_its_own_threshold(
    tmp_path: Path,
) -> None:
    async with serve_fault_agent(delay=0.005) as (url, agent):
        out = io.StringIO()
        result = await load(
            tmp_path, suite(url), overrides={"calls": 12, "concurrency": 1}, live=False, stream=out
        )
    text = out.getvalue()
    assert result.exit_code == 0, text
    tests = {t["test"]: t for t in result.report["tests"]}
    # repeat: 10 does not give "ok" ten times the calls: the calls alternate between the tests
    assert (tests["ok"]["calls"], tests["flaky"]["calls"]) == (6, 6)
    assert "note: loadtest / ok: repeat 10 is not multiplied under load" in text
    # flaky answers every other request with a 503: 50% passes its pass_threshold 0.5
    assert (tests["flaky"]["pass_rate"], tests["flaky"]["verdict"]) == (0.5, "passed")
    assert [g["name"] for g in result.report["gates"]] == ["pass_rate/ok", "pass_rate/flaky"]
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["exit_code"] == 0
    assert {t["test_id"]: t["verdict"] for t in summary["tests"]} == {"ok": "passed", "flaky": "passed"}
    assert all(t["duration"] > 0 for t in summary["tests"])

    page = render_html(RunDirectory.open(result.run_dir))
    assert "did not finish" not in page
    assert page.count('class="verdict v-passed">PASS</td>') >= 2
    assert "0.00s" not in page
    assert "50.0% (at least 50.0%)" in page
    assert agent.requests == 12


async def test_a_stricter_test_is_not_let_off_by_a_looser_neighbour(tmp_path: Path) -> None:
    async with serve_fault_agent() as (url, _):
        result = await load(
            tmp_path, suite(url, "fail"), overrides={"calls": 8, "concurrency": 2}, quiet=True
        )
    gates = {g["name"]: g["passed"] for g in result.report["gates"]}
    # "flaky" holds its 0.5, but "ok" (threshold 1) passed none of its calls
    assert result.report["pass_rate"] == 0.25
    assert gates == {"pass_rate/ok": False, "pass_rate/flaky": True}
    assert result.exit_code == 1


async def test_the_cost_per_passed_call_is_reported_and_gated(tmp_path: Path) -> None:
    (tmp_path / "tamesu.yaml").write_text("prices: { call_minute: { api: 600 } }\n")
    async with serve_fault_agent(delay=0.005) as (url, _):
        out = io.StringIO()
        overrides = {"calls": 8, "concurrency": 2, "gates": {"cost_per_pass": 1e-9}}
        result = await load(tmp_path, suite(url), overrides=overrides, quiet=True, stream=out)
    cost = result.report["cost"]
    calls = [json.loads(line) for line in (result.run_dir / "results.jsonl").read_text().splitlines()]
    total = sum(c["metrics"]["cost_usd"] for c in calls)
    passed = sum(c["outcome"] == "passed" for c in calls)
    assert total > 0 and cost["total_usd"] == pytest.approx(total)
    assert cost["per_pass_usd"] == pytest.approx(total / passed)
    [gate] = [g for g in result.report["gates"] if g["name"] == "cost_per_pass"]
    assert not gate["passed"] and gate["actual"] == pytest.approx(total / passed)
    assert result.exit_code == 1
    text = out.getvalue()
    assert f"cost: ${total:.4f} in all" in text
    assert f"FAIL cost_per_pass: ${total / passed:.4f} (at most $1e-09)" in text
