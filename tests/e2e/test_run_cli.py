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


async def tamesu(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", "run", *args,
        cwd=cwd, env={**os.environ, "NO_COLOR": "1", **(env or {})},
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
async def test_an_unresolvable_secret_exits_three_naming_it(agent: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, agent, "30 days")
    suite.write_text(
        suite.read_text().replace("suite: cli", "suite: cli\nsecrets: { KEY: env:TAMESU_TEST_UNSET_KEY }")
    )
    env = {k: v for k, v in os.environ.items() if k != "TAMESU_TEST_UNSET_KEY"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", "run", "suite.yaml", cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out = (await asyncio.wait_for(proc.communicate(), 120))[0].decode()
    assert proc.returncode == 3, out
    assert "secret KEY" in out and "TAMESU_TEST_UNSET_KEY is not set" in out


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
