from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tamesu.jsonpath import JSONPathError, compile_path, find, find_in_message, first, truthy

pytestmark = pytest.mark.unit

TRANSCRIPT = {"type": "transcript", "role": "assistant", "transcript": "Hello there"}


def test_plain_paths() -> None:
    body = {"reply": "hi", "tool_calls": [{"name": "a"}, {"name": "b"}], "end": False}
    assert find("$.reply", body) == ["hi"]
    assert find("$.tool_calls[*].name", body) == ["a", "b"]
    assert first("$.missing", body, default="x") == "x"
    assert first("$.end", body) is False


def test_reference_filters_on_a_one_element_list() -> None:
    path = "$[?(@.type=='transcript' && @.role=='assistant')].transcript"
    assert find(path, [TRANSCRIPT]) == ["Hello there"]
    assert find(path, [{**TRANSCRIPT, "role": "user"}]) == []
    assert find("$[?(@.event=='client.started')].event", [{"event": "client.started"}]) == ["client.started"]


def test_typographic_quotes_from_documents_are_normalised() -> None:
    assert find("$[?(@.event==‘client.started’)].event", [{"event": "client.started"}]) == ["client.started"]


def test_bare_names_read_as_root_members() -> None:
    assert find("reply", {"reply": 1}) == [1]
    assert find(".reply", {"reply": 2}) == [2]


def test_bad_path_names_the_path() -> None:
    with pytest.raises(JSONPathError, match=r"bad JSONPath '\$\[\?\(@\.a=='"):
        compile_path("$[?(@.a==")


def test_compiled_paths_are_cached() -> None:
    assert compile_path("$.cached.path") is compile_path("$.cached.path")


def test_find_in_message_reads_filters_and_plain_paths() -> None:
    assert find_in_message("$[?(@.type=='transcript')].transcript", TRANSCRIPT) == ["Hello there"]
    assert find_in_message("$.transcript", TRANSCRIPT) == ["Hello there"]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([True], True),
        (["yes"], True),
        ([{"a": 1}], True),
        ([1], True),
        ([], False),
        ([None], False),
        ([False], False),
        ([0], False),
        (["false"], False),
        ([""], False),
        ([None, "x"], True),
    ],
)
def test_truthy(values: list[object], expected: bool) -> None:
    assert truthy(values) is expected


NAMES = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(["true", "false", "null", "and", "or", "not", "in", "length", "count", "keys", "match"]),
)
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(NAMES, inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(NAMES, min_size=1, max_size=4), data=VALUES, hit=VALUES)
def test_a_member_walk_reads_what_python_jsonpath_reads(keys: list[str], data: object, hit: object) -> None:
    """``$.a.b`` is read by a dict walk without loading python-jsonpath: it must mean the same."""
    path = "$." + ".".join(keys)
    planted = hit
    for key in reversed(keys):
        planted = {key: planted}
    # decoded documents (python-jsonpath would parse a str document as JSON text itself)
    for document in ([data], {"k": data}, planted, {"other": planted}):
        assert find(path, document) == list(compile_path(path).findall(document))
