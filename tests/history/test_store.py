"""The history database: what one invocation leaves, read back; it never fails a run."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from tamesu.history import HistoryDB, HistoryError, Invocation, RunRow, TestRow, git_state

pytestmark = pytest.mark.unit


def invocation(started: float, verdict: str = "passed", *, suites: tuple[str, ...] = ("shop",)) -> Invocation:
    runs = [
        RunRow(run_id="greets", repeat_index=0, outcome=verdict, duration=0.5, metrics={"llm_cost_usd": 0.01})
    ]
    test = TestRow(
        suite=suites[0],
        test_id="greets",
        verdict=verdict,
        passed=int(verdict == "passed"),
        runs=1,
        run_rows=runs,
    )
    return Invocation(
        suites=list(suites), started_at=started, duration=1.5, exit_code=0 if verdict == "passed" else 1,
        counts={"passed": int(verdict == "passed")}, tests=[test], git_commit="a" * 40, git_branch="main",
        cost_usd=0.01,
    )  # fmt: skip


def test_an_invocation_is_read_back_with_its_tests_runs_and_metrics(tmp_path: Path) -> None:
    db = HistoryDB(tmp_path / ".tamesu" / "history.db")
    first = db.record(invocation(100.0))
    second = db.record(invocation(200.0, "failed"))
    db.record(invocation(300.0, suites=("other",)))
    listed = db.invocations(suites=["shop"])
    assert [i.id for i in listed] == [second, first]
    back = db.invocation(second)
    assert back.git_branch == "main" and back.exit_code == 1 and back.cost_usd == 0.01
    [test] = back.tests
    assert (test.verdict, test.passed, test.runs) == ("failed", 0, 1)
    assert test.run_rows[0].metrics == {"llm_cost_usd": 0.01}
    assert db.verdicts("shop", "greets", limit=5) == [(second, "failed", 0, 1), (first, "passed", 1, 1)]


def test_reading_a_history_that_does_not_exist_says_so(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no history yet"):
        HistoryDB(tmp_path / "none.db").invocations()


def test_a_locked_or_corrupt_database_is_a_history_error(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    HistoryDB(path).record(invocation(1.0))
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HistoryError, match="locked"):
            HistoryDB(path).record(invocation(2.0))
    finally:
        holder.rollback()
        holder.close()
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(HistoryError, match="not a database"):
        HistoryDB(path).record(invocation(3.0))


def test_git_state_names_the_commit_branch_and_dirtiness(tmp_path: Path) -> None:
    assert git_state(tmp_path) == (None, None, None)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q", "-b", "feature")
    (tmp_path / "a.txt").write_text("1")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "one")
    commit, branch, dirty = git_state(tmp_path)
    assert commit is not None and len(commit) == 40 and branch == "feature" and dirty is False
    (tmp_path / "a.txt").write_text("2")
    assert git_state(tmp_path)[2] is True


def test_the_history_lies_in_the_project_else_beside_the_run_directories(tmp_path: Path) -> None:
    from tamesu.config import Project
    from tamesu.history import history_location

    project = Project.model_validate({})
    assert history_location(project, tmp_path) == tmp_path / ".tamesu" / "history.db"
    moved = Project.model_validate({"history": {"path": "state/h.db"}})
    assert history_location(moved, tmp_path, output=Path("/elsewhere/runs")) == tmp_path / "state" / "h.db"
    assert history_location(None, None, output=tmp_path / "runs") == tmp_path / ".tamesu" / "history.db"
    assert history_location(Project.model_validate({"history": {"enabled": False}}), tmp_path) is None


def test_a_version_1_file_gains_the_load_columns_and_keeps_its_invocations(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    db = HistoryDB(path)
    kept = db.record(invocation(1.0))
    with sqlite3.connect(path) as old:
        for table, column in (("invocations", "kind"), ("invocations", "summary"), ("tests", "seq")):
            old.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        old.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    assert [i.id for i in db.invocations()] == [kept] and db.invocations()[0].kind == "run"
    assert db.invocation(kept).tests[0].test_id == "greets"
    with sqlite3.connect(path) as migrated:
        assert migrated.execute("SELECT value FROM meta").fetchone() == ("2",)
