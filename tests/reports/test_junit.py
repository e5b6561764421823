from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tamesu.assertions import AssertionContext, evaluate
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.reports.junit import assertion_line, write_junit
from tamesu.runner.invocation import InvocationResult
from tamesu.secrets import Redactor
from tamesu.templates import Scope

from .builders import SECRET

pytestmark = pytest.mark.unit


def parse(invocation: InvocationResult, redactor: Redactor, tmp_path: Path) -> tuple[str, ET.Element]:
    path = write_junit(invocation, tmp_path / "reports" / "junit.xml", redactor=redactor)
    text = path.read_text(encoding="utf-8")
    return text, ET.fromstring(text.encode())


def test_one_testsuite_per_suite_with_counts(
    invocation: InvocationResult, redactor: Redactor, tmp_path: Path
) -> None:
    _, root = parse(invocation, redactor, tmp_path)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "4",
        "1",
        "1",
        "1",
    )
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "support"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "4",
        "1",
        "1",
        "1",
    )
    for attr in ("time", "timestamp", "hostname", "id"):
        assert suite.get(attr)
    assert [c.get("name") for c in suite.findall("testcase")] == [
        "refund [late] (es)",
        "order status",
        "flaky",
        "greets",
    ]
    for case in suite.findall("testcase"):
        assert case.get("classname") == "support"
        float(case.get("time") or "x")


def test_failure_error_and_skipped_elements(
    invocation: InvocationResult, redactor: Redactor, tmp_path: Path
) -> None:
    _, root = parse(invocation, redactor, tmp_path)
    cases = {c.get("name"): c for c in root.iter("testcase")}

    failure = cases["refund [late] (es)"].find("failure")
    assert failure is not None and cases["refund [late] (es)"].find("error") is None
    assert failure.get("message", "").startswith(
        "contains: expected '30 days', seen 'key *** & <b>90 days</b>'"
    )
    assert "run 2: contains:" in (failure.text or "")
    out = cases["refund [late] (es)"].find("system-out")
    assert out is not None and (out.text or "").startswith("1/2 passed\nrun 1: passed")

    error = cases["order status"].find("error")
    assert error is not None and cases["order status"].find("failure") is None
    assert error.get("message") == "connection refused at http://127.0.0.1:9/***"

    skipped = cases["flaky"].find("skipped")
    assert skipped is not None and skipped.get("message") == "quarantined: SUP-412 flaky"
    assert cases["flaky"].find("failure") is None

    greets = cases["greets"]
    assert [child.tag for child in greets] == ["system-out"]
    assert (greets.find("system-out").text or "").startswith("3/3 passed, threshold 0.67")  # type: ignore[union-attr]


def test_children_come_in_schema_order_and_nothing_secret_is_written(
    invocation: InvocationResult, redactor: Redactor, tmp_path: Path
) -> None:
    text, root = parse(invocation, redactor, tmp_path)
    assert SECRET not in text
    assert text.startswith("<?xml version='1.0' encoding='utf-8'?>")
    order = {"skipped": 0, "error": 0, "failure": 0, "system-out": 1, "system-err": 2}
    for case in root.iter("testcase"):
        ranks = [order[child.tag] for child in case]
        assert ranks == sorted(ranks)
        assert sum(1 for child in case if child.tag in ("skipped", "error", "failure")) <= 1


def test_characters_xml_cannot_hold_are_written_as_visible_escapes(
    invocation: InvocationResult, tmp_path: Path
) -> None:
    invocation.tests[1].runs[0].error = "bad byte \x00\x1b[31m here \ud800"
    _, root = parse(invocation, Redactor(), tmp_path)
    error = next(c for c in root.iter("testcase") if c.get("name") == "order status").find("error")
    assert error is not None and error.get("message") == "bad byte \\x00\\x1b[31m here \\ud800"


@pytest.mark.parametrize(
    ("kind", "spec"),
    [("contains", "30 days"), ("not_contains", "ninety"), ("not_regex", "nin(e)ty"), ("regex", r"\b30\b")],
)
async def test_a_failed_assertion_line_quotes_the_agent_turn_once(kind: str, spec: str) -> None:
    said = "Our return window is ninety days, friend."
    transcript = Transcript(turns=[Turn(role="user", text="hi"), Turn(role="agent", text=said, index=1)])
    result = await evaluate(kind, spec, AssertionContext(transcript=transcript, scope=Scope()))
    line = assertion_line(result)
    assert not result.passed and line.count("ninety days") == 1, line


async def test_a_failed_metric_line_shows_the_value_rounded_once() -> None:
    transcript = Transcript(metrics={"response_ms_p95": 1234.56789})
    spec = {"name": "response_ms_p95", "lt": 1000}
    result = await evaluate("metric", spec, AssertionContext(transcript=transcript, scope=Scope()))
    assert assertion_line(result) == "metric: expected 'response_ms_p95 < 1000', seen 1234.57"
