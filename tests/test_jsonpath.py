from __future__ import annotations

import pytest

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
