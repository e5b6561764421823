"""Durations as the reference writes them: 30s, 3m, 1h30m, 500ms, 1.5s."""

from __future__ import annotations

import functools
import re

__all__ = ["format_duration", "parse_duration"]

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@functools.lru_cache(maxsize=1024, typed=True)
def parse_duration(text: str | int | float, *, unit_required: bool = False) -> float:
    """Seconds in a duration string; a bare number is seconds. Raises ValueError when malformed.

    Remembered (typed, so ``True`` is never taken for ``1``): a load test's driver asks for its
    profile's duration at every arrival.

    ``unit_required`` (a suite's durations) refuses a bare number other than 0: ``5`` could mean
    seconds or milliseconds, and the suite should say which.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError(f"a duration cannot be negative: {text!r}")
        if unit_required and text != 0:
            raise ValueError(_no_unit(str(text)))
        return float(text)
    s = text.strip().replace(" ", "")
    if not s:
        raise ValueError("empty duration")
    if re.fullmatch(r"\d+(?:\.\d+)?", s):
        if unit_required and float(s) != 0:
            raise ValueError(_no_unit(s))
        return float(s)
    pos = 0
    total = 0.0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f"not a duration: {text!r} (write it like 30s, 3m, 1h30m or 500ms)")
    return total


def _no_unit(number: str) -> str:
    return f"a duration needs a unit: {number} is {number}s, {number}m or {number}ms?"


def format_duration(seconds: float) -> str:
    """A duration as a suite writes it, which ``parse_duration`` reads back: ``250ms``, ``1.5s``,
    ``1m30s``, ``2h5m``; the one way every message and report writes a duration."""
    if seconds < 1:
        return f"{round(seconds * 1000, 3):g}ms"
    if seconds < 60:
        return f"{round(seconds, 3):g}s"
    whole = round(seconds)
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v)
