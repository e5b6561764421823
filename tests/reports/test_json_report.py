from __future__ import annotations

import json
from pathlib import Path

import pytest

from tamesu.reports.json_report import invocation_dict, summary, write_json
from tamesu.runner.invocation import InvocationResult
from tamesu.secrets import Redactor

from .builders import SECRET

pytestmark = pytest.mark.unit


def test_json_report_holds_tests_runs_and_assertions(
    invocation: InvocationResult, redactor: Redactor, tmp_path: Path
) -> None:
    path = write_json(invocation, tmp_path / "out" / "report.json", redactor=redactor)
    text = path.read_text()
    assert SECRET not in text
    data = json.loads(text)
    assert data["exit_code"] == 1
    assert data["counts"] == {
        "passed": 1,
        "failed": 1,
        "error": 1,
        "quarantined": 1,
        "inconclusive": 0,
        "not_run": 0,
    }
    refund = data["tests"][0]
    assert refund["test_id"] == "refund [late] (es)"
    assert refund["verdict"] == "failed"
    assert refund["pass_count"] == "1/2 passed"
    assert [r["outcome"] for r in refund["runs"]] == ["passed", "failed"]
    assert refund["runs"][1]["assertions"][0]["expected"] == "30 days"
    assert refund["runs"][1]["assertions"][0]["actual"] == "key *** & <b>90 days</b>"
    assert data["tests"][1]["runs"][0]["error"] == "connection refused at http://127.0.0.1:9/***"
    assert data["settings"]["argv"] == ["tamesu", "run"]


def test_summary_leaves_the_runs_out(invocation: InvocationResult) -> None:
    data = summary(invocation)
    assert "runs" not in data["tests"][0]
    assert data["tests"][3]["pass_count"] == "3/3 passed, threshold 0.67"
    assert data["runs"] == 5
    assert "runs" in invocation_dict(invocation, redactor=Redactor())["tests"][0]
