"""Text from an agent (or any file a user was handed) made safe to store, to print and to write as XML.

An agent can answer anything. A JSON escape of a lone surrogate (``"\\ud800"``) decodes to a
Python string no UTF-8 encoder accepts, so one such reply would stop every write of the run;
escape sequences (clear screen, window titles, OSC 8 links, hidden text, BEL) would drive the
terminal of whoever reads the results. Such characters are kept as visible escapes (``\\ud800``,
``\\x1b``) instead: nothing is lost, nothing fails, nothing acts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["json_bytes", "loads_json", "printable", "storable", "storable_text", "xml_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_IN_JSON = re.compile(r"\\u[dD][89a-fA-F]")
"""What JSON text needs to decode to a surrogate (Python's json keeps unpaired ones as they are)."""
_SURROGATE_IN_JSON_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Everything but newline and tab below space, DEL, the C1 controls (8-bit CSI and OSC among them),
the bidirectional overrides that reorder what is shown, and lone surrogates."""
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 cannot hold, even as character references."""


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
