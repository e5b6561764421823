"""The grid's table (JSON) and its heat map (HTML): pass rate with its interval, p95 latency, causes."""

from __future__ import annotations

import pytest

from tamesu.reports.grid_table import grid_order, grid_table
from tamesu.reports.html_grid import grid_section

from .builders import run_result

pytestmark = pytest.mark.unit


def runs() -> list:  # type: ignore[type-arg]
    out = []
    for line, outcomes in (("pstn", ["passed", "passed"]), ("mobile_poor", ["passed", "failed"])):
        for noise in ("none", "cafe@5"):
            for i, outcome in enumerate(outcomes if noise == "none" else ["failed", "error"]):
                cell = {"line_quality": line, "background_noise": noise}
                out.append(
                    run_result(
                        f"returns {cell}",
                        outcome,
                        repeat=i,
                        grid=cell,
                        metrics={"turn_latency_ms_p95": 900.0 + 100 * i},
                        cause=("heard_differently" if noise != "none" else "agent")
                        if outcome == "failed"
                        else None,
                    )
                )
    return out


def test_the_table_pools_each_cells_runs_with_an_interval_and_the_p95_latency() -> None:
    table = grid_table(runs())
    assert [tuple(r["cell"].values()) for r in table] == [
        ("pstn", "none"), ("pstn", "cafe@5"), ("mobile_poor", "none"), ("mobile_poor", "cafe@5")
    ]  # fmt: skip
    first, noisy, poor = table[0], table[1], table[2]
    assert (first["passed"], first["graded"], first["pass_rate"]) == (2, 2, 1.0)
    assert first["interval"][0] < 1.0 and first["interval"][1] == 1.0
    assert first["turn_latency_ms_p95"] == pytest.approx(995.0)
    assert (noisy["graded"], noisy["errors"], noisy["pass_rate"]) == (1, 1, 0.0)
    assert noisy["failures_by_cause"] == {"heard_differently": 1}
    assert poor["failures_by_cause"] == {"agent": 1}


def test_the_heat_map_has_a_row_per_line_a_column_per_noise_and_a_colour_per_rate() -> None:
    page = grid_section(runs())
    assert page.count("<tr><th>line_quality=") == 2
    assert "<th>background_noise=none</th><th>background_noise=cafe@5</th>" in page
    assert 'class="heat heat-10" data-rate="1.0"' in page and 'class="heat heat-5" data-rate="0.5"' in page
    assert "Failures by cause: 2 heard differently (the agent&#x27;s STT), 1 the agent&#x27;s." in page
    assert grid_section([run_result("plain", "passed")]) == ""


def test_a_run_without_a_grid_still_counts_its_failed_calls_by_cause() -> None:
    page = grid_section(
        [run_result("call", "failed", cause="tamesu_heard_differently"), run_result("text", "failed")]
    )
    assert page == (
        '<section id="causes"><h2>Failed calls by cause</h2>'
        '<p class="legend">Failures by cause: 1 tamesu heard differently (tamesu&#x27;s STT).</p></section>'
    )


def test_cells_follow_the_grid_as_given_and_errors_add_no_latency() -> None:
    finished = list(reversed(runs()))  # the order runs finished in is not the grid's
    order = grid_order(
        {"options": {"grid": ["line_quality=pstn,mobile_poor", "background_noise=none,cafe@5"]}}
    )
    table = grid_table(finished, order=order)
    assert [tuple(r["cell"].values()) for r in table] == [
        ("pstn", "none"), ("pstn", "cafe@5"), ("mobile_poor", "none"), ("mobile_poor", "cafe@5")
    ]  # fmt: skip
    only_errors = [
        run_result("x", "error", grid={"line_quality": "pstn"}, metrics={"turn_latency_ms_p95": 60.0})
    ]
    assert grid_table(only_errors)[0]["turn_latency_ms_p95"] is None


def test_the_console_counts_the_failed_calls_by_cause() -> None:
    from tamesu.reports.grid_table import causes_line

    results = runs()
    assert (
        causes_line(results) == "Failed calls by cause: 2 heard differently (the agent's STT), 1 the agent's"
    )
    assert causes_line([run_result("text", "failed")]) == ""
