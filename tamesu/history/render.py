"""``tamesu diff`` output: text for a terminal, Markdown for a pull request comment, and JSON.

Test names come from suites and ids from the history; text output passes them through
``printable`` and Markdown escapes its table characters, so a test name cannot break either.
"""

from __future__ import annotations

import time
from typing import Any

from tamesu.history.changes import Comparison, MetricChange, TestChange
from tamesu.history.grid_changes import grid_json, grid_lines
from tamesu.history.store import Invocation, TestRow
from tamesu.stats import Difference
from tamesu.untrusted import printable

__all__ = ["checks_skipped", "comparison_json", "comparison_markdown", "comparison_text", "describe"]

_TITLES = {
    "regression": "Regressions",
    "fix": "Fixes",
    "rate": "Pass-rate changes",
    "new": "New tests",
    "removed": "Removed tests",
    "unselected": "Not selected in the new run",
}


def describe(inv: Invocation) -> str:
    """``#12 main@1a2b3c4 2026-12-01 14:30`` (what is known of it)."""
    parts = [f"#{inv.id}" if inv.id is not None else (inv.run_dir or "run")]
    if inv.git_branch or inv.git_commit:
        where = inv.git_branch or ""
        if inv.git_commit:
            where += f"@{inv.git_commit[:7]}" + ("+" if inv.git_dirty else "")
        parts.append(where)
    if inv.started_at:
        parts.append(time.strftime("%Y-%m-%d %H:%M", time.localtime(inv.started_at)))
    return " ".join(parts)


def _value(v: float, unit: str, *, sign: bool = False) -> str:
    plus = "+" if sign and v > 0 else ""
    if unit == "ms":
        return f"{plus}{v:.0f} ms"
    if unit == "USD":
        return f"{'+' if sign and v > 0 else ('-' if v < 0 else '')}${abs(v):.4f}"
    return f"{plus}{v:.2f} {unit}"


def _interval(d: Difference, unit: str) -> str:
    conf = f"{d.confidence:.0%} CI"
    if unit == "pts":
        return f"{d.estimate * 100:+.0f} pts ({conf} {d.low * 100:+.0f} to {d.high * 100:+.0f})"
    return f"{_value(d.estimate, unit, sign=True)} ({conf} {_value(d.low, unit, sign=True)} to {_value(d.high, unit, sign=True)})"


def _side(t: TestRow | None) -> str:
    return "-" if t is None else f"{t.verdict} {t.passed}/{t.runs}"


def _change_line(c: TestChange) -> str:
    if c.kind == "new":
        return f"{c.name}: {_side(c.b)}"
    if c.kind in ("removed", "unselected"):
        return f"{c.name}: was {_side(c.a)}"
    text = f"{c.name}: {_side(c.a)} -> {_side(c.b)}"
    if c.rate is not None:
        text += f"; pass rate {_interval(c.rate, 'pts')}, {'significant' if c.rate.significant else 'not significant'}"
    return text


def _metric_line(m: MetricChange) -> str:
    rel = f" ({m.relative:+.0%})" if m.relative is not None else ""
    text = f"{m.name}: {_value(m.a_mean, m.unit)} -> {_value(m.b_mean, m.unit)}{rel} over {m.tests} test(s)"
    if m.diff is not None:
        text += f"; {_interval(m.diff, m.unit)}, {'significant' if m.diff.significant else 'not significant'}"
    else:
        text += "; too few tests for an interval"
    return text


def comparison_text(c: Comparison) -> str:
    lines = [f"tamesu diff: {describe(c.a)} -> {describe(c.b)}", f"suites: {', '.join(c.b.suites)}"]
    for kind, title in _TITLES.items():
        items = c.of(kind)
        if kind == "unselected" and not items:
            continue
        lines.append("")
        lines.append(f"{title}: {len(items) or 'none'}")
        lines += [f"  {_change_line(item)}" for item in items]
    lines += [
        "",
        "Latency and cost (means over the tests both ran):" if c.metrics else "Latency and cost: no metrics",
    ]
    for m in c.metrics:
        lines.append(f"  {_metric_line(m)}")
        lines += [f"    {name}: {_interval(d, m.unit)}" for name, d in m.per_test]
    lines += ["", f"Flaky: {len(c.flaky) or 'none'}"]
    lines += [f"  {name}: {why}" for name, why in c.flaky]
    if (skipped := checks_skipped(c)) is not None:
        lines += [
            "",
            f"Checks skipped: {skipped[0]} -> {skipped[1]} (not evaluated: a model, key or extra was missing)",
        ]
    lines += grid_lines(c.grid)
    return "\n".join(printable(line) for line in lines) + "\n"


