"""``tamesu diff`` of two grid runs: each cell's pass rate pooled over the tests, before and after."""

from __future__ import annotations

import pytest

from tamesu.history import compare
from tamesu.history.render import comparison_json, comparison_markdown, comparison_text
from tamesu.runner.grid import cell_label, cell_of

from .test_compare import inv, row

pytestmark = pytest.mark.unit

CLEAN = {"line_quality": "pstn", "background_noise": "none"}
NOISY = {"line_quality": "pstn", "background_noise": "cafe@10"}


def test_a_cell_label_reads_back_and_other_test_ids_have_no_cell() -> None:
    assert cell_of(f"returns {cell_label(NOISY)}") == NOISY
    assert cell_of(f"returns {cell_label(NOISY)}#2") == NOISY
    assert cell_of("refund policy [late] (en)") is None
    assert cell_of("a test {with braces}") is None


def test_cells_are_pooled_over_the_audio_tests_and_compared_between_runs() -> None:
    a = inv(
        row(f"returns {cell_label(CLEAN)}", "pppp"), row(f"orders {cell_label(CLEAN)}", "pppp"),
        row(f"returns {cell_label(NOISY)}", "pppp"), row(f"orders {cell_label(NOISY)}", "pppp"),
        row("text only", "p"), inv_id=1,
    )  # fmt: skip
    b = inv(
        row(f"returns {cell_label(CLEAN)}", "pppp"), row(f"orders {cell_label(CLEAN)}", "pppp"),
        row(f"returns {cell_label(NOISY)}", "ffff"), row(f"orders {cell_label(NOISY)}", "ffff"),
        row("text only", "p"), inv_id=2,
    )  # fmt: skip
    c = compare(a, b)
    assert [(g.cell, g.a, g.b) for g in c.grid] == [(CLEAN, (8, 8), (8, 8)), (NOISY, (8, 8), (0, 8))]
    noisy = c.grid[1]
    assert noisy.rate is not None and noisy.rate.significant and noisy.rate.estimate == -1.0
    text = comparison_text(c)
    assert "Grid (pass rate per cell, pooled over the audio tests):" in text
    assert "{line_quality=pstn, background_noise=cafe@10}: 8/8 -> 0/8  -100 points" in text
    assert comparison_json(c)["grid"][1]["after"] == {"passed": 0, "runs": 8}
    assert "#### Grid" in comparison_markdown(c) and "cafe@10}: 8/8 -&gt; 0/8" in comparison_markdown(c)
    assert "Grid" not in comparison_text(compare(inv(row("x", "p")), inv(row("x", "p"), inv_id=2)))
