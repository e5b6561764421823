"""load_suite / load_project / find_suites / tamesu.validate on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

import tamesu
from tamesu.config import Project, Suite
from tamesu.config.loader import LoadedSuite, find_suites, load_project, load_suite, validate_paths
from tamesu.errors import ConfigErrors

pytestmark = pytest.mark.unit

SUITE = """\
suite: demo
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat", headers: { A: "{{secrets.TOKEN}}" } }
tests:
  - name: greeting
    target: api
    scenario: { goal: "Ask {{vars.shop}} about returns" }
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_load_suite_returns_the_models_and_where_they_came_from(tmp_path: Path) -> None:
    path = write(tmp_path / "s.yaml", SUITE.replace("{{secrets.TOKEN}}", "x").replace("{{vars.shop}}", "x"))
    loaded = load_suite(path, project=False)
    assert isinstance(loaded, LoadedSuite) and isinstance(loaded.suite, Suite)
    assert loaded.suite.tests[0].name == "greeting"
    assert loaded.path == path and loaded.dir == tmp_path.resolve()
    assert loaded.project is None and loaded.project_dir is None
    file, line, col = loaded.where("tests", 0, "target")
    assert file.endswith("s.yaml") and (line, col) == (6, 13)


def test_project_vars_and_secrets_are_in_view(tmp_path: Path) -> None:
    write(tmp_path / "tamesu.yaml", "vars: { shop: Mochi }\nsecrets: { TOKEN: env:TOKEN }\n")
    suite = write(tmp_path / "suites" / "s.yaml", SUITE)
    loaded = load_suite(suite)
    assert isinstance(loaded.project, Project)
    assert loaded.project_dir == tmp_path.resolve()
    with pytest.raises(ConfigErrors) as info:
        load_suite(suite, project=False)
    assert {e.path for e in info.value.errors} == {"targets.api.headers.A", "tests[0].scenario.goal"}


def test_project_given_as_load_project_returned_it(tmp_path: Path) -> None:
    write(tmp_path / "tamesu.yaml", "vars: { shop: Mochi }\nsecrets: { TOKEN: env:TOKEN }\n")
    suite = write(tmp_path / "elsewhere" / "s.yaml", SUITE)
    found = load_project(tmp_path)
    assert found is not None
    loaded = load_suite(suite, project=found)
    assert loaded.project is found[0] and loaded.project_dir == found[1]


def test_load_project_searches_parents_and_returns_none_without_one(tmp_path: Path) -> None:
    assert load_project(tmp_path) is None
    write(tmp_path / "tamesu.yaml", "concurrency: 3\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    project, folder = load_project(deep)  # type: ignore[misc]
    assert project.concurrency == 3 and folder == tmp_path.resolve()


def test_project_errors_name_tamesu_yaml(tmp_path: Path) -> None:
    write(tmp_path / "tamesu.yaml", "concurrency: 3\ndefaults:\n  timout: 3m\n")
    with pytest.raises(ConfigErrors) as info:
        load_project(tmp_path)
    (err,) = info.value.errors
    assert err.file.endswith("tamesu.yaml")
    assert (err.line, err.column, err.path) == (3, 3, "defaults.timout")
    assert err.hint == "did you mean 'timeout'?"


def test_update_golden_accepts_a_golden_file_not_written_yet(tmp_path: Path) -> None:
    text = SUITE.replace("{{secrets.TOKEN}}", "x").replace("{{vars.shop}}", "x")
    path = write(tmp_path / "s.yaml", text + "    assert:\n      - golden: { file: golden/g.json }\n")
    with pytest.raises(ConfigErrors):
        load_suite(path, project=False)
    assert load_suite(path, project=False, update_golden=True).suite.suite == "demo"


def test_find_suites_in_a_folder_without_project_reads_the_suite_key(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", "suite: a\n")
    b = write(tmp_path / "deeper" / "b.yml", "# comment\nsuite: b\n")
    write(tmp_path / "other.yaml", "name: not a suite\n")
    write(tmp_path / ".hidden" / "c.yaml", "suite: c\n")
    assert find_suites([tmp_path]) == [a, b]


def test_find_suites_uses_the_project_globs(tmp_path: Path) -> None:
    write(tmp_path / "tamesu.yaml", "suites: ['checks/*.yaml']\n")
    a = write(tmp_path / "checks" / "a.yaml", "suite: a\n")
    write(tmp_path / "suites" / "b.yaml", "suite: b\n")
    assert find_suites([tmp_path]) == [a]
    assert find_suites([a, tmp_path]) == [a]


def test_validate_is_the_public_function(tmp_path: Path) -> None:
    good = write(
        tmp_path / "good" / "s.yaml", SUITE.replace("{{secrets.TOKEN}}", "x").replace("{{vars.shop}}", "x")
    )
    bad = write(tmp_path / "bad" / "s.yaml", SUITE)
    assert tamesu.validate([good]) == []
    errs = tamesu.validate(str(bad))
    assert [e.path for e in errs] == ["targets.api.headers.A", "tests[0].scenario.goal"]


def test_validate_paths_counts_suites_and_tests(tmp_path: Path) -> None:
    text = SUITE.replace("{{secrets.TOKEN}}", "x").replace("{{vars.shop}}", "x")
    write(tmp_path / "one.yaml", text)
    write(tmp_path / "two.yaml", text.replace("suite: demo", "suite: two"))
    report = validate_paths([tmp_path])
    assert report.errors == [] and len(report.suites) == 2 and report.tests == 2


def test_validate_paths_reports_a_folder_without_suites(tmp_path: Path) -> None:
    (err,) = validate_paths([tmp_path]).errors
    assert "no suites found" in err.message


def test_default_project_globs_skip_virtualenvs_and_hidden_folders(tmp_path: Path) -> None:
    write(tmp_path / "tamesu.yaml", "concurrency: 2\n")
    a = write(tmp_path / "suites" / "deep" / "a.yaml", "suite: a\n")
    b = write(tmp_path / "checks" / "b.tamesu.yaml", "suite: b\n")
    c = write(tmp_path / "suites" / "c.yaml", "suite: c\n")
    write(tmp_path / ".venv" / "lib" / "x.tamesu.yaml", "suite: x\n")
    write(tmp_path / "node_modules" / "y.tamesu.yaml", "suite: y\n")
    write(tmp_path / "other" / "d.yaml", "suite: d\n")
    assert find_suites([tmp_path]) == [b, c, a]
