"""The grid of a ``--grid`` run as a heat map: pass rate (with its interval) and p95 turn latency per cell.

The first grid key runs down the rows and the other keys' combinations across the columns; each
cell is coloured by its pass rate in eleven steps (classes ``heat-0`` to ``heat-10`` of report.css:
the page's content security policy allows no inline styles), so a line or noise level that breaks
the agent stands out at a glance. Failures by cause are counted under the map.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tamesu.reports.grid_table import CAUSES, failures_by_cause, grid_keys, grid_order, grid_table

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult

__all__ = ["grid_section"]


def _h(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _pct(x: float) -> str:
    return f"{round(x * 100)}%"


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return '<td class="heat-none">–</td>'
    rate = row["pass_rate"]
    if rate is None:
        return f'<td class="heat-error">{row["errors"]} error(s), no graded run</td>'
    low, high = row["interval"]
    latency = row["turn_latency_ms_p95"]
    p95 = "" if latency is None else f"<br><small>p95 {latency / 1000:.2f} s</small>"
    title = f"{row['passed']} of {row['graded']} passed; interval {_pct(low)}–{_pct(high)}"
    errors = f"<br><small>{row['errors']} error(s)</small>" if row["errors"] else ""
    return (
        f'<td class="heat heat-{round(rate * 10)}" data-rate="{rate}" title="{_h(title)}">'
        f"<b>{_pct(rate)}</b> <small>[{_pct(low)}–{_pct(high)}]</small>{p95}{errors}</td>"
    )


def _causes_line(counts: dict[str, int]) -> str:
    counted = ", ".join(f"{n} {_h(CAUSES.get(c, c))}" for c, n in counts.items()) or "none"
    return f'<p class="legend">Failures by cause: {counted}.</p>'


def grid_section(results: Iterable[RunResult], settings: dict[str, Any] | None = None) -> str:
    """The heat map, or for a run that was not a grid the failed calls counted by cause ("" when none)."""
    results = list(results)
    keys = grid_keys(results)
    if not keys:
        counts = failures_by_cause(results)
        return (
            f'<section id="causes"><h2>Failed calls by cause</h2>{_causes_line(counts)}</section>'
            if counts
            else ""
        )
    table = grid_table(results, order=grid_order(settings))
    by_cell = {tuple(row["cell"].get(k, "") for k in keys): row for row in table}
    values = {k: list(dict.fromkeys(row["cell"].get(k, "") for row in table)) for k in keys}
    down, across = keys[0], keys[1:]
    columns = list(itertools.product(*(values[k] for k in across))) if across else [()]
    head = (
        "".join(f"<th>{_h(', '.join(f'{k}={v}' for k, v in zip(across, col)))}</th>" for col in columns)
        if across
        else "<th>all</th>"
    )
    rows = "".join(
        f"<tr><th>{_h(down)}={_h(v)}</th>"
        + "".join(_cell(by_cell.get((v, *col))) for col in columns)
        + "</tr>"
        for v in values[down]
    )
    return (
        '<section id="grid"><h2>Where speech breaks the agent</h2>'
        '<p class="legend">Pass rate per cell with its 95% interval, and the p95 turn latency; '
        "every audio test ran in every cell.</p>"
        f'<table class="heatmap"><thead><tr><th></th>{head}</tr></thead><tbody>{rows}</tbody></table>'
        f"{_causes_line(failures_by_cause(results))}</section>"
    )
