"""``--junit PATH``: JUnit XML as Jenkins, GitLab and GitHub test reporters read it.

One ``<testsuite>`` per suite and one ``<testcase>`` per expanded test: repeats are folded into
the test's verdict, with the pass count and each run's outcome in ``<system-out>``. A failed test
carries ``<failure>`` (the assertion messages), an infrastructure error ``<error>``, a quarantined
or unrun test ``<skipped>``, and so does a test whose checks were all skipped or that a judge could
not tell (inconclusive). A test with only some checks skipped or inconclusive carries them as
``skipped_checks`` / ``inconclusive_checks`` properties and in ``<system-out>``. Everything
written passes through the redactor.
"""

from __future__ import annotations

import os
import socket
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tamesu.untrusted import xml_text

if TYPE_CHECKING:
    from tamesu.kernel.outcome import AssertionResult, RunResult
    from tamesu.runner.invocation import InvocationResult
    from tamesu.runner.verdict import TestVerdict
    from tamesu.secrets import Redactor

__all__ = ["all_skipped", "assertion_line", "junit_xml", "write_junit"]

_SHORT = 200


def _clean(text: str, redactor: Redactor | None) -> str:
    return xml_text(redactor.redact(text) if redactor else text)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."


def assertion_line(a: AssertionResult) -> str:
    """``contains: expected '30 days', seen 'no idea' (message)``: one failed assertion in one line
    (what the agent said once: a message that quotes it already leaves out the ``seen``)."""
    seen = []
    if a.expected is not None:
        seen.append(f"expected {_short(a.expected)}")
    if a.actual is not None and not (isinstance(a.actual, str) and a.actual and a.actual in a.message):
        seen.append(f"seen {_short(a.actual)}")
    state = a.state
    word = f"{state}: " if state in ("skipped", "inconclusive") else ""
    text = f"{a.name}: {word}{', '.join(seen)}"
    if a.message:
        text += f" ({a.message})" if seen else a.message
    return text


def _run_label(r: RunResult) -> str:
    label = f"run {r.repeat_index + 1}"
    return label + (f" (attempt {r.attempt})" if r.attempt > 1 else "")


def _details(t: TestVerdict) -> tuple[str, str]:
    """(message, text) of the failure or error element."""
    lines: list[str] = []
    first = ""
    for r in sorted(t.runs, key=lambda r: r.repeat_index):
        if r.error:
            lines.append(f"{_run_label(r)}: error: {r.error}")
            first = first or r.error
        for a in r.assertions:
            if a.state in ("failed", "error") or (a.inconclusive and r.outcome == "failed"):
                line = assertion_line(a)
                lines.append(f"{_run_label(r)}: {line}")
                first = first or line
    return first.splitlines()[0] if first else t.verdict, "\n".join(lines)


def _system_out(t: TestVerdict) -> str:
    lines = [t.pass_count]
    if t.rate_text:
        lines.append(f"pass rate {t.rate_text}")
    if t.note:
        lines.append(f"note: {t.note}")
    for r in sorted(t.runs, key=lambda r: r.repeat_index):
        line = f"{_run_label(r)}: {r.outcome} in {r.duration:.2f}s, {r.turns} agent turn(s)"
        if r.transcript_file:
            line += f", transcript {r.transcript_file}"
        lines.append(line)
    for name, why in t.skipped_checks.items():
        lines.append(f"skipped: {name}: {why}")
    for name, why in t.inconclusive_checks.items():
        lines.append(f"inconclusive: {name}: {why}")
    return "\n".join(lines)


def all_skipped(t: TestVerdict) -> bool:
    """Every check of every run was skipped: nothing about the agent was checked."""
    checks = [a for r in t.runs for a in r.assertions]
    return bool(checks) and all(a.skipped for a in checks)


