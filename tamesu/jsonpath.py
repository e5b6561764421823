"""JSONPath as suites write it: a thin, cached layer over python-jsonpath.

Suites use the classic Goessner forms (``$.reply``, ``$.tool_calls[*]``, filters such as
``$[?(@.type=='transcript' && @.role=='assistant')].transcript``); python-jsonpath accepts them.
Typographic quotes pasted from documents are normalised, compiled paths are cached, and a bad
path is a ``JSONPathError`` that quotes the path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from tamesu.errors import TamesuError

__all__ = ["JSONPathError", "compile_path", "find", "find_in_message", "first", "truthy", "validate"]

_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'})


class JSONPathError(TamesuError, ValueError):
    """A JSONPath that cannot be compiled."""


def _normalise(path: str) -> str:
    text = path.strip().translate(_QUOTES)
    if not text.startswith("$"):
        # ``reply`` and ``.reply`` are read as ``$.reply``: a common slip that has one meaning.
        text = "$" + (text if text.startswith((".", "[")) else "." + text)
    return text


@lru_cache(maxsize=2048)
def compile_path(path: str) -> Any:
    """The compiled path (cached); raises JSONPathError naming the path when it is malformed."""
    import jsonpath

    try:
        return jsonpath.compile(_normalise(path))
    except jsonpath.JSONPathError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise JSONPathError(f"bad JSONPath {path!r}: {first_line}") from None


_PLAIN_FORM = re.compile(r"\$(?:\.[A-Za-z_][A-Za-z0-9_]*|\.\*|\[\*\]|\[[0-9]+\])*")
"""Member names, wildcards and indexes only (``$.order.items[0].id``): a path that always compiles."""


def validate(path: str) -> None:
    """Raise JSONPathError when ``path`` does not compile (for validate-time checks).

    The plain forms most suites use are known to compile without loading python-jsonpath, which
    would double the time of a ``tamesu validate``.
    """
    if path.strip() and _PLAIN_FORM.fullmatch(_normalise(path)):
        return
    compile_path(path)


_SIMPLE = re.compile(r"\$(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


@lru_cache(maxsize=2048)
def _plain_keys(path: str) -> tuple[str, ...] | None:
    """The keys of a path that only walks object members (``$.a.b``), else None.

    Such paths, the common ``response.text``, are read by a dict walk without loading
    python-jsonpath (a tenth of a ``tamesu run``'s start); a member name there is always just a
    name (tests/test_jsonpath.py compares the walk with python-jsonpath on such paths).
    """
    text = _normalise(path)
    if not _SIMPLE.fullmatch(text):
        return None
    return tuple(text[2:].split("."))


def find(path: str, data: Any) -> list[Any]:
    """Every value ``path`` selects in ``data``, in document order."""
    keys = _plain_keys(path)
    if keys is not None:
        for key in keys:
            if not isinstance(data, Mapping) or key not in data:
                return []
            data = data[key]
        return [data]
    compiled = compile_path(path)
    try:
        return list(compiled.findall(data))
    except Exception as exc:
        import jsonpath

        if isinstance(exc, jsonpath.JSONPathError):
            raise JSONPathError(f"JSONPath {path!r} failed: {str(exc).splitlines()[0]}") from None
        raise


def first(path: str, data: Any, default: Any = None) -> Any:
    """The first value ``path`` selects in ``data``, or ``default``."""
    for value in find(path, data):
        return value
    return default


def find_in_message(path: str, message: Any) -> list[Any]:
    """Matches in one streamed message: against ``[message]`` first, then the message itself.

    Filters such as ``$[?(@.event=='started')].event`` select the message from a one-element
    list, while plain paths such as ``$.reply`` read it directly; both forms work everywhere.
    """
    if _plain_keys(path) is not None:
        return find(path, message)  # a member walk selects nothing in a one-element list
    found = find(path, [message])
    return found if found else find(path, message)


def truthy(values: list[Any]) -> bool:
    """Whether any selected value counts as set: present and not false, null, empty or "false"."""
    for value in values:
        if value is None or value is False or value == "" or value == [] or value == {}:
            continue
        if isinstance(value, (int, float)) and value == 0:
            continue
        if isinstance(value, str) and value.strip().lower() in ("false", "0", "no"):
            continue
        return True
    return False
