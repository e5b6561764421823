"""Text from an agent made safe to print on a terminal.

An agent's reply may carry escape sequences that recolour, move the cursor, rewrite earlier lines,
set the window title, or hide text (OSC 8 links, bidirectional overrides). Printed raw they would
let the agent under test forge what a person reads. ``terminal_safe`` drops the sequences and shows
any other control character as a visible escape, keeping newlines and tabs.
"""

from __future__ import annotations

import re

__all__ = ["terminal_safe"]

_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` without terminal escape sequences; other control characters (carriage return,
    backspace, bell, bidirectional overrides) shown as ``\\xNN`` / ``\\uNNNN``."""
    text = _SEQUENCES.sub("", text)
    return _CONTROLS.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
