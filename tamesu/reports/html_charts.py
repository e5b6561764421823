"""Inline SVG charts for the HTML report: a load test's percentiles and throughput over time.

Drawn here as plain SVG text (no charting library, nothing fetched when the page is viewed).
Every label passes through ``html.escape``; the numbers come from load-report.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from tamesu.reports.cost import cost_fact
from tamesu.reports.load_report import gate_text

__all__ = ["line_chart", "load_section"]

_COLOURS = ("#2f6fde", "#e07b00", "#cf222e", "#1a7f37", "#8250df")
_W, _H = 1000, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 14, 40

_SERIES = {
    "turn_latency_ms": "Turn latency (ms)",
    "response_ms": "Response time (ms)",
    "time_to_first_audio_ms": "Time to first audio (ms)",
}

Point = tuple[float, "float | None"]


def _nice(top: float) -> float:
    """A round axis maximum at or above ``top``."""
    if top <= 0:
        return 1.0
    step = 10 ** math.floor(math.log10(top))
    for m in (1, 2, 2.5, 5, 10):
        if m * step >= top:
            return m * step
    return 10 * step


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 or v == int(v) else f"{v:.2g}"


def line_chart(
    title: str,
    series: Mapping[str, Sequence[Point]],
    *,
    x_label: str = "seconds",
    y_max: float | None = None,
    marks: Sequence[tuple[float, str]] = (),
) -> str:
    """One chart: a line per series (gaps where a value is None), axes, ticks and a legend;
    ``marks`` are labelled vertical lines (a capacity search's knee)."""
    xs = [x for pts in series.values() for x, _ in pts]
    ys = [y for pts in series.values() for _, y in pts if y is not None]
    if not xs or not ys:
        return ""
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1
    top = y_max if y_max is not None else _nice(max(ys) * 1.05)
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + (x - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return _TOP + plot_h - min(y, top) / top * plot_h

    out = [f'<svg viewBox="0 0 {_W} {_H}" role="img" aria-label="{escape(title)}">']
    for i in range(5):
        value = top * i / 4
        y = py(value)
        out.append(f'<line x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e8ec"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#5f6b7a">{_fmt(value)}</text>')  # fmt: skip
    for i in range(6):
        x = x0 + (x1 - x0) * i / 5
        out.append(
            f'<text x="{px(x):.1f}" y="{_H - _BOTTOM + 16}" text-anchor="middle" font-size="11" '
            f'fill="#5f6b7a">{_fmt(x)}</text>'
        )
    out.append(
        f'<text x="{_LEFT + plot_w / 2:.0f}" y="{_H - 6}" text-anchor="middle" font-size="11" '
        f'fill="#5f6b7a">{escape(x_label)}</text>'
    )
    for x, label in marks:
        if x0 <= x <= x1:
            out.append(
                f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{_TOP}" y2="{_TOP + plot_h}" stroke="#5f6b7a" '
                f'stroke-dasharray="4 3"/><text x="{px(x) + 4:.1f}" y="{_TOP + 18}" font-size="11" '
                f'fill="#1d232b">{escape(label)}</text>'
            )
    for n, (name, pts) in enumerate(series.items()):
        colour = _COLOURS[n % len(_COLOURS)]
        for run in _runs(pts):
            coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in run)
            if len(run) == 1:
                x, y = run[0]
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
            else:
                out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        lx = _LEFT + 10 + n * 110
        out.append(f'<rect x="{lx}" y="{_TOP}" width="12" height="3" fill="{colour}"/>')
        out.append(f'<text x="{lx + 16}" y="{_TOP + 5}" font-size="11" fill="#1d232b">{escape(name)}</text>')
    out.append("</svg>")
    return f'<div class="chart"><h4>{escape(title)}</h4>{"".join(out)}</div>'


def _runs(points: Sequence[Point]) -> list[list[tuple[float, float]]]:
    """Consecutive points with values (a None breaks the line)."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if y is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((x, y))
    return [r for r in runs if r]


def load_section(report: dict[str, Any]) -> str:
    """The load test's totals, its gates, and its percentiles and throughput per window."""
    windows = [w for w in report.get("windows") or [] if isinstance(w, dict)]
    totals = report.get("totals") or {}
    outcomes = totals.get("outcomes") or {}
    parts = ['<section id="load"><h2>Load test</h2>']
    parts.append(
        '<p class="meta">'
        f"{escape(str(totals.get('calls', 0)))} calls in {float(report.get('duration_s') or 0):.1f}s "
        f"({float(totals.get('calls_per_s') or 0):.1f} calls/s): "
        + ", ".join(f"{escape(str(k))} {escape(str(v))}" for k, v in sorted(outcomes.items()))
        + "</p>"
    )
    if cost_fact(report.get("cost")):
        parts.append(f'<p class="meta">{escape(cost_fact(report.get("cost")))}</p>')
    gates = report.get("gates") or []
    if gates:
        rows = "".join(
            f'<tr><td class="verdict {"v-passed" if g.get("passed") else "v-failed"}">'
            f"{'PASS' if g.get('passed') else 'FAIL'}</td><td>{escape(str(g.get('name', '')))}</td>"
            f"<td>{escape(gate_text(g))}</td><td>{escape(str(g.get('detail', '')))}</td></tr>"
            for g in gates
        )
        parts.append(
            "<table><thead><tr><th>gate</th><th>name</th><th>measured (limit)</th><th>detail</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    for key, title in _SERIES.items():
        series = {
            p: [(float(w.get("start", 0)), (w.get(key) or {}).get(p)) for w in windows]
            for p in ("p50", "p95", "p99")
        }
        parts.append(line_chart(title, series))
    parts.append(
        line_chart(
            "Throughput (calls/s)",
            {"calls/s": [(float(w.get("start", 0)), w.get("calls_per_s")) for w in windows]},
        )
    )
    rates = [(float(w.get("start", 0)), _pct(w.get("pass_rate"))) for w in windows]
    parts.append(line_chart("Pass rate (%)", {"pass rate": rates}, y_max=100))
    parts.append("</section>")
    return "".join(parts)


def _pct(value: Any) -> float | None:
    return None if value is None else float(value) * 100
