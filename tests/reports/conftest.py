"""An invocation built by hand (failed, error, quarantined and passed tests) for the reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.kernel.outcome import AssertionResult
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.runner.invocation import InvocationResult
from tamesu.runner.results import ResultsStore
from tamesu.runner.verdict import TestVerdict, exit_code
from tamesu.secrets import Redactor

from .builders import SECRET
from .builders import run_result as _run


@pytest.fixture
def redactor() -> Redactor:
    r = Redactor()
    r.add(SECRET)
    return r


@pytest.fixture
def invocation(tmp_path: Path, redactor: Redactor) -> InvocationResult:
    store = ResultsStore.create(tmp_path / "runs", suites=["support"], settings={"argv": ["tamesu", "run"]})
    wrong = AssertionResult(
        name="contains",
        kind="contains",
        passed=False,
        expected="30 days",
        actual=f"key {SECRET} & <b>90 days</b>",
    )
    failing = _run("refund [late] (es)", "failed", repeat=1, assertions=[wrong])
    transcript = Transcript(
        run_id=failing.run_id,
        turns=[
            Turn(role="user", text="hello"),
            Turn(role="agent", text="hi, how can I help?"),
            Turn(role="user", text="can I return shoes after 40 days?"),
            Turn(role="agent", text=f"yes, within 90 days (token {SECRET})"),
        ],
    )
    store.write_transcript(failing, transcript, redactor)
    tests = [
        TestVerdict(
            "support",
            "refund [late] (es)",
            "refund",
            "api",
            "failed",
            1,
            2,
            1.0,
            duration=1.0,
            runs=[_run("refund [late] (es)", "passed", assertions=[]), failing],
        ),
        TestVerdict(
            "support",
            "order status",
            "order status",
            "api",
            "error",
            0,
            1,
            1.0,
            runs=[_run("order status", "error", error=f"connection refused at http://127.0.0.1:9/{SECRET}")],
        ),
        TestVerdict(
            "support",
            "flaky",
            "flaky",
            "api",
            "quarantined",
            0,
            1,
            1.0,
            quarantine="SUP-412 flaky",
            runs=[_run("flaky", "quarantined", quarantine="SUP-412 flaky")],
        ),
        TestVerdict(
            "support", "greets", "greets", "api", "passed", 3, 3, 0.67, runs=[_run("greets", "passed")]
        ),
    ]
    return InvocationResult(
        exit_code=exit_code(tests),
        tests=tests,
        results=[r for t in tests for r in t.runs],
        run_dir=store.dir,
        suites=["support"],
        started_at=1_700_000_000.0,
        duration=2.0,
        settings={"argv": ["tamesu", "run"], "started_at": "2023-11-14T22:13:20+00:00"},
    )
