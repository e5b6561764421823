"""How the deterministic assertions compare things, in one place so every kind agrees.

Text ``contains`` is case-insensitive with runs of whitespace folded to one space; JSON values are
compared exactly except that 1 and 1.0 are the same number (and true is never 1); numeric
comparators (lt / lte / gt / gte / eq) must all hold when several are given.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.assertions.evaluation import AssertionContext
    from tamesu.kernel.outcome import AssertionResult
    from tamesu.kernel.transcript import Turn

__all__ = [
    "COMPARATORS",
    "closest_turn",
    "compare",
    "given",
    "json_equal",
    "json_subset",
    "numbered",
    "redacted",
    "rounded",
    "shorten",
    "snippet",
    "text_pattern",
]

COMPARATORS = {"lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "eq": "=="}


def given(spec: Any, key: str) -> bool:
    """Whether the suite wrote ``key`` (so ``equals: null`` differs from no ``equals``)."""
    fields_set = getattr(spec, "model_fields_set", None)
    if fields_set is not None:
        fields = type(spec).model_fields
        return any((fields[n].alias or n) == key or n == key for n in fields_set if n in fields)
    if isinstance(spec, dict):
        return key in spec
    return getattr(spec, key, None) is not None


@lru_cache(maxsize=1024)
def text_pattern(text: str) -> re.Pattern[str]:
    """``contains`` as a pattern: case-insensitive, any run of whitespace matches any other."""
    words = text.split()
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value (1 == 1.0), booleans only with booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def json_subset(expected: Any, actual: Any) -> bool:
    """``expected`` is found in ``actual``: mappings by subset of keys (recursively), the rest equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and json_subset(v, actual[k]) for k, v in expected.items()
        )
    return json_equal(expected, actual)


def compare(value: float, spec: Any) -> tuple[bool, str]:
    """Check every comparator ``spec`` holds; returns (ok, the expectation as text such as ``<= 6``)."""
    parts: list[str] = []
    ok = True
    for key, sign in COMPARATORS.items():
        bound = spec.get(key) if isinstance(spec, dict) else getattr(spec, key, None)
        if bound is None:
            continue
        parts.append(f"{sign} {_num(bound)}")
        holds = {
            "lt": value < bound,
            "lte": value <= bound,
            "gt": value > bound,
            "gte": value >= bound,
            "eq": math_eq(value, bound),
        }[key]
        ok = ok and holds
    return ok, " and ".join(parts) or "any value"


def rounded(value: float) -> float:
    """A measured value as a report shows it: two decimals, or four significant digits below 1
    (1234.57 ms, 0.01235 USD) rather than every digit the arithmetic left."""
    if not math.isfinite(value):
        return value
    return round(value, 2) if abs(value) >= 1 else float(f"{value:.4g}")


def math_eq(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def numbered(turns: Sequence[Turn]) -> list[tuple[int, Turn]]:
    """Each turn with its 1-based number (its own index when the target set one)."""
    return [(turn.index or i, turn) for i, turn in enumerate(turns, 1)]


def shorten(text: str, limit: int = 240) -> str:
    """The start of the text, whitespace folded, at most ``limit`` characters (… when cut).

    Only the start is folded, so a reply of any size costs no more than a short one."""
    head = text[: limit * 8]
    out = " ".join(head.split())
    if len(out) <= limit and len(head) == len(text):
        return out
    return out[: limit - 1] + "…"


def snippet(text: str, start: int, end: int, *, around: int = 40) -> str:
    """The match with some context either side, whitespace folded."""
    left = max(0, start - around)
    right = min(len(text), end + around)
    out = " ".join(text[left:right].split())
    return ("…" if left else "") + out + ("…" if right < len(text) else "")


CLOSEST_WINDOW = 2000
"""Characters of one turn compared with the needle: a longer turn is compared where one of the
needle's longest words first occurs in its first ``ANCHOR_SPAN`` characters (else at its start), so
a huge reply costs little more than a short one."""
ANCHOR_SPAN = 1_000_000


def closest_turn(needle: str, turns: Sequence[Turn]) -> tuple[int, Turn] | None:
    """The agent turn most like ``needle`` (longest shared run of characters, then overall likeness)."""
    best: tuple[float, float] | None = None
    found: tuple[int, Turn] | None = None
    want = " ".join(needle[:CLOSEST_WINDOW].split()).lower()
    words = sorted(set(want.split()), key=len, reverse=True)[:3]
    anchor = re.compile("|".join(map(re.escape, words)), re.IGNORECASE) if words else None
    for n, turn in numbered(turns):
        have = " ".join(_window(turn.text, anchor).split()).lower()
        m = difflib.SequenceMatcher(None, want, have, autojunk=False)
        block = m.find_longest_match(0, len(want), 0, len(have)).size
        score = (block / max(len(want), 1), m.ratio())
        if best is None or score > best:
            best, found = score, (n, turn)
    return found


def _window(text: str, anchor: re.Pattern[str] | None) -> str:
    if len(text) <= CLOSEST_WINDOW:
        return text
    m = anchor.search(text, 0, ANCHOR_SPAN) if anchor is not None else None
    at = 0 if m is None else max(0, m.start() - CLOSEST_WINDOW // 4)
    return text[at : at + CLOSEST_WINDOW]


def redacted(result: AssertionResult, ctx: AssertionContext) -> AssertionResult:
    """The result with every secret value the run knows replaced, when the run gave a redactor."""
    redactor = ctx.redactor
    if redactor is None:
        return result
    result.message = redactor.redact(result.message)
    result.expected = redactor.redact_obj(result.expected)
    result.actual = redactor.redact_obj(result.actual)
    return result
