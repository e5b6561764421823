"""A team's shared history on a PostgreSQL server: the same schema and commands as the file, the
password never shown, and runs that start together both recorded."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.history import HistoryDB, HistoryError

from .postgres import PASSWORD, Server, postgres_server
from .test_history_cli import run_suite
from .test_store import invocation

pytestmark = pytest.mark.integration

ENCODED = "hist%2FSecret%3A9431"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with postgres_server() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    from ..reports.runs import shop_agent

    with shop_agent() as url:
        (tmp_path / "tamesu.yaml").write_text("output: runs\nhistory: { url: env:TEAM_HISTORY_URL }\n")
        monkeypatch.chdir(tmp_path)
        yield tmp_path, url


def no_password(text: str) -> None:
    assert PASSWORD not in text and ENCODED not in text and "Secret" not in text, text


def test_runs_are_recorded_on_the_server_and_the_commands_read_them(
    server: Server,
    project: tuple[Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, url = project
    monkeypatch.setenv("TEAM_HISTORY_URL", server.new_database())
    assert run_suite(root, url, "Hello") == 0
    assert run_suite(root, url, "Goodbye") == 1
    assert not (root / ".tamesu").exists(), "no file when the history is on a server"
    no_password("".join(capsys.readouterr()))
    assert main(["--color", "never", "history", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [i["exit_code"] for i in listed] == [1, 0] and all(i["kind"] == "run" for i in listed)
    assert main(["--color", "never", "diff"]) == 0
    out = capsys.readouterr().out
    assert "Regressions: 1\n  shop / greets: passed 1/1" in out
    assert "Flaky: none" in out, "it failed in every repeat of the new run: failing, not flaky"
    assert main(["--color", "never", "history", "--test", "shop / greets", "--json"]) == 0
    assert [r["verdict"] for r in json.loads(capsys.readouterr().out)] == ["failed", "passed"]


def test_a_wrong_password_is_a_warning_that_never_shows_the_password(
    server: Server,
    project: tuple[Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, url = project
    wrong = server.url().replace(ENCODED, "wrong%2FSecret%3A1")
    monkeypatch.setenv("TEAM_HISTORY_URL", wrong)
    assert run_suite(root, url, "Hello") == 0, "history never fails a run"
    out, err = capsys.readouterr()
    assert "history not recorded" in out + err and "tamesu:***@" in out + err
    assert "wrong" not in out + err
    assert main(["--color", "never", "history", "--db", server.url(password="nope/Secret")]) == 2
    out, err = capsys.readouterr()
    assert "password authentication failed" in err and "nope" not in out + err


def test_the_password_is_masked_in_every_message(server: Server) -> None:
    db = HistoryDB(server.url())
    no_password(db.name)
    with pytest.raises(HistoryError) as caught:
        HistoryDB(server.url(database="no_such_db")).invocations()
    no_password(str(caught.value))
    assert "no_such_db" in str(caught.value)


def test_runs_that_start_together_on_a_new_database_are_both_recorded(server: Server) -> None:
    url = server.new_database()
    ids: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def record(i: int) -> None:
        start.wait()
        try:
            ids.append(HistoryDB(url).record(invocation(float(i))))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and sorted(ids) == [1, 2, 3, 4]
    assert [i.started_at for i in HistoryDB(url).invocations()] == [3.0, 2.0, 1.0, 0.0]


def test_a_password_written_in_tamesu_yaml_is_refused_without_printing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tamesu.yaml").write_text(
        f'history: {{ url: "postgresql://tamesu:{ENCODED}@db.example/history" }}\n'
    )
    (tmp_path / "shop.yaml").write_text(
        "suite: shop\ntargets: { api: { type: rest, url: http://127.0.0.1:9 } }\ntests: []\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["--color", "never", "validate", "shop.yaml"]) == 2
    out, err = capsys.readouterr()
    assert "tamesu.yaml:1" in out + err and "history.url" in out + err and "secret ref" in out + err
    no_password(out + err)
