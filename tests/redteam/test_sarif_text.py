"""SARIF text is what code scanning can show: an agent's evidence with NUL, escapes or C1 controls
is written with them as visible escapes, not raw characters."""

from __future__ import annotations

import json
import re

import pytest

from tamesu.kernel.outcome import Finding, RunResult
from tamesu.reports.sarif import sarif_log
from tamesu.runner.invocation import InvocationResult

pytestmark = pytest.mark.unit


def test_message_text_holds_no_control_characters() -> None:
    finding = Finding(
        playbook="pb", attack="a", rule="pb/a", severity="high", detector="leak\x00",
        evidence="secret \x00 nul \x1b[2J clear \x9b31m csi", tactic="t\x07", suite="s", run_id="r",
    )  # fmt: skip
    run = RunResult(
        run_id="r", test_id="t", test_name="t", suite="s", target="api", outcome="failed", findings=[finding]
    )
    log = sarif_log(InvocationResult(exit_code=1, tests=[], results=[run]))
    [result] = log["runs"][0]["results"]
    text = result["message"]["text"]
    assert re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f]", json.dumps(log, ensure_ascii=False)) == []
    assert "secret \\x00 nul \\x1b[2J clear \\x9b31m csi" in text
