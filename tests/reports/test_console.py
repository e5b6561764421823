from __future__ import annotations

import io
from pathlib import Path

import pytest

from tamesu.reports.console import ConsoleReporter, final_line
from tamesu.runner.invocation import InvocationResult
from tamesu.secrets import Redactor

from .builders import SECRET
from .builders import run_result as _run

pytestmark = pytest.mark.unit


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def render(invocation: InvocationResult, redactor: Redactor, **kw: object) -> str:
    out = kw.pop("stream", None) or io.StringIO()
    reporter = ConsoleReporter(stream=out, redactor=redactor, **kw)  # type: ignore[arg-type]
    reporter.summary(invocation)
    return out.getvalue()  # type: ignore[attr-defined,no-any-return]


def test_summary_table_failures_errors_and_totals(invocation: InvocationResult, redactor: Redactor) -> None:
    text = render(invocation, redactor, color="never")
    assert "\x1b[" not in text
    lines = text.splitlines()
    assert any(line.split()[:5] == ["FAIL", "refund", "[late]", "(es)", "1/2"] for line in lines)
    assert any(line.split()[:3] == ["QUAR", "flaky", "0/1"] for line in lines)
    assert any(line.split()[:5] == ["PASS", "greets", "3/3", "passed,", "threshold"] for line in lines)
    fail_at = lines.index("FAIL support / refund [late] (es) (1/2 passed)")
    detail = lines[fail_at + 1 :]
    assert detail[0] == "  run 2: contains: expected '30 days', seen 'key *** & <b>90 days</b>'"
    assert detail[1] == "  last 3 turn(s):"
    assert detail[2:5] == [
        "    agent: hi, how can I help?",
        "    user : can I return shoes after 40 days?",
        "    agent: yes, within 90 days (token ***)",
    ]
    assert "  connection refused at http://127.0.0.1:9/***" in lines
    assert "1 passed, 1 failed, 1 error (+1 quarantined)" in lines
    assert any(line.startswith("results in ") and "runs" in line for line in lines)
    assert SECRET not in text


def test_colour_follows_the_option_and_no_color(
    invocation: InvocationResult, redactor: Redactor, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "\x1b[" in render(invocation, redactor, color="always")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in render(invocation, redactor, color="auto", stream=FakeTTY())
    monkeypatch.delenv("NO_COLOR")
    assert "\x1b[" in render(invocation, redactor, color="auto", stream=FakeTTY())


def test_plain_progress_lines_when_not_a_terminal(redactor: Redactor) -> None:
    out = io.StringIO()
    reporter = ConsoleReporter(stream=out, redactor=redactor, color="never")
    reporter.started(3)
    retry = _run("a", "error", error=f"refused {SECRET}", final=False)
    reporter.run_finished(retry)
    reporter.run_finished(_run("a", "passed", attempt=2))
    reporter.run_finished(_run("b", "failed"))
    reporter.note("after_each hook failed")
    assert out.getvalue().splitlines() == [
        "RETRY a#1: refused ***",
        "PASS  support / a#1  0.50s",
        "FAIL  support / b#1  0.50s",
        "note: after_each hook failed",
    ]
    colored = io.StringIO()
    reporter = ConsoleReporter(stream=colored, redactor=redactor, color="always")
    reporter.run_finished(_run("a", "passed"))
    reporter.run_finished(_run("b\x1b[2J", "error", error=f"refused {SECRET}", final=False))
    assert colored.getvalue().splitlines() == [
        "\x1b[32mPASS  support / a#1  0.50s\x1b[0m",
        "\x1b[33mRETRY b\\x1b[2J#1: refused ***\x1b[0m",
    ]


def test_quiet_prints_only_problems_and_totals(invocation: InvocationResult, redactor: Redactor) -> None:
    text = render(invocation, redactor, color="never", quiet=True)
    assert "PASS" not in text
    assert "FAIL support / refund [late] (es) (1/2 passed)" in text
    assert "1 passed, 1 failed, 1 error (+1 quarantined)" in text


def test_live_progress_on_a_terminal(redactor: Redactor) -> None:
    out = FakeTTY()
    reporter = ConsoleReporter(stream=out, redactor=redactor, color="never", width=100)
    reporter.started(2)
    reporter.run_finished(_run("a", "passed"))
    reporter._progress.refresh()
    assert "1/2" in out.getvalue() and "1 passed" in out.getvalue()
    reporter.close()


def test_final_line_mentions_interruption_and_budget(invocation: InvocationResult) -> None:
    invocation.interrupted = True
    invocation.budget_exceeded = "model spend $2.10 reached budgets.max_cost_usd $2"
    assert final_line(invocation).endswith(
        "; interrupted; budget exceeded: model spend $2.10 reached budgets.max_cost_usd $2"
    )


def test_transcript_missing_is_not_an_error(
    invocation: InvocationResult, redactor: Redactor, tmp_path: Path
) -> None:
    invocation.run_dir = tmp_path / "gone"
    text = render(invocation, redactor, color="never")
    assert "last 3 turn(s)" not in text


AGENT = "\x1b[2J\x1b]0;owned\x07\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\x1b[8mhidden\x9b31m\u202e\ud800"


def test_what_the_agent_said_reaches_the_terminal_only_as_visible_escapes(
    invocation: InvocationResult, redactor: Redactor
) -> None:
    invocation.tests[1].runs[0].error = f"agent said {AGENT}"
    out = FakeTTY()
    reporter = ConsoleReporter(stream=out, redactor=redactor, color="always", width=400)
    reporter.note(f"hook said {AGENT}")
    reporter.summary(invocation)
    text = out.getvalue()
    for raw in ("\x1b[2J", "\x1b]", "\x07", "\x1b[8m", "\x9b", "\u202e", "\ud800"):
        assert raw not in text, f"{raw!r} reached the terminal"
    shown = r"\x1b[2J\x1b]0;owned\x07\x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\\x1b[8mhidden\x9b31m\u202e\ud800"
    assert f"agent said {shown}" in text and f"hook said {shown}" in text
    assert "\x1b[" in text, "tamesu's own colours still reach it"


def test_failed_only_leaves_passed_tests_and_runs_out(
    invocation: InvocationResult, redactor: Redactor
) -> None:
    text = render(invocation, redactor, color="never", failed_only=True)
    rows = [
        line.split()[0]
        for line in text.splitlines()
        if line.split()[:1] in (["PASS"], ["FAIL"], ["QUAR"], ["ERROR"])
    ]
    assert "PASS" not in rows and {"FAIL", "QUAR", "ERROR"} <= set(rows)
    assert "(1 passed test not shown)" in text
    out = io.StringIO()
    reporter = ConsoleReporter(stream=out, color="never", failed_only=True)
    reporter.run_finished(_run("greets", "passed"))
    reporter.run_finished(_run("refund", "failed"))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("FAIL  support / refund#1")


def test_notes_errors_and_paths_are_never_wrapped_when_not_a_terminal(redactor: Redactor) -> None:
    out = io.StringIO()
    reporter = ConsoleReporter(stream=out, redactor=redactor, color="never")
    long_path = "/tmp/" + "nested-folder/" * 20 + "history.db"
    reporter.note(f"history not recorded: {long_path}: file is not a database")
    assert out.getvalue() == f"note: history not recorded: {long_path}: file is not a database\n"
