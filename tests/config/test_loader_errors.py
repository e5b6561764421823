"""pydantic's errors as ConfigErrors: located, in plain words, one per mistake, with did-you-mean."""

from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.config import Suite
from tamesu.config.errors_map import accepted_keys, did_you_mean, model_at
from tamesu.config.loader import load_suite
from tamesu.errors import ConfigError, ConfigErrors

pytestmark = pytest.mark.unit

HEAD = """\
suite: demo
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat" }
tests:
  - name: greeting
    target: api
"""


def errors(tmp_path: Path, body: str, head: str = HEAD) -> list[ConfigError]:
    path = tmp_path / "suite.yaml"
    path.write_text(head + body, encoding="utf-8")
    with pytest.raises(ConfigErrors) as info:
        load_suite(path, project=False)
    return info.value.errors


def one(tmp_path: Path, body: str, head: str = HEAD) -> ConfigError:
    errs = errors(tmp_path, body, head)
    assert len(errs) == 1, [str(e) for e in errs]
    return errs[0]


def test_unknown_key_at_the_key_with_did_you_mean(tmp_path: Path) -> None:
    err = one(tmp_path, "    assert:\n      - contians: hi\n")
    assert (err.line, err.column) == (8, 9)
    assert err.path == "tests[0].assert[0].contians"
    assert err.message == "unknown key 'contians'"
    assert err.hint == "did you mean 'contains'?"
    assert err.file.endswith("suite.yaml")


def test_unknown_key_without_a_close_match_lists_the_accepted_keys(tmp_path: Path) -> None:
    err = one(tmp_path, "    scenario: { goal: hi, zzz: 1 }\n")
    assert err.message == "unknown key 'zzz'"
    assert err.hint.startswith("accepted keys: ") and "max_turns" in err.hint


def test_missing_key_at_the_parent_mapping(tmp_path: Path) -> None:
    err = one(tmp_path, "    assert:\n      - judge: { scale: 1-5 }\n")
    assert err.message == "required key 'rubric' is missing"
    assert err.path == "tests[0].assert[0].judge.rubric"
    assert (err.line, err.column) == (8, 16)


def test_enum_error_names_the_choices_and_the_closest(tmp_path: Path) -> None:
    err = one(tmp_path, "    assert:\n      - judge: { rubric: r, scale: '1-6' }\n")
    assert err.message == "expected one of binary, 1-5, got '1-6'"
    assert err.hint == "did you mean '1-5'?"
    assert err.path == "tests[0].assert[0].judge.scale"


def test_union_members_collapse_into_one_error(tmp_path: Path) -> None:
    err = one(tmp_path, "    assert:\n      - judge: 5\n")
    assert err.message == "expected a string or a mapping, got the number 5"
    assert err.path == "tests[0].assert[0].judge"


def test_target_type_is_checked_against_every_type(tmp_path: Path) -> None:
    head = "suite: demo\ntargets:\n  api: { type: reest, url: x }\ntests:\n  - { name: a, target: api }\n"
    err = one(tmp_path, "", head)
    assert err.path == "targets.api.type"
    assert err.message.startswith("expected one of a2a, browser,") and err.message.endswith("got 'reest'")
    assert err.hint == "did you mean 'rest'?"


def test_duration_error_in_plain_words(tmp_path: Path) -> None:
    err = one(tmp_path, "    timeout: 3 minutes\n")
    assert err.message == "expected a duration such as 30s, 3m or 1h30m, got '3 minutes'"
    assert (err.line, err.path) == (7, "tests[0].timeout")


def test_number_for_a_string_suggests_quoting(tmp_path: Path) -> None:
    err = one(tmp_path, "    vars: { days: 40 }\n")
    assert err.message == "expected a string, got the number 40"
    assert err.hint == 'quote it: "40"'
    assert err.path == "tests[0].vars.days"


def test_bounds_in_plain_words(tmp_path: Path) -> None:
    err = one(tmp_path, "    pass_threshold: 1.5\n")
    assert err.path == "tests[0].pass_threshold"
    assert "at most 1" in err.message and "1.5" in err.message


def test_two_assertion_kinds_in_one_item(tmp_path: Path) -> None:
    err = one(tmp_path, "    assert:\n      - { contains: a, regex: b }\n")
    assert err.message == "an assertion takes exactly one kind, found contains, regex"
    assert err.path == "tests[0].assert[0]"


def test_every_error_of_the_file_sorted_by_line(tmp_path: Path) -> None:
    errs = errors(tmp_path, "    timeout: 3x\n    repeat: many\n    assert:\n      - contians: a\n")
    assert [e.line for e in errs] == [7, 8, 10]
    assert [e.path for e in errs] == ["tests[0].timeout", "tests[0].repeat", "tests[0].assert[0].contians"]


def test_schema_errors_do_not_hide_the_checks_errors(tmp_path: Path) -> None:
    errs = errors(tmp_path, "    timeout: 3x\n  - { name: b, target: nope }\n")
    assert [e.path for e in errs] == ["tests[0].timeout", "tests[1].target"]
    assert errs[1].message == "unknown target 'nope'"


def test_an_unexpected_failure_becomes_one_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr("tamesu.config.checks.check_document", boom)
    err = one(tmp_path, "")
    assert err.file.endswith("suite.yaml")
    assert "RuntimeError: kaboom" in err.message
    assert "bug" in err.hint


def test_unreadable_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigErrors) as info:
        load_suite(tmp_path / "nope.yaml", project=False)
    assert info.value.errors[0].message == "file not found"
    (tmp_path / "bad.yaml").write_bytes(b"suite: \xff\xfe\n")
    with pytest.raises(ConfigErrors) as info:
        load_suite(tmp_path / "bad.yaml", project=False)
    assert "not UTF-8" in info.value.errors[0].message


def test_a_huge_suite_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.write(HEAD.encode())
        f.truncate(200 * 1024 * 1024)  # sparse: 200 MB on paper, nothing on the disk
    with pytest.raises(ConfigErrors) as info:
        load_suite(path, project=False)
    (err,) = info.value.errors
    assert (
        err.message == "the file is too large to load (200.0 MB; a suite or tamesu.yaml may be at most 16 MB)"
    )
    assert err.file.endswith("huge.yaml") and "cases_file" in err.hint


def test_model_at_and_accepted_keys_follow_the_data() -> None:
    data = {"tests": [{"assert": [{"judge": {"rubric": "r"}}]}]}
    assert model_at(Suite, ("tests", 0, "assert", 0, "judge"), data).__name__ == "Judge"
    assert "tests" in accepted_keys(Suite, (), data)
    assert "on_turn" in accepted_keys(Suite, ("tests", 0, "assert", 0), data)
    assert accepted_keys(Suite, ("vars",), {"vars": {}}) == []


def test_did_you_mean() -> None:
    assert did_you_mean("contians", ["contains", "regex"]) == "did you mean 'contains'?"
    assert did_you_mean("zzz", ["contains"]) == ""


def test_a_scalar_for_a_one_key_mapping_suggests_the_mapping(tmp_path: Path) -> None:
    err = one(tmp_path, '    assert:\n      - dtmf_received: "42#"\n')
    assert err.message == "expected a mapping, got '42#'"
    assert err.path == "tests[0].assert[0].dtmf_received"
    assert err.hint == 'did you mean dtmf_received: { equals: "42#" }?'
