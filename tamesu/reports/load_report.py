"""The load report for a person: ``render_load_report`` prints the dict a load test wrote
(``tamesu.load.report_data``) in the console; every string passes through the redactor. It reads the
stored report only, so ``tamesu report`` and the HTML page render old load tests the same way.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from tamesu.reports.cost import cost_line, usd
from tamesu.untrusted import printable

if TYPE_CHECKING:
    from tamesu.secrets import Redactor

__all__ = ["capacity_line", "capacity_table", "gate_text", "render_load_report"]

_LABEL = {
    "turn_latency_ms": "turn latency",
    "response_ms": "response time",
    "time_to_first_audio_ms": "time to first audio",
}


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v:.0f}"


def _rate(v: Any) -> str:
    return "-" if v is None else f"{v * 100:.1f}%"


def gate_text(g: dict[str, Any]) -> str:
    """A gate's measure against its limit, as a person reads it: ``71.6% (at least 50.0%)``."""
    name, actual, limit = str(g.get("name", "")), _number(g.get("actual")), _number(g.get("limit"))
    if name.split("/")[0] in ("pass_rate", "error_rate"):
        least = name.startswith("pass_rate")
        return f"{_rate(actual)} ({'at least' if least else 'at most'} {_rate(limit)})"
    if name == "drift":
        shown = "-" if actual is None else f"{actual:.2f}x"
        return f"{shown} (at most {'-' if limit is None else f'{limit:.2f}x'})"
    if name.startswith("cost"):
        return f"{usd(actual)} (at most {usd(limit)})"
    return f"{_ms(actual)} ms (at most {'-' if limit is None else f'{limit:g}'})"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def render_load_report(
    report: dict[str, Any],
    *,
    color: bool = False,
    stream: TextIO | None = None,
    redactor: Redactor | None = None,
) -> None:
    """The report for a person: totals, percentiles, the windows, per test, then the gates."""
    from tamesu.untrusted import paint, table

    out = stream or sys.stdout

    def say(text: str = "") -> None:
        out.write((redactor.redact(text) if redactor is not None else text) + "\n")

    t = report["totals"]
    o = t["outcomes"]
    say(
        paint(
            f"Load test: {t['calls']} calls in {report['duration_s']:.1f}s ({t['calls_per_s']:.1f} calls/s)",
            "bold",
            color,
        )
    )
    say(
        f"  passed {o.get('passed', 0)}  failed {o.get('failed', 0)}  errors {o.get('error', 0)}"
        f"  quarantined {o.get('quarantined', 0)}  shed {t['shed']}  retried {t['retried']}"
    )
    if report["faults"]:
        say("  errors by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(report["faults"].items())))
    if report.get("capacity_refusals"):
        held = report["capacity_refusals"]
        say(
            f"  the target refused {held['refusals']} call(s) for capacity, holding "
            f"{held['held']} other call(s) at the fewest"
        )
    if report.get("agent_faults"):
        say(
            "  agent faults (retried ones included): "
            + ", ".join(f"{k} {v}" for k, v in sorted(report["agent_faults"].items()))
        )
    for name, s in report["latency"].items():
        if s["count"] and name in _LABEL:
            say(
                f"  {_LABEL[name]} ms: p50 {_ms(s['p50'])}  p95 {_ms(s['p95'])}  p99 {_ms(s['p99'])}  max {_ms(s['max'])}"
            )
    rows = [
        [
            f"{w['start']:.3g}-{w['end']:.3g}s",
            str(w["calls"]),
            f"{w['calls_per_s']:.1f}",
            _rate(w["pass_rate"]),
            _ms(w["turn_latency_ms"]["p50"]),
            _ms(w["turn_latency_ms"]["p95"]),
            _ms(w["time_to_first_audio_ms"]["p95"]),
            ", ".join(f"{k} {v}" for k, v in sorted(w["faults"].items())) or "-",
            ", ".join(f"{k} {v}" for k, v in sorted(w.get("agent_faults", {}).items())) or "-",
        ]
        for w in report["windows"]
    ]
    if rows:
        say()
        say(f"Over time ({report['window_s']:g}s windows):")
        header = [
            "window",
            "calls",
            "calls/s",
            "pass",
            "lat p50",
            "lat p95",
            "audio p95",
            "errors",
            "agent faults",
        ]
        say(table(rows, header=header, color=color))
    tests = [
        [
            f"{x['suite']} / {x['test']}",
            str(x["calls"]),
            _rate(x["pass_rate"]),
            ", ".join(
                f"{n} ({c.get('failed', 0) + c.get('error', 0)})"
                for n, c in x["assertions"].items()
                if c.get("failed") or c.get("error")
            )
            or "-",
        ]
        for x in report["tests"]
    ]
    if tests:
        say()
        say(table(tests, header=["test", "calls", "pass", "failing checks"], color=color))
    if report.get("cost") and report["cost"].get("total_usd"):
        say(cost_line(report["cost"]))
    say()
    say("Gates:")
    for g in report["gates"]:
        mark = paint("PASS", "green", color) if g["passed"] else paint("FAIL", "red", color)
        say(f"  {mark} {printable(str(g['name']))}: {gate_text(g)}  {printable(str(g['detail']))}")
    if report.get("capacity") is not None:
        say()
        say(capacity_table(report["capacity"], color=color))
        say(paint(capacity_line(report["capacity"]), "bold", color))
    if report.get("interrupted"):
        say(paint("interrupted: resume with tamesu load --resume", "yellow", color))
    if report.get("budget_exceeded"):
        say(paint(f"budget exceeded: {report['budget_exceeded']}", "yellow", color))
    if report.get("run_dir"):
        say(f"Results: {report['run_dir']}")


def _gate_name(name: str) -> str:
    return printable(name.removeprefix("slo/"))


def capacity_line(capacity: dict[str, Any]) -> str:
    """The search's answer in one line: ``capacity: 38 calls in flight; turn_latency_ms_p95 broke at 44``."""
    found, broke, stopped = capacity.get("concurrency"), capacity.get("broke"), capacity.get("stopped")
    if stopped == "driver_bound":
        least = capacity.get("at_least")
        at = capacity.get("driver_bound_at")
        bound: dict[str, Any] = next(
            (lv for lv in capacity.get("levels") or [] if lv.get("concurrency") == at), {}
        )
        who = (
            "a Ray worker's"
            if (bound.get("workers_cpu") or 0) >= (bound.get("driver_cpu") or 0)
            else "tamesu's own"
        )
        return (
            f"capacity: not measured: {who} CPU was the limit at {at} calls in flight, not the agent "
            f"(every gate held up to {least if least is not None else 'no level'}); "
            "run the steps on more workers (--ray, --workers, --address)"
        )
    why = f"{_gate_name(broke['gate'])} broke at {broke['concurrency']}" if broke else ""
    if found is None:
        return f"capacity: none: {why or 'no step held'}"
    if not why:
        why = {
            "max_concurrency": "every gate held up to --max-concurrency",
            "max_duration": "the search ran out of time before a gate broke",
        }.get(str(stopped), "no gate broke")
    cut = (
        "; the search ran out of time, the bracket is still open"
        if broke and stopped == "max_duration"
        else ""
    )
    return f"capacity: {found} calls in flight; {why}{cut}"


def capacity_table(capacity: dict[str, Any], *, color: bool = False) -> str:
    """Per step: calls in flight, calls, pass rate and its interval, errors, latency, faults, gates."""
    from tamesu.untrusted import table

    rows = []
    for lv in capacity.get("levels") or []:
        interval = lv.get("pass_interval")
        low_high = f" ({interval[0] * 100:.0f}-{interval[1] * 100:.0f}%)" if interval else ""
        faults = ", ".join(f"{k} {v}" for k, v in sorted((lv.get("agent_faults") or {}).items())) or "-"
        verdict = (
            "held"
            if lv.get("gates_passed")
            else "broke: " + ", ".join(map(_gate_name, lv.get("broke") or []))
        )
        if lv.get("driver_bound"):
            busiest = max(float(lv.get("driver_cpu") or 0), float(lv.get("workers_cpu") or 0))
            verdict = f"tamesu CPU {busiest:.0%}: not the agent's limit"
        rows.append(
            [
                str(lv.get("concurrency")),
                str(lv.get("calls")),
                _rate(lv.get("pass_rate")) + low_high,
                _rate(lv.get("error_rate")),
                _ms(lv.get("turn_latency_ms_p50")),
                _ms(lv.get("turn_latency_ms_p95")),
                _ms(lv.get("turn_latency_ms_p99")),
                printable(faults),
                verdict,
            ]
        )
    header = [
        "in flight",
        "calls",
        "pass (95% CI)",
        "errors",
        "lat p50",
        "lat p95",
        "lat p99",
        "agent faults",
        "gates",
    ]
    return "Capacity search:\n" + table(rows, header=header, color=color)
