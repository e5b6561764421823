from __future__ import annotations

import pytest
from rich.cells import cell_len

from tamesu.reports.text_table import table_lines

pytestmark = pytest.mark.unit


def test_columns_line_up_under_their_headers_with_a_rule_below_them() -> None:
    lines = table_lines(
        ["verdict", "test", "target"], [["PASS", "greets", "api"], ["FAIL", "refund [late]", "x"]], width=120
    )
    assert lines == [
        "verdict   test            target",
        "────────────────────────────────",
        "PASS      greets          api   ",
        "FAIL      refund [late]   x     ",
    ]


def test_a_row_wider_than_the_terminal_folds_its_widest_column_and_keeps_every_character() -> None:
    name = "a very long test name " * 4
    lines = table_lines(["verdict", "test", "passes"], [["PASS", name, "1/1"]], width=40)
    assert all(cell_len(line) <= 40 for line in lines)
    body = lines[2:]
    assert len(body) > 1 and body[0].split()[0] == "PASS" and body[0].rstrip().endswith("1/1")
    start, end = lines[0].index("test"), lines[0].index("passes") - 3
    assert "".join(line[start:end] for line in body).replace(" ", "") == name.replace(" ", "")


def test_wide_characters_count_as_two_cells() -> None:
    lines = table_lines(["test", "target"], [["注文", "api"], ["ab", "api"]], width=80)
    assert cell_len(lines[2]) == cell_len(lines[3])
    assert lines[2].index("api") == lines[3].index("api") - 2, "the name takes four cells in two characters"


def test_only_the_first_cell_of_a_row_is_coloured() -> None:
    lines = table_lines(["verdict", "test"], [["FAIL", "x"], ["PASS", "y"]], width=80, sgr=["31", None])
    assert lines[2] == "\x1b[31mFAIL   \x1b[0m   x   "
    assert "\x1b[" not in lines[3]
