from __future__ import annotations

import pytest

from tamesu.terminal import terminal_safe

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b]0;owned title\x07after", "after"),
        ("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"),
        ("\x1b[2J\x1b[Hclean", "clean"),
        ("done\rfake line", "done\\x0dfake line"),
        ("bell\x07", "bell\\x07"),
        ("abc\u202edcba", "abc\\u202edcba"),
        ("two\nlines\tand a tab", "two\nlines\tand a tab"),
        ("\x9b31mc1", "c1"),
    ],
)
def test_escape_sequences_are_dropped_and_other_controls_made_visible(text: str, shown: str) -> None:
    assert terminal_safe(text) == shown