def _properties(case: ET.Element, t: TestVerdict) -> None:
    """A repeated test's statistics, and the checks left unchecked, as testcase properties (CI
    dashboards read them)."""
    values: dict[str, str] = {}
    if t.spent >= 2 and t.interval is not None:
        values = {
            "pass_rate": f"{t.passed / t.spent:.4f}",
            "pass_rate_low": f"{t.interval[0]:.4f}",
            "pass_rate_high": f"{t.interval[1]:.4f}",
            "confidence": f"{t.confidence:g}",
            "runs": str(t.spent),
            **{f"pass^{k}": f"{v:.4f}" for k, v in sorted(t.pass_hat.items())},
        }
    if t.skipped_checks:
        values["skipped_checks"] = ", ".join(t.skipped_checks)
    if t.inconclusive_checks:
        values["inconclusive_checks"] = ", ".join(t.inconclusive_checks)
    if not values:
        return
    props = ET.SubElement(case, "properties")
    for name, value in values.items():
        ET.SubElement(props, "property", name=name, value=value)


def _skip_reason(t: TestVerdict) -> str:
    if t.verdict == "quarantined":
        return f"quarantined: {t.quarantine}"
    if t.verdict == "not_run":
        return "not run"
    if t.verdict == "inconclusive":
        name, why = next(iter(t.inconclusive_checks.items()), ("", ""))
        return f"inconclusive: {name}: {why}" if name else "inconclusive"
    name, why = next(iter(t.skipped_checks.items()))
    return f"every check skipped: {name}: {why}"


def junit_xml(result: InvocationResult, *, redactor: Redactor | None = None) -> ET.Element:
    """The ``<testsuites>`` element of an invocation."""
    root = ET.Element("testsuites", name="tamesu")
    stamp = datetime.fromtimestamp(result.started_at or 0, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    host = socket.gethostname()
    by_suite: dict[str, list[TestVerdict]] = {}
    for t in result.tests:
        by_suite.setdefault(t.suite, []).append(t)
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    total_time = 0.0
    for index, (suite, tests) in enumerate(by_suite.items()):
        node = ET.SubElement(root, "testsuite", name=_clean(suite, redactor), id=str(index), timestamp=stamp)
        node.set("hostname", host)
        stats = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
        suite_time = 0.0
        for t in tests:
            stats["tests"] += 1
            suite_time += t.duration
            case = ET.SubElement(
                node, "testcase", name=_clean(t.test_id, redactor), classname=_clean(suite, redactor)
            )
            case.set("time", f"{t.duration:.3f}")
            _properties(case, t)
            if t.verdict == "failed":
                stats["failures"] += 1
                message, text = _details(t)
                el = ET.SubElement(case, "failure", message=_clean(message, redactor), type="AssertionFailed")
                el.text = _clean(text, redactor)
            elif t.verdict == "error":
                stats["errors"] += 1
                message, text = _details(t)
                el = ET.SubElement(
                    case, "error", message=_clean(message, redactor), type="InfrastructureError"
                )
                el.text = _clean(text, redactor)
            elif t.verdict in ("quarantined", "not_run", "inconclusive") or (
                t.verdict == "passed" and all_skipped(t)
            ):
                stats["skipped"] += 1
                ET.SubElement(case, "skipped", message=_clean(_skip_reason(t), redactor))
            out = ET.SubElement(case, "system-out")
            out.text = _clean(_system_out(t), redactor)
        for key, value in stats.items():
            node.set(key, str(value))
            totals[key] += value
        node.set("time", f"{suite_time:.3f}")
        total_time += suite_time
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    return root


def write_junit(
    result: InvocationResult, path: str | os.PathLike[str], *, redactor: Redactor | None = None
) -> Path:
    """Write the JUnit XML file (parent folders are made); returns the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tree = ET.ElementTree(junit_xml(result, redactor=redactor))
    ET.indent(tree)
    tmp = out.with_name(f".{out.name}.tmp")
    tree.write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, out)
    return out
