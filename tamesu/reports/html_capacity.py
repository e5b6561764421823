"""The HTML report's view of a capacity search: latency and pass rate against calls in flight.

The knee is marked on both charts (the capacity, and the level where the first gate broke), and
a table holds each step's figures. The numbers come from load-report.json's ``capacity``; every
label is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any

from tamesu.reports.html_charts import line_chart
from tamesu.reports.load_report import capacity_line

__all__ = ["capacity_section"]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _pct(value: Any) -> str:
    v = _num(value)
    return "-" if v is None else f"{v * 100:.1f}%"


def _ms(value: Any) -> str:
    v = _num(value)
    return "-" if v is None else f"{v:.0f}"


def capacity_section(capacity: dict[str, Any]) -> str:
    """The answer in one line, the two charts with the knee marked, and the steps."""
    levels = sorted(
        (lv for lv in capacity.get("levels") or [] if isinstance(lv, dict) and _num(lv.get("concurrency"))),
        key=lambda lv: float(lv["concurrency"]),
    )
    marks: list[tuple[float, str]] = []
    if _num(capacity.get("concurrency")) is not None:
        marks.append((float(capacity["concurrency"]), f"capacity {capacity['concurrency']}"))
    broke = capacity.get("broke")
    if isinstance(broke, dict) and _num(broke.get("concurrency")) is not None:
        marks.append((float(broke["concurrency"]), f"broke {broke['concurrency']}"))
    xs = [float(lv["concurrency"]) for lv in levels]
    latency = {
        p: [(x, _num(lv.get(f"turn_latency_ms_{p}"))) for x, lv in zip(xs, levels)]
        for p in ("p50", "p95", "p99")
    }
    rates = {
        "pass rate": [
            (x, None if (r := _num(lv.get("pass_rate"))) is None else r * 100) for x, lv in zip(xs, levels)
        ]
    }
    rows = "".join(
        f'<tr><td class="num">{escape(str(lv.get("concurrency")))}</td><td class="num">{escape(str(lv.get("calls")))}</td>'
        f"<td>{_pct(lv.get('pass_rate'))}{_interval(lv.get('pass_interval'))}</td><td>{_pct(lv.get('error_rate'))}</td>"
        f"<td>{_ms(lv.get('turn_latency_ms_p50'))}</td><td>{_ms(lv.get('turn_latency_ms_p95'))}</td>"
        f"<td>{_ms(lv.get('turn_latency_ms_p99'))}</td><td>{escape(_faults(lv.get('agent_faults')))}</td>"
        f'<td class="verdict {"v-passed" if lv.get("gates_passed") else "v-failed"}">'
        f"{'held' if lv.get('gates_passed') else escape('broke: ' + ', '.join(map(str, lv.get('broke') or [])))}</td></tr>"
        for lv in levels
    )
    return (
        f'<div id="capacity"><h3>Capacity</h3><p class="meta">{escape(capacity_line(capacity))}</p>'
        + line_chart("Turn latency (ms) by calls in flight", latency, x_label="calls in flight", marks=marks)
        + line_chart(
            "Pass rate (%) by calls in flight", rates, x_label="calls in flight", y_max=100, marks=marks
        )
        + "<table><thead><tr><th>in flight</th><th>calls</th><th>pass (95% CI)</th><th>errors</th>"
        "<th>lat p50</th><th>lat p95</th><th>lat p99</th><th>agent faults</th><th>gates</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


def _interval(value: Any) -> str:
    if isinstance(value, list) and len(value) == 2 and all(_num(v) is not None for v in value):
        return f" ({float(value[0]) * 100:.0f}–{float(value[1]) * 100:.0f}%)"
    return ""


def _faults(value: Any) -> str:
    if not isinstance(value, dict):
        return "-"
    return ", ".join(f"{k} {v}" for k, v in sorted(value.items())) or "-"
