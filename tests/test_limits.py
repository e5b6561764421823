"""Limits: sizes as tamesu.yaml writes them, and the JSON depth check every lane uses."""

from __future__ import annotations

import json

import pytest

from tamesu.limits import DEFAULT_LIMITS, LimitExceeded, Limits, check_json_depth, decode_json, parse_size

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4MB", 4_000_000),
        ("512KiB", 524_288),
        ("1.5 GB", 1_500_000_000),
        ("10 kb", 10_000),
        ("300", 300),
        (7, 7),
    ],
)
def test_sizes_read_as_bytes(text: str | int, size: int) -> None:
    assert parse_size(text) == size


def test_a_size_without_a_known_unit_is_refused() -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size("4 parsecs")


@pytest.mark.parametrize(
    ("text", "depth", "too_deep"),
    [
        ("[[]]", 2, False),
        ("[[]]", 1, True),
        ('[{"a": [1, {"b": []}]}, {}]', 5, False),
        ('[{"a": [1, {"b": []}]}, {}]', 4, True),
        ('{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[["}', 1, False),
        ('["\\"[[[[[[[[[[[[[[[[[[[[[[[[[["]', 1, False),
        (json.dumps([[i, {"k": [i]}] for i in range(500)]), 4, False),
        ("[" * 100_000 + "]" * 100_000, 64, True),
    ],
)
def test_json_depth_is_measured_outside_strings(text: str, depth: int, too_deep: bool) -> None:
    if too_deep:
        with pytest.raises(LimitExceeded) as caught:
            check_json_depth(text, depth)
        assert caught.value.kind == "limit" and not caught.value.retryable
        assert f"nests deeper than {depth} levels (limits.json_depth in tamesu.yaml)" in str(caught.value)
    else:
        check_json_depth(text, depth)


def test_decode_json_refuses_what_would_exhaust_the_stack() -> None:
    with pytest.raises(LimitExceeded):
        decode_json("[" * 100_000 + "]" * 100_000, DEFAULT_LIMITS.json_depth)
    assert decode_json(b'{"a": [1]}', 2) == {"a": [1]}


def test_limits_come_from_the_project_setting_or_the_defaults() -> None:
    from tamesu.config.project import LimitsConfig

    assert Limits.from_config(None) == DEFAULT_LIMITS
    got = Limits.from_config(LimitsConfig.model_validate({"answer_size": "1MB", "json_depth": 8}))
    assert got == Limits(answer_size=1_000_000, turn_text=1_000_000, json_depth=8, transcript_size=8_000_000)
    assert "larger than 1 MB (limits.answer_size in tamesu.yaml)" in str(got.too_large("the answer"))
