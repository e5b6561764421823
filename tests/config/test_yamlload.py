"""YAML with positions: the YAML 1.2 core scalars, merge keys, duplicate keys, syntax errors, ${VAR}."""

from __future__ import annotations

import math
import tracemalloc

import pytest

from tamesu.config import yamlload
from tamesu.config.yamlload import Positions, format_path, parse_yaml
from tamesu.errors import ConfigErrors

pytestmark = pytest.mark.unit


def errors_of(text: str, **kw: object) -> list:
    with pytest.raises(ConfigErrors) as info:
        parse_yaml(text, file="s.yaml", **kw)  # type: ignore[arg-type]
    return info.value.errors


def test_positions_of_values_and_keys_are_one_based() -> None:
    doc = parse_yaml("suite: x\ntests:\n  - name: a\n    assert:\n      - judge: { rubric: r, scale: 1-5 }\n")
    assert doc.positions.value(("tests", 0, "assert", 0, "judge", "scale")) == (5, 36)
    assert doc.positions.key(("tests", 0, "assert", 0, "judge", "scale")) == (5, 29)
    assert doc.positions.key(("tests",)) == (2, 1)
    assert doc.positions.value(("tests", 0)) == (3, 5)


def test_position_of_an_unknown_path_is_its_nearest_ancestor() -> None:
    doc = parse_yaml("a:\n  b: 1\n")
    assert doc.positions.value(("a", "missing", 3)) == (2, 3)
    assert Positions().value(("x",)) == (1, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-31", "2026-12-31"),
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("off", "off"),
        ("y", "y"),
        ("true", True),
        ("True", True),
        ("FALSE", False),
        ("1_000", "1_000"),
        ("42", 42),
        ("-7", -7),
        ("0x1F", 31),
        ("0o17", 15),
        ("017", 17),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        (".inf", math.inf),
        ("-.Inf", -math.inf),
        ("~", None),
        ("null", None),
        ("", None),
        ("'42'", "42"),
        ('"true"', "true"),
        ("!!str 12", "12"),
        ("!!str yes", "yes"),
        ("12:30", "12:30"),
        ("1h30m", "1h30m"),
    ],
)
def test_scalars_follow_the_yaml_1_2_core_schema(text: str, expected: object) -> None:
    assert parse_yaml(f"v: {text}\n").data == {"v": expected}


def test_nan_is_a_float() -> None:
    assert math.isnan(parse_yaml("v: .nan").data["v"])


def test_keys_are_strings_whatever_they_look_like() -> None:
    assert parse_yaml("1: a\ntrue: b\n2026-01-01: c\n").data == {"1": "a", "true": "b", "2026-01-01": "c"}


def test_anchors_aliases_and_merge_keys() -> None:
    doc = parse_yaml(
        "base: &b {type: rest, url: http://x, headers: {A: '1'}}\n"
        "other: &o {timeout: 3s}\n"
        "t:\n"
        "  <<: [*b, *o]\n"
        "  url: http://y\n"
        "copy: *b\n"
    )
    assert doc.data["t"] == {"type": "rest", "url": "http://y", "headers": {"A": "1"}, "timeout": "3s"}
    assert doc.data["copy"] == doc.data["base"]
    assert doc.positions.value(("t", "url")) == (5, 8)
    assert doc.positions.value(("t",)) == (4, 3)
    assert doc.positions.value(("t", "type")) == (1, 17)


def test_duplicate_keys_name_both_lines() -> None:
    (err,) = errors_of("a: 1\nb:\n  c: 1\n  c: 2\n")
    assert (err.line, err.column, err.path) == (4, 3, "b.c")
    assert err.message == "duplicate key 'c' (first at line 3)"


def test_syntax_error_has_the_problem_position_and_text() -> None:
    (err,) = errors_of("a: [1, 2\nb: 3\n")
    assert err.file == "s.yaml"
    assert (err.line, err.column) == (2, 2)
    assert "YAML syntax error" in err.message and "expected ',' or ']'" in err.message
    assert "line 1" in err.hint


def test_tab_indentation_gets_a_hint() -> None:
    (err,) = errors_of("a:\n\tb: 1\n")
    assert err.line == 2
    assert "tabs" in err.hint


