from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tamesu.config import Test
from tamesu.config.expand import expand_test, expanded_id, read_cases_file
from tamesu.errors import ConfigError

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent.parent / "runner" / "fixtures"


def make_test(**keys: Any) -> Test:
    return Test.model_validate({"name": "refund", "target": "api", **keys})


def ids(test: Test, folder: Path = FIXTURES) -> list[str]:
    return [e.test_id for e in expand_test(test, folder)]


def test_a_plain_test_is_itself() -> None:
    [only] = expand_test(make_test(vars={"days": "40"}), FIXTURES)
    assert (only.test_id, only.case, only.language, only.vars) == ("refund", None, None, {"days": "40"})


def test_inline_cases_override_test_vars_and_get_default_names() -> None:
    test = make_test(
        vars={"days": "40", "shop": "Mochi"},
        cases=[{"name": "late", "vars": {"days": "45"}}, {"vars": {"days": "10"}}, {"vars": {"days": "1"}}],
    )
    out = expand_test(test, FIXTURES)
    assert [e.test_id for e in out] == ["refund [late]", "refund [case 2]", "refund [case 3]"]
    assert [e.case for e in out] == ["late", "case 2", "case 3"]
    assert out[0].vars == {"days": "45", "shop": "Mochi"}
    assert out[1].vars == {"days": "10", "shop": "Mochi"}
    assert all(e.test is test for e in out)


def test_languages_make_one_test_each() -> None:
    out = expand_test(make_test(languages=["en", "es-ES"]), FIXTURES)
    assert [(e.test_id, e.language) for e in out] == [("refund (en)", "en"), ("refund (es-ES)", "es-ES")]


def test_cases_times_languages_have_unique_ids() -> None:
    test = make_test(
        cases=[{"name": "late", "vars": {}}, {"name": "early", "vars": {}}], languages=["en", "de"]
    )
    got = ids(test)
    assert got == ["refund [late] (en)", "refund [late] (de)", "refund [early] (en)", "refund [early] (de)"]
    assert len(set(got)) == len(got)


def test_csv_cases_file_names_cases_from_the_name_column() -> None:
    out = expand_test(make_test(vars={"days": "99", "shop": "Mochi"}, cases_file="cases.csv"), FIXTURES)
    assert [e.test_id for e in out] == ["refund [late]", "refund [case 2]"]
    assert out[0].vars == {"days": "40", "expect": "not possible", "shop": "Mochi"}
    assert out[1].vars == {"days": "10", "expect": "can return, gladly", "shop": "Mochi"}


def test_csv_without_a_name_column_and_with_a_bom(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_bytes('\ufeffdays,note\n5,"two\nlines"\n\n7,x\n'.encode())
    rows = read_cases_file(tmp_path / "c.csv")
    assert [(r.name, r.vars) for r in rows] == [
        (None, {"days": "5", "note": "two\nlines"}),
        (None, {"days": "7", "note": "x"}),
    ]
    assert ids(make_test(cases_file="c.csv"), tmp_path) == ["refund [case 1]", "refund [case 2]"]


def test_json_cases_file_stringifies_values() -> None:
    out = expand_test(make_test(cases_file="cases.json"), FIXTURES)
    assert [e.test_id for e in out] == ["refund [vip]", "refund [case 2]"]
    assert out[0].vars == {"tier": "gold", "limit": "100", "ok": "true"}
    assert out[1].vars == {"tier": "basic", "extra": "", "nested": '{"a": 1}'}


def test_bytes_that_are_not_utf8_in_a_cases_file_run_as_visible_escapes(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_bytes(b"name,say\nodd,caf\xe9 \xff\xfe\nnul,a\x00b\n")
    out = expand_test(make_test(cases_file="c.csv"), tmp_path)
    assert [e.test_id for e in out] == ["refund [odd]", "refund [nul]"]
    assert out[0].vars["say"] == "caf\\xe9 \\xff\\xfe"
    assert out[1].vars["say"] == "a\x00b"


@pytest.mark.parametrize(
    ("name", "content", "message", "line"),
    [
        ("missing.csv", None, "cannot read cases_file", None),
        ("c.txt", "a,b\n", "must be a .csv or a .json file", None),
        ("c.csv", "", "no header row", None),
        ("c.csv", "name,,x\n", "empty column name", 1),
        ("c.csv", "a,a\n1,2\n", "names a column twice", 1),
        ("c.csv", "name,days\nlate,40\nearly\n", "the row has 1 cells and the header 2", 3),
        ("c.json", '[{"a": 1},\n  oops]', "malformed JSON", 2),
        ("c.json", '{"a": 1}', "must be an array of objects", None),
        ("c.json", '[{"a": 1}, 3]', "every case must be an object", None),
    ],
)
def test_unreadable_cases_files_are_config_errors_naming_the_file(
    tmp_path: Path, name: str, content: str | None, message: str, line: int | None
) -> None:
    if content is not None:
        (tmp_path / name).write_text(content)
    with pytest.raises(ConfigError) as info:
        expand_test(make_test(cases_file=name), tmp_path)
    assert info.value.file == str(tmp_path / name)
    assert message in info.value.message
    assert info.value.line == line


def test_duplicate_case_names_and_languages_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="two cases named 'late'"):
        expand_test(make_test(cases=[{"name": "late", "vars": {}}, {"name": "late", "vars": {}}]), tmp_path)
    with pytest.raises(ConfigError, match="two cases named 'case 2'"):
        expand_test(make_test(cases=[{"name": "case 2", "vars": {}}, {"vars": {}}]), tmp_path)
    with pytest.raises(ConfigError, match="two languages named 'en'"):
        expand_test(make_test(languages=["en", "en"]), tmp_path)


def test_expanded_id_format() -> None:
    assert expanded_id("a") == "a"
    assert expanded_id("a", "x") == "a [x]"
    assert expanded_id("a", None, "es") == "a (es)"
    assert expanded_id("a", "x", "es") == "a [x] (es)"


def test_a_cases_file_read_again_gives_rows_of_its_own_and_follows_every_change(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text("name,city\nfirst,Oslo\n")
    rows = read_cases_file(path)
    rows[0].vars["city"] = "changed by a caller"
    assert [(r.name, r.vars) for r in read_cases_file(path)] == [("first", {"city": "Oslo"})]
    path.write_text("name,city\nfirst,Rome\n")  # same size, same second
    assert [(r.name, r.vars) for r in read_cases_file(path)] == [("first", {"city": "Rome"})]
    copy = tmp_path / "other.csv"
    copy.write_text("name,city\nfirst,Oslo\n")
    assert [(r.name, r.vars) for r in read_cases_file(copy)] == [("first", {"city": "Oslo"})]
