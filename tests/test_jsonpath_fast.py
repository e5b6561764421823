"""Plain member paths (``$.a.b``) are read by a dict walk that selects what python-jsonpath selects."""

from __future__ import annotations

from typing import Any

import jsonpath as python_jsonpath
import pytest

from tamesu.jsonpath import JSONPathError, find, find_in_message

pytestmark = pytest.mark.unit

DOCUMENTS: list[Any] = [
    {"reply": "hi", "a": {"b": {"c": 3}}, "true": 1, "length": 2, "keys": [1]},
    {"reply": None, "a": [{"b": 1}], "in": "x"},
    {"a": {"b": None}},
    [{"reply": "in a list"}],
    "reply",
    None,
    7,
    {},
]
PATHS = [
    "$.reply",
    "reply",
    ".reply",
    "$.a.b",
    "$.a.b.c",
    "$.true",
    "$.length",
    "$.keys",
    "$.in",
    "$.missing",
]


@pytest.mark.parametrize("path", PATHS)
def test_plain_paths_select_what_python_jsonpath_selects(path: str) -> None:
    normal = path if path.startswith("$") else "$" + (path if path.startswith(".") else "." + path)
    compiled = python_jsonpath.compile(normal)
    for doc in DOCUMENTS:
        assert find(path, doc) == list(compiled.findall(doc)), (path, doc)
        expected = list(compiled.findall([doc])) or list(compiled.findall(doc))
        assert find_in_message(path, doc) == expected, (path, doc)


def test_other_paths_and_bad_paths_keep_their_behaviour() -> None:
    assert find("$.a[*].b", {"a": [{"b": 1}, {"b": 2}]}) == [1, 2]
    assert find_in_message("$[?(@.type=='x')].v", {"type": "x", "v": 5}) == [5]
    with pytest.raises(JSONPathError, match="bad JSONPath"):
        find("$.a[", {"a": 1})
