"""Comparing two invocations: changes are classified and come with their significance."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.history import HistoryDB, Invocation, RunRow, TestRow, compare
from tamesu.history.render import comparison_json, comparison_markdown, comparison_text

pytestmark = pytest.mark.unit


def row(
    name: str, outcomes: str, *, latency: float = 100.0, spread: float = 5.0, verdict: str | None = None
) -> TestRow:
    kinds = {"p": "passed", "f": "failed", "e": "error"}
    runs = [
        RunRow(run_id=f"{name}#{i + 1}", repeat_index=i, outcome=kinds[o], duration=1.0,
               metrics={"turn_latency_ms_p50": latency + (i % 3 - 1) * spread, "llm_cost_usd": 0.002})
        for i, o in enumerate(outcomes)
    ]  # fmt: skip
    passed = outcomes.count("p")
    if verdict is None:
        verdict = "passed" if passed == len(outcomes) else ("error" if "e" in outcomes else "failed")
    return TestRow(
        suite="shop", test_id=name, verdict=verdict, passed=passed, runs=len(outcomes), run_rows=runs
    )


def inv(*tests: TestRow, inv_id: int = 1) -> Invocation:
    return Invocation(
        suites=["shop"],
        started_at=float(inv_id),
        duration=1.0,
        exit_code=0,
        counts={},
        tests=list(tests),
        id=inv_id,
    )


def test_regressions_fixes_rate_changes_new_and_removed_tests() -> None:
    a = inv(row("refund", "p" * 20), row("greets", "f"), row("stable", "p" * 20, verdict="passed"),
            row("gone", "p"), inv_id=1)  # fmt: skip
    b = inv(row("refund", "p" * 9 + "f" * 11), row("greets", "p"),
            row("stable", "p" * 12 + "f" * 8, verdict="passed"), row("fresh", "p"), inv_id=2)  # fmt: skip
    c = compare(a, b)
    [regression] = c.of("regression")
    assert regression.test_id == "refund" and regression.rate is not None and regression.rate.significant
    [fix] = c.of("fix")
    assert fix.test_id == "greets" and fix.rate is not None and not fix.rate.significant  # 0/1 -> 1/1
    [rate] = c.of("rate")
    assert rate.test_id == "stable" and rate.rate is not None and rate.rate.high < 0
    assert [x.test_id for x in c.of("new")] == ["fresh"] and [x.test_id for x in c.of("removed")] == ["gone"]
    assert c.regressed
    assert ("shop / refund", "9 of 20 runs passed in one invocation") in c.flaky


def test_latency_changes_are_significant_only_when_the_runs_say_so() -> None:
    a = inv(row("one", "ppppp", latency=100), row("two", "ppppp", latency=200), inv_id=1)
    slower = inv(row("one", "ppppp", latency=160), row("two", "ppppp", latency=262), inv_id=2)
    [latency, cost] = compare(a, slower).metrics
    assert latency.name == "turn_latency_ms_p50" and latency.diff is not None
    assert latency.diff.estimate == pytest.approx(61.0) and latency.relative == pytest.approx(61 / 149)
    assert [name for name, _ in latency.per_test] == ["shop / one", "shop / two"]
    assert cost.diff is not None and not cost.diff.significant
    noisy = inv(
        row("one", "ppppp", latency=105, spread=60), row("two", "ppppp", latency=195, spread=60), inv_id=3
    )
    [latency, _] = compare(a, noisy).metrics
    assert latency.per_test == []


def test_flaky_tests_are_found_in_the_history_too(tmp_path: Path) -> None:
    db = HistoryDB(tmp_path / "h.db")
    for n, outcome in enumerate("ppfp"):
        db.record(inv(row("greets", outcome), inv_id=n + 1))
    latest = db.invocation(db.invocations(limit=1)[0].id or 0)
    c = compare(db.invocation(3), latest, history=db)
    assert c.flaky == [("shop / greets", "passed 3, failed 1 of its last 4 invocations")]


def test_the_comparison_renders_as_text_markdown_and_json() -> None:
    a = inv(row("refund | <b>", "p" * 20), inv_id=1)
    b = inv(row("refund | <b>", "p" * 9 + "f" * 11), inv_id=2)
    c = compare(a, b)
    text = comparison_text(c)
    assert "Regressions: 1" in text and "pass rate -55 pts (95% CI" in text and "significant" in text
    md = comparison_markdown(c)
    assert "**1 regression(s).**" in md and "refund \\| &lt;b&gt;" in md
    data = comparison_json(c)
    assert (
        data["changes"][0]["kind"] == "regression" and data["changes"][0]["pass_rate_change"]["significant"]
    )


def test_a_test_that_failed_in_every_repeat_of_the_new_run_is_failing_not_flaky(tmp_path: Path) -> None:
    db = HistoryDB(tmp_path / "h.db")
    for n, outcomes in enumerate(["ppp", "ppp", "fff"]):
        db.record(inv(row("refund", outcomes), inv_id=n + 1))
    latest = db.invocation(db.invocations(limit=1)[0].id or 0)
    c = compare(db.invocation(2), latest, history=db)
    assert [x.test_id for x in c.of("regression")] == ["refund"]
    assert c.flaky == [], "a regression, not flakiness"
    db.record(inv(row("refund", "pfp"), inv_id=4))
    again = db.invocation(db.invocations(limit=1)[0].id or 0)
    assert compare(latest, again, history=db).flaky == [
        ("shop / refund", "2 of 3 runs passed in one invocation")
    ]


def test_tests_a_filtered_run_did_not_select_are_not_called_removed() -> None:
    a = inv(row("refund", "p"), row("greets", "p"), inv_id=1)
    b = inv(row("refund", "p"), inv_id=2)
    b.summary = {"selection": {"tags": ["smoke"]}}
    c = compare(a, b)
    assert c.of("removed") == [] and [x.test_id for x in c.of("unselected")] == ["greets"]
    text = comparison_text(c)
    assert "Removed tests: none" in text and "Not selected in the new run: 1" in text
    assert comparison_json(c)["selection"] == {"tags": ["smoke"]}
    unfiltered = compare(a, inv(row("refund", "p"), inv_id=3))
    assert [x.test_id for x in unfiltered.of("removed")] == ["greets"]
    assert "Not selected" not in comparison_text(unfiltered)
