"""History through the real commands: ``tamesu run`` records, ``history`` lists, ``diff`` compares."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tamesu.cli import main

from ..reports.runs import shop_agent

pytestmark = pytest.mark.integration

SUITE = """
suite: shop
targets:
  api: {{ type: rest, url: "{url}/chat", response: {{ text: $.reply }} }}
tests:
  - name: greets
    target: api
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ contains: "{expect}" }} ]
  - name: refund policy
    target: api
    repeat: 2
    scenario: {{ script: [ {{ say: refund }} ] }}
    assert: [ {{ contains: "days" }} ]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    with shop_agent() as url:
        (tmp_path / "tamesu.yaml").write_text("output: runs\n")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
        subprocess.run(["git", "add", "tamesu.yaml"], cwd=tmp_path, check=True)
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start"],
            cwd=tmp_path, check=True,
        )  # fmt: skip
        monkeypatch.chdir(tmp_path)
        yield tmp_path, url


def run_suite(root: Path, url: str, expect: str) -> int:
    (root / "shop.yaml").write_text(SUITE.format(url=url, expect=expect))
    return main(["run", "shop.yaml", "-q", "-j", "1", "--color", "never"])


def test_each_run_is_recorded_and_diff_names_the_regression(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, url = project
    assert run_suite(root, url, "Hello") == 0
    assert run_suite(root, url, "Goodbye") == 1
    capsys.readouterr()
    assert main(["history", "--color", "never"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split() == [
        "id",
        "when",
        "suites",
        "git",
        "pass/fail/err",
        "took",
        "cost",
        "per",
        "pass",
        "exit",
    ]
    assert [line.split()[0] for line in listed[1:]] == ["2", "1"]
    assert "main@" in listed[1] and listed[1].split()[-1] == "1" and "1/1/0" in listed[1]
    assert main(["diff"]) == 0
    out = capsys.readouterr().out
    assert "Regressions: 1" in out and "shop / greets: passed 1/1 -> failed 0/1" in out
    assert "Fixes: none" in out and "turn_latency_ms_p50" in out
    assert main(["diff", "--fail-on-regression", "--markdown"]) == 1
    assert "**1 regression(s).**" in capsys.readouterr().out
    assert main(["diff", "2", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["kind"] for c in data["changes"]] == ["fix"]
    assert main(["history", "--test", "shop / greets"]) == 0
    assert [line.split()[2] for line in capsys.readouterr().out.splitlines()[1:]] == ["failed", "passed"]


def test_diff_compares_two_run_directories(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, url = project
    run_suite(root, url, "Goodbye")
    first = (root / "runs" / "latest").resolve()
    run_suite(root, url, "Hello")
    second = (root / "runs" / "latest").resolve()
    capsys.readouterr()
    assert main(["diff", str(first), str(second), "--db", str(root / "nowhere.db")]) == 0
    out = capsys.readouterr().out
    assert "Fixes: 1" in out and "shop / greets: failed 0/1 -> passed 1/1" in out
    assert main(["diff", str(first)]) == 0  # against the latest run directory
    assert "Fixes: 1" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["locked", "corrupt"])
def test_a_broken_history_is_a_warning_and_never_fails_the_run(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    root, url = project
    assert run_suite(root, url, "Hello") == 0
    db = root / ".tamesu" / "history.db"
    holder = None
    if damage == "locked":
        holder = sqlite3.connect(db)
        holder.execute("BEGIN EXCLUSIVE")
    else:
        db.write_bytes(b"\x00garbage" * 512)
    try:
        capsys.readouterr()
        assert run_suite(root, url, "Hello") == 0
    finally:
        if holder is not None:
            holder.rollback()
            holder.close()
    out = capsys.readouterr().out
    assert "note: history not recorded:" in out
    assert ("locked" if damage == "locked" else "not a database") in out
    assert "2 passed, 0 failed, 0 errors" in out


def test_a_row_tamesu_did_not_write_is_named_and_skipped(
    project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, url = project
    assert run_suite(root, url, "Hello") == 0
    assert run_suite(root, url, "Goodbye") == 1
    with sqlite3.connect(root / ".tamesu" / "history.db") as db:
        db.execute(
            "INSERT INTO invocations (id, started_at, duration, exit_code, suites, suite_key, counts)"
            " VALUES (99, 1, 1, 0, '[\"shop\"]', 'shop', 'not json')"
        )
        db.execute("UPDATE tests SET tags = '{broken' WHERE invocation_id = 1 AND test_id = 'greets'")
    capsys.readouterr()
    assert main(["--color", "never", "history"]) == 0
    out, err = capsys.readouterr()
    assert "skipped a row of invocations tamesu did not write (id=99)" in err
    assert len([line for line in out.splitlines() if line.split()[:1] in (["1"], ["2"])]) == 2
    assert main(["--color", "never", "diff"]) == 0
    out, err = capsys.readouterr()
    assert (
        "greets" in out
        and "skipped a row of tests tamesu did not write (invocation_id=1, test_id='greets')" in err
    )
