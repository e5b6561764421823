"""The grid of a ``tamesu run --grid``: pass rate (with its interval) and turn latency per cell.

One table for every report: the JSON report carries it as ``grid``, the HTML report draws it as a
heat map (``html_grid``), and history compares it between runs. A cell pools the runs of every
audio test in it, so a cell says how the agent fares on that line and noise over the whole suite.
Its latency is the 95th percentile of its runs' own ``turn_latency_ms_p95`` (the runs' turn
latencies themselves stay in the transcripts).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tamesu.metrics import percentile
from tamesu.stats import wilson_interval

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult

__all__ = ["CAUSES", "causes_line", "failures_by_cause", "grid_keys", "grid_order", "grid_table"]

CAUSES = {
    "heard_differently": "heard differently (the agent's STT)",
    "tamesu_heard_differently": "tamesu heard differently (tamesu's STT)",
    "agent": "the agent's",
}
"""What each cause of a failed call is called in the reports."""


def grid_keys(results: Iterable[RunResult]) -> list[str]:
    """The grid's keys in the order the runs name them (empty: not a grid run)."""
    keys: dict[str, None] = {}
    for r in results:
        for k in r.grid or {}:
            keys.setdefault(k, None)
    return list(keys)


def grid_order(settings: dict[str, Any] | None) -> dict[str, list[str]]:
    """The grid as ``--grid`` gave it (its keys and values in order), from a run's settings."""
    items = ((settings or {}).get("options") or {}).get("grid") or []
    out: dict[str, list[str]] = {}
    for item in items:
        key, _, values = str(item).partition("=")
        out[key.strip()] = [v.strip() for v in values.split(",") if v.strip()]
    return out


def grid_table(
    results: Iterable[RunResult], *, order: dict[str, list[str]] | None = None, confidence: float = 0.95
) -> list[dict[str, Any]]:
    """One row per cell, in the grid's order (``order``, as ``--grid`` gave it; else as the cells
    first finished): runs, passed, pass rate, its interval, p95 turn latency of the graded runs,
    errors, and failures by cause."""
    cells: dict[tuple[tuple[str, str], ...], list[RunResult]] = {}
    for r in results:
        if r.grid:
            cells.setdefault(tuple(r.grid.items()), []).append(r)
    rows = []
    ranked = sorted(cells, key=lambda key: _rank(key, order or {}))
    for key in ranked:
        runs = cells[key]
        graded = [r for r in runs if r.outcome in ("passed", "failed")]
        passed = sum(1 for r in graded if r.outcome == "passed")
        low, high = wilson_interval(passed, len(graded), confidence=confidence) if graded else (0.0, 1.0)
        latency = percentile(
            (r.metrics["turn_latency_ms_p95"] for r in graded if "turn_latency_ms_p95" in r.metrics), 95
        )
        rows.append(
            {
                "cell": dict(key),
                "runs": len(runs),
                "graded": len(graded),
                "passed": passed,
                "errors": sum(1 for r in runs if r.outcome == "error"),
                "pass_rate": round(passed / len(graded), 4) if graded else None,
                "interval": [round(low, 4), round(high, 4)],
                "turn_latency_ms_p95": None if latency is None else round(latency, 1),
                "failures_by_cause": failures_by_cause(runs),
            }
        )
    return rows


def failures_by_cause(results: Iterable[RunResult]) -> dict[str, int]:
    """Failed calls counted by what made them fail (``RunResult.cause``; runs that were not calls left out)."""
    out: dict[str, int] = {}
    for r in results:
        if r.outcome == "failed" and r.cause is not None:
            out[r.cause] = out.get(r.cause, 0) + 1
    return out


def _rank(key: tuple[tuple[str, str], ...], order: dict[str, list[str]]) -> tuple[int, ...]:
    """Where a cell stands in the grid (cells of values not in ``order`` after the others, as they came)."""
    out = []
    for k, v in key:
        values = order.get(k, [])
        out.append(values.index(v) if v in values else len(values))
    return tuple(out)


def causes_line(results: Iterable[RunResult]) -> str:
    """``Failed calls by cause: 2 heard differently (the agent's STT), 1 the agent's`` ("" for none)."""
    counts = failures_by_cause(results)
    if not counts:
        return ""
    return "Failed calls by cause: " + ", ".join(f"{n} {CAUSES.get(c, c)}" for c, n in counts.items())
