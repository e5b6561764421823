"""How much of an agent's answers tamesu reads and keeps: the agent under test is untrusted input.

An agent that answers with an endless body, a gigabyte of JSON, a 300 MB websocket frame or JSON
nested a million deep must end its run with a clear error, never exhaust the invocation. One
``Limits`` (tamesu.yaml ``limits:``) travels with every run; each lane checks what it reads against
it and raises ``LimitExceeded``, a non-retryable ``TargetError`` of kind ``limit`` that names the
setting to raise. What a transcript stores is bounded by the Recorder (``transcript_size``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tamesu.durations import parse_duration
from tamesu.errors import TargetError

__all__ = [
    "DEFAULT_LIMITS",
    "LimitExceeded",
    "Limits",
    "check_json_depth",
    "decode_json",
    "format_size",
    "parse_size",
    "payload_head",
    "payload_size",
]

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_size(value: str | int) -> int:
    """``"4MB"`` -> 4000000, ``"512KiB"`` -> 524288; an int is a number of bytes."""
    if isinstance(value, int):
        return value
    m = _SIZE.fullmatch(value)
    unit = m.group(2).upper() if m else ""
    if m is None or unit not in _UNITS:
        raise ValueError(f"{value!r} is not a size such as 4MB, 512KB or 1GiB")
    return int(float(m.group(1)) * _UNITS[unit])


def format_size(n: int) -> str:
    """4000000 -> ``4 MB``, 524288 -> ``524.3 KB`` (how error messages speak of sizes)."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of what one run reads from its agent and keeps of it."""

    answer_size: int = 4_000_000
    """Bytes of one answer: an HTTP body (decoded), a server-sent event, a websocket message, a
    poll reply, a request the agent makes to the listener."""
    turn_text: int = 1_000_000
    """Characters of text one agent turn may gather, streamed or whole."""
    json_depth: int = 64
    """Nesting of arrays and objects in one JSON answer."""
    transcript_size: int = 8_000_000
    """Bytes of raw answers one transcript stores; later ones are kept as a truncation mark."""
    audio_ahead: float = 30.0
    """Seconds of the agent's audio that may wait to be played: an agent sends speech faster than
    real time, but one further ahead is flooding the call; the rest is dropped and counted."""
    tool_calls: int = 1000
    """Tool calls one agent turn may carry; later ones are dropped and counted."""

    @classmethod
    def from_config(cls, config: Any) -> Limits:
        """The limits tamesu.yaml's ``limits:`` sets (None: the defaults)."""
        if config is None:
            return DEFAULT_LIMITS
        base = DEFAULT_LIMITS
        answer = getattr(config, "answer_size", None)
        stored = getattr(config, "transcript_size", None)
        ahead = getattr(config, "audio_ahead", None)
        return cls(
            answer_size=base.answer_size if answer is None else parse_size(answer),
            turn_text=getattr(config, "turn_text", None) or base.turn_text,
            json_depth=getattr(config, "json_depth", None) or base.json_depth,
            transcript_size=base.transcript_size if stored is None else parse_size(stored),
            audio_ahead=base.audio_ahead if ahead is None else parse_duration(ahead),
            tool_calls=getattr(config, "tool_calls", None) or base.tool_calls,
        )

    def too_large(self, what: str) -> LimitExceeded:
        """The error for an answer over ``answer_size``: ``what`` names it (``the answer from URL``)."""
        return LimitExceeded(f"{what} is larger than {format_size(self.answer_size)}", setting="answer_size")


DEFAULT_LIMITS = Limits()


class LimitExceeded(TargetError):
    """The agent's answer went past one of ``Limits``: an infrastructure error for the run that a
    retry would not change; the message names the ``limits:`` setting in tamesu.yaml."""

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(f"{message} (limits.{setting} in tamesu.yaml)", retryable=False, kind="limit")
        self.setting = setting


_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_PAIRS = re.compile(r"\[\]|\{\}")


def check_json_depth(text: str | bytes, depth: int) -> None:
    """Raise ``LimitExceeded`` when the JSON ``text`` nests arrays and objects deeper than ``depth``.

    Free for the usual answer (fewer brackets than ``depth`` cannot nest deeper); otherwise the
    strings are blanked and the innermost pairs removed ``depth`` times, each pass at C speed.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.count("[") + text.count("{") <= depth:
        return
    rest = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    for _ in range(depth):
        shorter = _PAIRS.sub("", rest)
        if len(shorter) == len(rest):
            return
        rest = shorter
    if _PAIRS.search(rest):
        raise LimitExceeded(f"the agent's JSON nests deeper than {depth} levels", setting="json_depth")


def decode_json(text: str | bytes, depth: int) -> Any:
    """An agent's JSON answer read as ``loads_json`` reads it (no lone surrogate is kept), refusing
    nesting deeper than ``depth`` first."""
    from tamesu.untrusted import loads_json

    check_json_depth(text, depth)
    return loads_json(text)


def payload_size(value: Any) -> int:
    """About how many bytes ``value`` (a raw answer: text, bytes or decoded JSON) takes as JSON."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if value is None or isinstance(value, (bool, int, float)):
        return 8
    try:
        import msgspec

        return len(msgspec.json.encode(value, enc_hook=str))
    except Exception:
        return len(repr(value))


def payload_head(value: Any, limit: int) -> str:
    """The first ``limit`` characters of ``value`` as text (what a truncation mark shows of it)."""
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value[:limit]).decode("utf-8", "replace")
    try:
        import msgspec

        return msgspec.json.encode(value, enc_hook=str)[:limit].decode("utf-8", "replace")
    except Exception:
        return repr(value)[:limit]