def test_two_documents_are_an_error_not_a_traceback() -> None:
    (err,) = errors_of("a: 1\n---\nb: 2\n")
    assert err.file == "s.yaml" and err.line == 2


def test_recursive_alias_is_an_error() -> None:
    (err,) = errors_of("a: &x [1, *x]\n")
    assert "refers to itself" in err.message
    assert err.path == "a[1]"


def test_alias_expansion_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlload, "_MAX_NODES", 50)
    text = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b]\n"
    (err,) = errors_of(text)
    assert "too large" in err.message


def test_unsupported_tags_are_errors() -> None:
    (err,) = errors_of("a: !python/object:os.system echo\n")
    assert "unsupported YAML tag" in err.message and err.line == 1


def test_tags_on_sequences_and_mappings_are_errors_as_on_scalars() -> None:
    text = (
        "a: !foo [1]\n"
        "b: !!set {x: null}\n"
        "c: !!omap [{k: 1}]\n"
        "d: !!python/object/apply:os.system {args: [echo]}\n"
        "e: !!map {k: 1}\n"
        "f: !!seq [1]\n"
    )
    errors = errors_of(text)
    assert [(e.line, e.path) for e in errors] == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert all("unsupported YAML tag" in e.message for e in errors)
    assert "tag:yaml.org,2002:python/object/apply:os.system" in errors[3].message
    assert parse_yaml("e: !!map {k: 1}\nf: !!seq [1]\n").data == {"e": {"k": 1}, "f": [1]}


def test_an_aliased_string_with_a_variable_is_expanded_once() -> None:
    """Each use of an alias used to expand ``${VAR}`` again into a new string: a 1 MB file took GBs."""
    big = "x" * 200_000
    text = f'a: &a "${{TAMESU_TEST_UNSET:-d}}{big}"\nb: [{", ".join(["*a"] * 500)}]\n'
    tracemalloc.start()
    try:
        doc = parse_yaml(text, env={})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert doc.data["b"][499] == "d" + big
    assert peak < 10 * len(text), f"{peak / 1e6:.0f} MB for a {len(text) / 1e6:.1f} MB file"
    unset = parse_yaml('a: &a "${TAMESU_TEST_UNSET}"\nb: [*a, *a, *a]\n', env={})
    assert unset.data == {"a": "${TAMESU_TEST_UNSET}", "b": ["${TAMESU_TEST_UNSET}"] * 3}


def test_env_expansion_with_default_and_unset_kept_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAMESU_T_URL", "http://agent")
    monkeypatch.delenv("TAMESU_T_UNSET", raising=False)
    doc = parse_yaml("a: ${TAMESU_T_URL}/chat\nb: ${TAMESU_T_UNSET:-dflt}\n")
    assert doc.data == {"a": "http://agent/chat", "b": "dflt"}
    doc = parse_yaml("x: 1\ntargets:\n  api: { url: '${TAMESU_T_URL}/${TAMESU_T_UNSET}' }\n")
    assert doc.data["targets"]["api"]["url"] == "${TAMESU_T_URL}/${TAMESU_T_UNSET}", (
        "an unset variable is this environment's problem, reported by the environment check"
    )


def test_env_expansion_skips_secret_refs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAMESU_T_UNSET", raising=False)
    doc = parse_yaml("secrets: { A: 'file:${TAMESU_T_UNSET}/a' }\n")
    assert doc.data == {"secrets": {"A": "file:${TAMESU_T_UNSET}/a"}}


def test_env_expansion_uses_the_given_environment() -> None:
    assert parse_yaml("a: ${X}", env={"X": "1"}).data == {"a": "1"}


def test_all_errors_of_a_file_at_once_sorted() -> None:
    errs = errors_of("a: !nope 1\nb: 1\nb: 2\nc: !nope 2\n")
    assert [e.line for e in errs] == [1, 3, 4]


def test_empty_document_is_none() -> None:
    assert parse_yaml("# nothing\n").data is None


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("tests", 2, "assert", 0, "judge", "scale"), "tests[2].assert[0].judge.scale"),
        ((), ""),
        (("targets", "my api", "url"), "targets['my api'].url"),
        (("vars", "x-y"), "vars.x-y"),
    ],
)
def test_format_path(path: tuple, text: str) -> None:
    assert format_path(path) == text
