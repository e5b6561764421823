"""Repeated tests show their pass rate's interval and pass^k in every report."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import msgspec
import pytest

from tamesu.reports.console import ConsoleReporter
from tamesu.reports.json_report import invocation_dict
from tamesu.reports.junit import junit_xml
from tamesu.runner.invocation import InvocationResult
from tamesu.runner.rates import RateRule
from tamesu.runner.verdict import exit_code, verdicts

from ..runner.test_scheduler import make_spec
from .builders import run_result

pytestmark = pytest.mark.unit


@pytest.fixture
def repeated() -> InvocationResult:
    specs = [make_spec("refund", repeat=i, repeats=5, pass_threshold=0.6, suite="support") for i in range(5)]
    specs += [make_spec("greets", suite="support")]
    results = [run_result("refund", "failed" if i == 2 else "passed", repeat=i) for i in range(5)]
    results.append(msgspec.structs.replace(run_result("greets", "passed"), run_id="greets"))
    tests = verdicts(specs, results, rule=RateRule(pass_k=(3,)))
    return InvocationResult(exit_code=exit_code(tests), tests=tests, results=results, suites=["support"])


def test_console_shows_the_rate_with_its_interval_next_to_the_count(repeated: InvocationResult) -> None:
    out = io.StringIO()
    ConsoleReporter(stream=out, color="never", width=160).summary(repeated)
    row = next(line for line in out.getvalue().splitlines() if "refund" in line)
    assert "4/5 passed" in row and "80% (95% CI 38%-96%), pass^3 0.40" in row


def test_json_carries_rate_interval_and_pass_hat_k(repeated: InvocationResult) -> None:
    data = invocation_dict(repeated)
    refund = next(t for t in data["tests"] if t["test_id"] == "refund")
    assert refund["pass_rate"] == 0.8 and refund["interval"] == pytest.approx([0.3755, 0.9638], abs=1e-4)
    assert refund["pass_hat_k"] == {"3": 0.4} and refund["spent"] == 5 and refund["stopped"] is None
    greets = next(t for t in data["tests"] if t["test_id"] == "greets")
    assert greets["pass_hat_k"] == {} and greets["interval"] == pytest.approx([0.2065, 1.0], abs=1e-4)


def test_junit_carries_them_as_properties_and_in_system_out(repeated: InvocationResult) -> None:
    root = junit_xml(repeated)
    case = root.find(".//testcase[@name='refund']")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props == {
        "pass_rate": "0.8000",
        "pass_rate_low": "0.3755",
        "pass_rate_high": "0.9638",
        "confidence": "0.95",
        "runs": "5",
        "pass^3": "0.4000",
    }
    out = case.find("system-out")
    assert out is not None and "pass rate 80% (95% CI 38%-96%), pass^3 0.40" in (out.text or "")
    single = root.find(".//testcase[@name='greets']")
    assert single is not None and single.find("properties") is None
    ET.tostring(root)
