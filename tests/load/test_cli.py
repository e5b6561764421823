"""``tamesu load`` as a user runs it: a subprocess against a loopback agent started here."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .agents import FaultAgent, closed_port, serve_fault_agent, write_suite

pytestmark = pytest.mark.integration

PROJECT = """
load:
  concurrency: 3
  calls: 12
  window: 1s
  gates: { pass_rate: 0.5, slo: { turn_latency_ms_p99: 60000 } }
"""


@pytest.fixture
async def agent() -> AsyncIterator[tuple[str, FaultAgent]]:
    async with serve_fault_agent(delay=0.01) as served:
        yield served


async def start(cwd: Path, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", "load", *args,
        cwd=cwd, env={**os.environ, "NO_COLOR": "1"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip


async def written(cwd: Path, count: int, proc: asyncio.subprocess.Process) -> Path:
    """The load test's results.jsonl once it holds ``count`` results (the file is what a load test
    shows of its progress); fails if the process ends first."""
    while proc.returncode is None:
        runs = list((cwd / "tamesu-runs").glob("*-load-loadtest-*/results.jsonl"))
        if runs and len(runs[0].read_text().splitlines()) >= count:
            return runs[0]
        await asyncio.sleep(0.05)
    out = await proc.stdout.read() if proc.stdout is not None else b""
    raise AssertionError(f"the load test ended before {count} results:\n{out.decode()}")


async def tamesu_load(cwd: Path, *args: str) -> tuple[int, str]:
    proc = await start(cwd, *args)
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode()


def report(cwd: Path) -> dict:
    return json.loads((cwd / "tamesu-runs" / "latest" / "load-report.json").read_text())


async def test_the_profile_comes_from_tamesu_yaml_and_gates_decide_the_exit_code(
    agent: tuple[str, FaultAgent], tmp_path: Path
) -> None:
    url, _ = agent
    (tmp_path / "tamesu.yaml").write_text(PROJECT)
    write_suite(tmp_path, url, {"ok": ["hello"], "busy": ["fail"]})
    code, out = await tamesu_load(tmp_path, "suite.yaml", "--no-live", "--json", "load.json")
    assert code == 0, out
    assert "Load test: steady, 3 calls in flight, 12 calls" in out
    assert "PASS pass_rate: 50.0% (at least 50.0%)  6/12 calls passed" in out
    assert "errors by kind: http_5xx 6" in out
    data = report(tmp_path)
    assert data == json.loads((tmp_path / "load.json").read_text())
    assert data["totals"]["outcomes"] == {"passed": 6, "error": 6}
    assert {t["test"]: t["pass_rate"] for t in data["tests"]} == {"ok": 1.0, "busy": 0.0}
    assert data["gates_passed"] and data["exit_code"] == 0
    assert data["latency"]["turn_latency_ms"]["count"] == 6

    code, out = await tamesu_load(tmp_path, "suite.yaml", "-q", "--min-pass-rate", "0.9", "--calls", "4")
    assert code == 1, out
    assert "FAIL pass_rate: 50.0% (at least 90.0%)  2/4 calls passed" in out


async def test_exit_three_when_no_call_reaches_the_agent(tmp_path: Path) -> None:
    write_suite(tmp_path, f"http://127.0.0.1:{closed_port()}", {"ok": ["hello"]})
    code, out = await tamesu_load(tmp_path, "suite.yaml", "-q", "--calls", "3", "-j", "3")
    assert code == 3, out
    assert "errors by kind: refused 3" in out


async def test_an_interrupted_load_test_resumes_to_exactly_its_calls(tmp_path: Path) -> None:
    async with serve_fault_agent(delay=0.1) as (url, agent):
        agent.hold_after = 4  # the fifth call waits: the test cannot end before it is interrupted
        write_suite(tmp_path, url, {"ok": ["hello"]})
        proc = await start(tmp_path, "suite.yaml", "--no-live", "--calls", "40", "-j", "2")
        results = await asyncio.wait_for(written(tmp_path, 4, proc), 120)
        proc.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 130, out.decode()
        assert "resume with tamesu load --resume" in out.decode()
        assert len(results.read_text().splitlines()) == 4, "the calls answered, and only those"
        agent.release.set()
        code, text = await tamesu_load(tmp_path, "suite.yaml", "--resume", "-q")
        assert code == 0, text
    data = report(tmp_path)
    assert data["totals"]["outcomes"] == {"passed": 40}
    run_ids = [json.loads(line)["run_id"] for line in results.read_text().splitlines()]
    assert sorted(run_ids) == sorted(f"ok@{i}" for i in range(40))


async def test_a_test_this_environment_cannot_run_is_reported_once_and_never_called(
    agent: tuple[str, FaultAgent], tmp_path: Path
) -> None:
    url, fault = agent
    write_suite(
        tmp_path, url, {"ok": ["hello"], "regional": ['"in {{vars.region}}"']},
        extra='vars: { region: "${TAMESU_T_UNSET_REGION}" }\n',
    )  # fmt: skip
    code, out = await tamesu_load(tmp_path, "suite.yaml", "--no-live", "--calls", "6", "-j", "2")
    assert code == 0, out
    assert "not run here: loadtest / regional: suite.yaml:" in out
    assert "environment variable TAMESU_T_UNSET_REGION is not set" in out
    assert fault.requests == 6, "every call went to the test that can run"
    data = report(tmp_path)
    assert data["totals"]["outcomes"] == {"passed": 6}
    assert {t["test"]: t["outcomes"] for t in data["tests"]} == {
        "regional": {"error": 1},
        "ok": {"passed": 6},
    }

    code, out = await tamesu_load(tmp_path, "suite.yaml", "-q", "--calls", "6", "--filter", "regional")
    assert code == 3, out
    assert fault.requests == 6


async def test_exit_five_when_the_selection_leaves_no_test(tmp_path: Path) -> None:
    write_suite(tmp_path, "http://127.0.0.1:9", {"ok": ["hello"]})
    code, out = await tamesu_load(tmp_path, "suite.yaml", "--calls", "3", "--tags", "nightly")
    assert code == 5, out
    assert "no test selected by --tags nightly" in out


async def test_worker_processes_give_one_merged_report_and_gate(
    agent: tuple[str, FaultAgent], tmp_path: Path
) -> None:
    url, fault = agent
    (tmp_path / "tamesu.yaml").write_text(PROJECT)
    write_suite(tmp_path, url, {"ok": ["hello"], "busy": ["fail"]})
    code, out = await tamesu_load(tmp_path, "suite.yaml", "--no-live", "--processes", "2")
    assert code == 0, out
    assert "Load test: steady, 3 calls in flight, 12 calls in 2 worker processes" in out
    assert "PASS pass_rate: 50.0% (at least 50.0%)  6/12 calls passed" in out
    data = report(tmp_path)
    assert data["totals"]["outcomes"] == {"passed": 6, "error": 6}
    assert {t["test"]: t["pass_rate"] for t in data["tests"]} == {"ok": 1.0, "busy": 0.0}
    assert fault.requests == 12 and fault.max_in_flight <= 3
    lines = (tmp_path / "tamesu-runs" / "latest" / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["run_id"] for line in lines) == sorted(
        f"{'ok' if i % 2 == 0 else 'busy'}@{i}" for i in range(12)
    )


async def test_processes_and_ray_together_are_a_usage_error(tmp_path: Path) -> None:
    write_suite(tmp_path, "http://127.0.0.1:9", {"ok": ["hello"]})
    code, out = await tamesu_load(tmp_path, "suite.yaml", "-q", "--processes", "2", "--ray")
    assert code == 2, out
    assert "--processes runs the tests on this machine" in out
    code, out = await tamesu_load(tmp_path, "suite.yaml", "-q", "--processes", "none")
    assert code == 2, out
    assert "expected a whole number of 1 or more or auto, got 'none'" in out


async def test_an_interrupted_load_test_in_worker_processes_keeps_what_finished_and_resumes(
    tmp_path: Path,
) -> None:
    async with serve_fault_agent(delay=0.1) as (url, agent):
        agent.hold_after = 4
        write_suite(tmp_path, url, {"ok": ["hello"]})
        proc = await start(
            tmp_path, "suite.yaml", "--no-live", "--calls", "20", "-j", "2", "--processes", "2"
        )
        results = await asyncio.wait_for(written(tmp_path, 4, proc), 120)
        proc.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 130, out.decode()
        assert len(results.read_text().splitlines()) == 4
        agent.release.set()
        code, text = await tamesu_load(tmp_path, "suite.yaml", "--resume", "-q", "--processes", "2")
        assert code == 0, text
    assert report(tmp_path)["totals"]["outcomes"] == {"passed": 20}