def checks_skipped(c: Comparison) -> tuple[int, int] | None:
    """(before, after) counts of checks that were not evaluated; None when neither side had any."""
    a, b = (int(inv.summary.get("checks_skipped") or 0) for inv in (c.a, c.b))
    return (a, b) if a or b else None


def _md(text: str) -> str:
    return printable(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def comparison_markdown(c: Comparison) -> str:
    """A pull request comment: the headline, then a section per kind of change."""
    regressions, fixes = c.of("regression"), c.of("fix")
    head = "**No regressions.**" if not regressions else f"**{len(regressions)} regression(s).**"
    lines = [
        f"### tamesu: {_md(describe(c.a))} → {_md(describe(c.b))}",
        "",
        f"{head} {len(fixes)} fix(es), {len(c.of('new'))} new, {len(c.of('removed'))} removed, "
        f"{len(c.flaky)} flaky.",
    ]
    for kind, title in _TITLES.items():
        items = c.of(kind)
        if items:
            lines += ["", f"#### {title}", ""]
            lines += [f"- {_md(_change_line(item))}" for item in items]
    if c.metrics:
        lines += [
            "",
            "#### Latency and cost",
            "",
            "| metric | before | after | change |",
            "|---|---|---|---|",
        ]
        for m in c.metrics:
            change = _interval(m.diff, m.unit) if m.diff is not None else "too few tests"
            if m.diff is not None and m.diff.significant:
                change = f"**{change}**"
            lines.append(
                f"| {_md(m.name)} | {_value(m.a_mean, m.unit)} | {_value(m.b_mean, m.unit)} | {_md(change)} |"
            )
    if c.flaky:
        lines += ["", "#### Flaky", ""]
        lines += [f"- {_md(name)}: {_md(why)}" for name, why in c.flaky]
    if c.grid:
        lines += ["", "#### Grid", ""]
        lines += [f"- {_md(line.strip())}" for line in grid_lines(c.grid)[2:]]
    return "\n".join(lines) + "\n"


def _diff(d: Difference | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"estimate": d.estimate, "low": d.low, "high": d.high, "significant": d.significant}


def comparison_json(c: Comparison) -> dict[str, Any]:
    return {
        "a": {
            "id": c.a.id,
            "run_dir": c.a.run_dir,
            "git_commit": c.a.git_commit,
            "git_branch": c.a.git_branch,
        },
        "b": {
            "id": c.b.id,
            "run_dir": c.b.run_dir,
            "git_commit": c.b.git_commit,
            "git_branch": c.b.git_branch,
        },
        "changes": [
            {
                "kind": ch.kind,
                "suite": ch.suite,
                "test_id": ch.test_id,
                "before": None
                if ch.a is None
                else {"verdict": ch.a.verdict, "passed": ch.a.passed, "runs": ch.a.runs},
                "after": None
                if ch.b is None
                else {"verdict": ch.b.verdict, "passed": ch.b.passed, "runs": ch.b.runs},
                "pass_rate_change": _diff(ch.rate),
            }
            for ch in c.changes
        ],
        "metrics": [
            {
                "name": m.name,
                "unit": m.unit,
                "before": m.a_mean,
                "after": m.b_mean,
                "tests": m.tests,
                "change": _diff(m.diff),
                "significant_tests": [{"test": name, **(_diff(d) or {})} for name, d in m.per_test],
            }
            for m in c.metrics
        ],
        "flaky": [{"test": name, "why": why} for name, why in c.flaky],
        "selection": c.b.selection,
        "checks_skipped": dict(zip(("before", "after"), checks_skipped(c) or (0, 0), strict=True)),
        **({"grid": grid_json(c.grid)} if c.grid else {}),
    }
