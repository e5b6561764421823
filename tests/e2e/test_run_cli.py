"""The real ``tamesu run`` command, in a subprocess, against a real loopback agent."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

SUITE = """
suite: cli
targets:
  api:
    type: rest
    url: "{{{{vars.url}}}}/chat"
    request: {{ body: {{ message: "{{{{message}}}}" }} }}
    response: {{ text: $.reply }}
vars: {{ url: "{url}" }}
tests:
  - name: greets
    target: api
    scenario: {{ max_turns: 1, script: [ {{ say: "hello" }} ] }}
    assert: [ {{ contains: "echo: hello" }} ]
  - name: refunds
    target: api
    repeat: 2
    scenario: {{ max_turns: 2, script: [ {{ say: "refund" }}, {{ say: "{answer}" }} ] }}
    assert: [ {{ contains: "echo: 30 days" }} ]
"""


@pytest.fixture
async def agent() -> AsyncIterator[str]:
    """Echoes the message; a message ``hang`` is answered only when the test is over."""
    over = asyncio.Event()

    async def chat(request: web.Request) -> web.Response:
        message = (await request.json())["message"]
        if message == "hang":
            await over.wait()
        return web.json_response({"reply": f"echo: {message}"})

    app = web.Application()
    app.router.add_post("/chat", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    over.set()
    await runner.cleanup()


async def tamesu(
    cwd: Path, *args: str, env: dict[str, str] | None = None, unset: tuple[str, ...] = ()
) -> tuple[int, str]:
    full = {k: v for k, v in os.environ.items() if k not in unset}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", "run", *args,
        cwd=cwd, env={**full, "NO_COLOR": "1", **(env or {})},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode()


def write_suite(tmp_path: Path, url: str, answer: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(url=url, answer=answer))
    return path


@pytest.mark.integration
async def test_exit_zero_when_everything_passes(agent: str, tmp_path: Path) -> None:
    write_suite(tmp_path, agent, "30 days")
    code, out = await tamesu(tmp_path, "suite.yaml", "--junit", "junit.xml", "--json", "out.json", "-j", "2")
    assert code == 0, out
    assert "2 passed, 0 failed, 0 errors" in out
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert root.get("tests") == "2" and root.get("failures") == "0"
    data = json.loads((tmp_path / "out.json").read_text())
    assert [t["pass_count"] for t in data["tests"]] == ["1/1 passed", "2/2 passed"]
    run_dir = next((tmp_path / "tamesu-runs").glob("*-cli-*"))
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == 3
    settings = json.loads((run_dir / "settings.json").read_text())
    assert settings["argv"][-7:] == ["suite.yaml", "--junit", "junit.xml", "--json", "out.json", "-j", "2"]
    assert settings["options"]["concurrency"] == 2
    assert "cli / refunds" in (run_dir / "report.html").read_text()
    last = out.rstrip().splitlines()[-1]
    assert last == f"results in tamesu-runs/{run_dir.name}, report tamesu-runs/{run_dir.name}/report.html"


@pytest.mark.integration
async def test_no_html_and_the_project_setting_leave_the_report_out(agent: str, tmp_path: Path) -> None:
    write_suite(tmp_path, agent, "30 days")
    code, out = await tamesu(tmp_path, "suite.yaml", "--no-html")
    assert code == 0, out
    assert out.rstrip().splitlines()[-1].startswith("results in ") and "report" not in out.splitlines()[-1]
    (tmp_path / "tamesu.yaml").write_text("html_report: false\nhistory: { enabled: false }\n")
    code, out = await tamesu(tmp_path, "suite.yaml")
    assert code == 0, out
    assert not list((tmp_path / "tamesu-runs").glob("*/report.html"))


@pytest.mark.integration
async def test_exit_one_when_a_test_fails_and_options_come_from_the_environment(
    agent: str, tmp_path: Path
) -> None:
    write_suite(tmp_path, agent, "90 days")
    code, out = await tamesu(tmp_path, "suite.yaml", env={"TAMESU_FILTER": "refunds", "TAMESU_REPEAT": "3"})
    assert code == 1, out
    assert "0 passed, 1 failed, 0 errors" in out
    assert "FAIL cli / refunds (0/3 passed)" in out
    assert "contains: expected 'echo: 30 days'" in out
    assert "agent: echo: 90 days" in out


@pytest.mark.integration
async def test_exit_two_on_a_config_error_and_three_when_the_agent_is_down(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "suite: bad\ntargets: {}\ntests: [ { name: x, target: nowhere, scenario: { goal: hi } } ]\n"
    )
    code, out = await tamesu(tmp_path, "bad.yaml")
    assert code == 2, out
    assert "bad.yaml" in out
    assert not (tmp_path / "tamesu-runs").exists()

    write_suite(tmp_path, "http://127.0.0.1:9", "30 days")
    code, out = await tamesu(tmp_path, "suite.yaml", "--filter", "greets")
    assert code == 3, out
    assert "0 passed, 0 failed, 1 error" in out


@pytest.mark.integration
async def test_exit_five_when_the_selection_leaves_no_test(agent: str, tmp_path: Path) -> None:
    write_suite(tmp_path, agent, "30 days")
    code, out = await tamesu(tmp_path, "suite.yaml", "--filter", "/^refund$/")
    assert code == 5, out
    assert out.strip() == "tamesu: no test selected by --filter /^refund$/"
    assert not (tmp_path / "tamesu-runs").exists()
    code, out = await tamesu(tmp_path, "suite.yaml", "--filter", "/^refunds$/", "--json", "out.json")
    assert code == 0, out
    assert [t["test_id"] for t in json.loads((tmp_path / "out.json").read_text())["tests"]] == ["refunds"]
    code, out = await tamesu(tmp_path, "suite.yaml", "--filter", "/[/")
    assert code == 2 and "--filter /[/: not a valid regular expression" in out, out


@pytest.mark.integration
async def test_a_secret_no_test_uses_never_stops_a_run(agent: str, tmp_path: Path) -> None:
    write_suite(tmp_path, agent, "30 days")
    (tmp_path / "tamesu.yaml").write_text("secrets: { AGENT_TOKEN: env:TAMESU_TEST_UNSET_KEY }\n")
    code, out = await tamesu(tmp_path, "suite.yaml", "--json", "out.json", unset=("TAMESU_TEST_UNSET_KEY",))
    assert code == 0, out
    assert "2 passed, 0 failed, 0 errors" in out


@pytest.mark.integration
async def test_an_unset_model_key_secret_stops_only_the_tests_that_need_a_model(
    agent: str, tmp_path: Path
) -> None:
    suite = write_suite(tmp_path, agent, "30 days")
    suite.write_text(
        suite.read_text().replace(
            '[ { contains: "echo: hello" } ]',
            '[ { contains: "echo: hello" }, { judge: "The agent greets" } ]',
        )
    )
    (tmp_path / "tamesu.yaml").write_text(
        "secrets: { KEY: env:TAMESU_TEST_UNSET_KEY }\n"
        'models: { default: openai/gpt-4.1-mini, credentials: { openai: "{{secrets.KEY}}" } }\n'
    )
    code, out = await tamesu(tmp_path, "suite.yaml", unset=("TAMESU_TEST_UNSET_KEY", "OPENAI_API_KEY"))
    assert code == 3, out
    assert "1 passed, 0 failed, 1 error" in out
    assert "ERROR cli / greets" in out and "TAMESU_TEST_UNSET_KEY is not set" in out


@pytest.mark.integration
async def test_a_missing_secret_a_test_uses_makes_that_test_an_error_and_the_rest_run(
    agent: str, tmp_path: Path
) -> None:
    suite = write_suite(tmp_path, agent, "30 days")
    suite.write_text(
        suite.read_text()
        .replace("suite: cli", "suite: cli\nsecrets: { KEY: 'exec:exit 7' }")
        .replace('{ say: "refund" }', '{ say: "refund {{secrets.KEY}}" }')
    )
    code, out = await tamesu(tmp_path, "suite.yaml", "--json", "out.json", "--junit", "junit.xml")
    assert code == 3, out
    assert "1 passed, 0 failed, 1 error" in out
    report = json.loads((tmp_path / "out.json").read_text())
    runs = [run for test in report["tests"] for run in test["runs"]]
    errors = {r["run_id"]: r for r in runs if r["outcome"] == "error"}
    assert set(errors) == {"refunds#1", "refunds#2"}
    assert all("secret KEY: secret command exited 7" in r["error"] for r in errors.values())
    assert all(r["turns"] == 0 and r["error_kind"] == "secret" for r in errors.values()), "never started"
    assert "secret command exited 7" in (tmp_path / "junit.xml").read_text()


@pytest.mark.integration
async def test_ctrl_c_keeps_what_finished_and_exits_130(agent: str, tmp_path: Path) -> None:
    write_suite(tmp_path, agent, "hang")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", "run", "suite.yaml", "-j", "3", cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    results = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list((tmp_path / "tamesu-runs").glob("*-cli-*/results.jsonl"))
        if found and found[0].read_text().strip():
            results = found[0]
            break
        await asyncio.sleep(0.05)
    assert results is not None, "the passing run was never recorded"
    proc.send_signal(signal.SIGINT)
    out = (await asyncio.wait_for(proc.communicate(), 60))[0].decode()
    assert proc.returncode == 130, out
    assert [json.loads(line)["test_id"] for line in results.read_text().splitlines()] == ["greets"]
    summary = json.loads((results.parent / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["exit_code"] == 130
    assert "interrupted" in out


@pytest.mark.integration
async def test_a_run_directory_in_use_refuses_a_resume_and_a_torn_line_is_mended_on_resume(
    agent: str, tmp_path: Path
) -> None:
    write_suite(tmp_path, agent, "hang")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", "run", "suite.yaml", "-j", "3", cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    results = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list((tmp_path / "tamesu-runs").glob("*-cli-*/results.jsonl"))
        if found and found[0].read_text().strip():
            results = found[0]
            break
        await asyncio.sleep(0.05)
    assert results is not None, "the passing run was never recorded"
    code, out = await tamesu(tmp_path, "--resume", str(results.parent))
    assert code == 2, out
    assert f"is in use by another tamesu (pid {proc.pid})" in out
    proc.send_signal(signal.SIGINT)
    await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 130

    with results.open("ab") as f:
        f.write(b'{"run_id": "refunds#1", "outcome": "pas')  # what a crash mid-write leaves
    write_suite(tmp_path, agent, "30 days")
    code, out = await tamesu(tmp_path, "--resume", str(results.parent))
    assert code == 0, out
    assert "note: results.jsonl: cut a torn last line" in out
    lines = results.read_text().splitlines()
    assert sorted(json.loads(line)["run_id"] for line in lines) == ["greets", "refunds#1", "refunds#2"]


@pytest.mark.ray
async def test_ray_placement_end_to_end(agent: str, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    write_suite(tmp_path, agent, "30 days")
    code, out = await tamesu(tmp_path, "suite.yaml", "--ray", "-j", "2", env={"RAY_ADDRESS": ""})
    assert code == 0, out
    assert "2 passed, 0 failed, 0 errors" in out


@pytest.mark.integration
async def test_processes_placement_end_to_end(agent: str, tmp_path: Path) -> None:
    write_suite(tmp_path, agent, "30 days")
    code, out = await tamesu(tmp_path, "suite.yaml", "--processes", "2", "-j", "2")
    assert code == 0, out
    assert "2 passed, 0 failed, 0 errors" in out
    code, out = await tamesu(tmp_path, "suite.yaml", "--processes", "2", "--address", "127.0.0.1:9")
    assert code == 2, out
    assert "--processes runs the tests on this machine" in out
