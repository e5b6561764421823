"""Plain member paths (``$.a.b``) are read by a dict walk that selects what python-jsonpath selects."""

from __future__ import annotations

from typing import Any

import jsonpath as python_jsonpath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tamesu.jsonpath import JSONPathError, find, find_in_message, validate

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


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="$.[]*0129ab_-'?()@=", max_size=14))
def test_validate_passes_a_path_only_when_python_jsonpath_compiles_it(path: str) -> None:
    normal = path.strip()
    normal = (
        normal
        if normal.startswith("$")
        else "$" + (normal if normal.startswith((".", "[")) else "." + normal)
    )
    try:
        python_jsonpath.compile(normal)
    except Exception:
        with pytest.raises(JSONPathError):
            validate(path)
    else:
        validate(path)


def test_validate_knows_the_plain_forms_without_loading_python_jsonpath() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; from tamesu.jsonpath import validate\n"
        "for p in ['$.reply', 'reply', '$.items[0].id', '$.tool_calls[*]', '$.*.name']: validate(p)\n"
        "print('jsonpath' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
