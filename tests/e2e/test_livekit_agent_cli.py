"""``tamesu run`` tests a real LiveKit Agents worker the way a team's CI would, with no LiveKit server.

examples/livekit_agent holds the agent (``agent.py``, a ``livekit-agents`` worker), its suite and a
tamesu.yaml with ``livekit: { serve: true }``: the run starts the loopback server, the suite's
``before_all`` starts the worker against it, and the tests grade what the agent said and the
tool it called. ``tamesu serve livekit`` is the same server run by hand.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("livekit.agents")
pytest.importorskip("aiortc")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "livekit_agent"


async def tamesu(cwd: Path, *args: str, wait: float = 300, tmpdir: Path | None = None) -> tuple[int, str]:
    """``tamesu ARGS`` in ``cwd``; the worker's files (log, pid) go to ``tmpdir`` (default ``cwd``),
    which must be short: the worker's multiprocessing puts a Unix socket there (108 bytes at most)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", *args,
        cwd=cwd, env={**os.environ, "NO_COLOR": "1", "TMPDIR": str(tmpdir or cwd)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), wait)
    return proc.returncode or 0, out.decode("utf-8", "replace")


def example(tmp_path: Path) -> Path:
    """A copy of the example, so the run's files stay in the test's directory."""
    where = tmp_path / "livekit_agent"
    shutil.copytree(EXAMPLE, where, ignore=shutil.ignore_patterns("__pycache__"))
    return where


async def test_tamesu_run_serves_livekit_starts_the_worker_and_grades_its_calls(tmp_path: Path) -> None:
    where = example(tmp_path)
    short = Path(tempfile.mkdtemp(prefix="lk-", dir="/tmp"))
    try:
        code, out = await tamesu(
            where, "run", "suite.yaml", "--output", "runs", "--json", "out.json", tmpdir=short
        )
        log = (short / "livekit-returns-worker.log").read_text(errors="replace")
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert code == 0, out
    results = json.loads((where / "out.json").read_text())
    assert [t["verdict"] for t in results["tests"]] == ["passed", "passed"], results["tests"]
    assert "registered worker" in log


async def test_a_suite_whose_worker_never_comes_is_an_infrastructure_error(tmp_path: Path) -> None:
    where = example(tmp_path)
    suite = (where / "suite.yaml").read_text()
    suite = suite.replace("python agent.py dev", "true || python agent.py dev").replace("60s", "3s")
    (where / "suite.yaml").write_text(suite)
    code, out = await tamesu(where, "run", "suite.yaml", "--output", "runs")
    assert code == 3, out
    assert "no agent (kind agent) joined room" in out


async def test_tamesu_serve_livekit_answers_like_livekit_server_dev(tmp_path: Path) -> None:
    from aiohttp import ClientSession

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", "serve", "livekit", "--port", "0", "--keys", "team-key:team-secret",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        lines = [(await asyncio.wait_for(proc.stdout.readline(), 60)).decode() for _ in range(4)]
        values = dict(line.strip().split("=", 1) for line in lines[1:])
        assert values["LIVEKIT_API_KEY"] == "team-key" and values["LIVEKIT_API_SECRET"] == "team-secret"
        url = values["LIVEKIT_URL"]
        assert url.startswith("ws://127.0.0.1:")
        async with ClientSession() as http, http.get(url.replace("ws://", "http://") + "/") as response:
            assert response.status == 200
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 30) == 0


async def test_tamesu_serve_livekit_refuses_keys_it_cannot_read(tmp_path: Path) -> None:
    code, out = await tamesu(tmp_path, "serve", "livekit", "--keys", "no-secret", wait=60)
    assert code == 2 and "KEY:SECRET" in out
