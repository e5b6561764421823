"""Text from an agent (or any file a user was handed) made safe to store, to print and to write as XML.

An agent can answer anything. A JSON escape of a lone surrogate (``"\\ud800"``) decodes to a
Python string no UTF-8 encoder accepts, so one such reply would stop every write of the run;
escape sequences (clear screen, window titles, OSC 8 links, hidden text, BEL) would drive the
terminal of whoever reads the results. Such characters are kept as visible escapes (``\\ud800``,
``\\x1b``) instead: nothing is lost, nothing fails, nothing acts. ``paint`` and ``table`` print
such text in colour and in columns, adding no codes but their own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePath, PureWindowsPath
from typing import Any

__all__ = [
    "OutsideFolder",
    "inside",
    "json_bytes",
    "json_text",
    "loads_json",
    "paint",
    "printable",
    "safe_name",
    "storable",
    "storable_text",
    "table",
    "xml_text",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_IN_JSON = re.compile(r"\\u[dD][89a-fA-F]")
"""What JSON text needs to decode to a surrogate (Python's json keeps unpaired ones as they are)."""
_SURROGATE_IN_JSON_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Everything but newline and tab below space, DEL, the C1 controls (8-bit CSI and OSC among them),
the bidirectional overrides that reorder what is shown, and lone surrogates."""
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 cannot hold, even as character references."""
_UNSAFE_IN_NAMES = re.compile(r"[^A-Za-z0-9._-]+")
_CODES = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "bold": "1", "dim": "2"}


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def storable_text(text: str) -> str:
    """The text with every lone surrogate written as its escape (``\\ud800``)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escape, text)


def storable(value: Any) -> Any:
    """``value`` (strings, mappings, lists) with every string made storable, keys included."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, Mapping):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(v) for v in value]
    return value


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` that never gives a lone surrogate (the escape is kept as text instead)."""
    value = json.loads(text)
    pattern = _SURROGATE_IN_JSON if isinstance(text, str) else _SURROGATE_IN_JSON_BYTES
    if pattern.search(text) is not None:  # type: ignore[arg-type]
        return storable(value)
    return value


def json_bytes(value: Any, *, enc_hook: Callable[[Any], Any] | None = None) -> bytes:
    """JSON of ``value`` (msgspec Structs too); a lone surrogate anywhere is written as its escape."""
    import msgspec

    try:
        return msgspec.json.encode(value, enc_hook=enc_hook)
    except UnicodeEncodeError:
        return msgspec.json.encode(storable(msgspec.to_builtins(value, enc_hook=enc_hook)), enc_hook=enc_hook)


def json_text(value: Any) -> str:
    """Indented JSON for a file people read too (summary.json, ``--json``), ending in a newline.

    ``json.dumps(indent=2)`` falls back to the pure-Python encoder, 0.1 s for the summary of 3,000
    tests; msgspec writes and indents it in C. A value JSON has no form for becomes its ``str``.
    """
    import msgspec

    return msgspec.json.format(json_bytes(value, enc_hook=str), indent=2).decode() + "\n"


def printable(text: str) -> str:
    """Text safe to show on a terminal: control characters become visible escapes (``\\x1b``).

    Newlines and tabs stay; a CR of a CRLF is dropped; any other CR is shown, since it would let
    a line overwrite what was printed before it.
    """
    if text.isprintable() and text.isascii():
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _TERMINAL.sub(_escape, text)


def xml_text(text: str) -> str:
    """Text XML 1.0 can hold: the characters it cannot are written as visible escapes."""
    return _XML_INVALID.sub(_escape, text)


def paint(text: str, style: str, on: bool) -> str:
    """ANSI styling without a dependency; the text itself is made ``printable`` first, so only
    these codes reach the terminal."""
    text = printable(text)
    if not on or style not in _CODES:
        return text
    return f"\033[{_CODES[style]}m{text}\033[0m"


def table(rows: Sequence[Sequence[str]], *, header: Sequence[str] | None = None, color: bool = False) -> str:
    """Plain aligned columns; the header is bold when colour is on."""
    all_rows = [[*header]] if header else []
    all_rows += [[printable(cell) for cell in r] for r in rows]
    if not all_rows:
        return ""
    widths = [max(len(r[i]) for r in all_rows if i < len(r)) for i in range(max(map(len, all_rows)))]
    lines = []
    for n, r in enumerate(all_rows):
        line = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip()
        lines.append(paint(line, "bold", color) if header and n == 0 else line)
    return "\n".join(lines)


def safe_name(text: str, *, key: str | None = None, limit: int = 60) -> str:
    """A file name that keeps the text readable and cannot collide (a short hash of ``key or text``):
    a run id or test name may hold anything, a path separator included."""
    import hashlib

    slug = _UNSAFE_IN_NAMES.sub("_", text).strip("._")[:limit] or "run"
    digest = hashlib.sha1((key or text).encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


class OutsideFolder(ValueError):
    """A relative path (often rendered from an agent's values) that would leave its folder."""


def inside(folder: str | Path, name: str, *, what: str = "the path") -> Path:
    """``folder / name`` when it stays inside ``folder``; else ``OutsideFolder`` naming ``what``.

    A template can put an agent's words into a file name (``golden/{{captured.order}}.json``): an
    absolute name, a ``..`` part, a NUL, or a symbolic link that leads out are refused, so
    nothing is read from or written to (nor any folder made) outside ``folder``.
    """
    shown = printable(name[:120])
    if not name or "\x00" in name:
        raise OutsideFolder(f"{what} {shown!r} is not a file name")
    given = PurePath(name)
    if given.is_absolute() or PureWindowsPath(name).anchor or ".." in given.parts:
        raise OutsideFolder(
            f"{what} {shown!r} must be a relative path inside {folder} (no '..', not absolute)"
        )
    base = Path(folder).resolve()
    full = (base / given).resolve()
    if not full.is_relative_to(base):
        raise OutsideFolder(f"{what} {shown!r} leads out of {folder} through a symbolic link")
    return full
