"""``tamesu load`` leaves its invocation in the history like ``tamesu run``: each call a run of its
test, the report's figures as a summary; ``tamesu history`` marks it and ``tamesu diff`` compares
it with the load test before it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tamesu.cli import main
from tamesu.history import HistoryDB
from tamesu.load.load_test import LoadRequest, run_load

from ..load.agents import serve_fault_agent, write_suite

pytestmark = pytest.mark.integration


async def load(suite: Path, calls: int) -> int:
    request = LoadRequest(
        paths=[str(suite)], overrides={"calls": calls, "concurrency": 2}, quiet=True, stream=io.StringIO()
    )
    return (await run_load(request)).exit_code


async def test_a_load_test_is_recorded_and_compared_with_the_one_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tamesu.yaml").write_text(
        "load: { window: 1s, gates: { pass_rate: 0.4, error_rate: 0.6 } }\n"
    )
    async with serve_fault_agent(delay=0.01) as (url, _):
        suite = write_suite(tmp_path, url, {"ok": ["hello"], "busy": ["fail"]})
        assert await load(suite, 6) == 0
        assert await load(suite, 4) == 0
    monkeypatch.chdir(tmp_path)
    history = HistoryDB(tmp_path / ".tamesu" / "history.db")
    newest, older = history.invocations()
    assert (newest.kind, older.kind) == ("load", "load")
    assert newest.summary["totals"]["calls"] == 4 and newest.summary["pass_rate"] == 0.5
    assert newest.summary["latency"]["turn_latency_ms"]["count"] == 2
    tests = {t.test_id: t for t in history.invocation(newest.id or 0).tests}
    assert (tests["ok"].verdict, tests["ok"].passed, tests["ok"].runs) == ("passed", 2, 2)
    assert (tests["busy"].verdict, tests["busy"].passed) == ("error", 0)
    assert all(r.metrics["turn_latency_ms_p50"] > 0 for r in tests["ok"].run_rows)

    capsys.readouterr()
    assert main(["--color", "never", "history"]) == 0
    assert out_lines_with(capsys.readouterr().out, "loadtest (load)") == 2
    assert main(["--color", "never", "diff", "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert (diff["a"]["id"], diff["b"]["id"]) == (older.id, newest.id)
    latency = {m["name"]: m for m in diff["metrics"]}["turn_latency_ms_p50"]
    assert latency["before"] > 0 and latency["after"] > 0, "the calls of both load tests are compared"


def out_lines_with(text: str, needle: str) -> int:
    return sum(needle in line for line in text.splitlines())
