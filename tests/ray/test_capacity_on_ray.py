"""``tamesu load --ray --find-capacity``: the steps run on an embedded local Ray's workers."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

from tamesu.testing.loaded_agent import serve_loaded_agent
from tests.load.agents import rest_suite, says

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.integration]


async def test_a_capacity_search_on_ray_workers_finds_the_agents_own_figure(tmp_path: Path) -> None:
    async with serve_loaded_agent(base_ms=100, per_call_ms=50) as (url, agent):
        suite = rest_suite(url, [says("hello", "hello")], suite="capacity", timeout="20s")
        (tmp_path / "suite.yaml").write_text(suite)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tamesu", "load", "suite.yaml", "--ray", "--workers", "2", "-q",
            "--find-capacity", "--max-concurrency", "16", "--step-calls", "8", "--step-seconds", "0.5s",
            "--cool-down", "100ms", "--max-duration", "3m", "--slo", "turn_latency_ms_p95=600",
            cwd=tmp_path, env={**os.environ, "RAY_ADDRESS": "", "NO_COLOR": "1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), 300)
    text = out.decode()
    assert proc.returncode == 0, text
    report = json.loads((tmp_path / "tamesu-runs" / "latest" / "load-report.json").read_text())
    expected = agent.capacity(turn_latency_ms=600)  # 10 calls in flight
    found = report["capacity"]["concurrency"]
    assert abs(found - expected) <= 0.2 * expected, report["capacity"]
    assert f"capacity: {found} calls in flight; turn_latency_ms_p95 broke at" in text
    assert agent.max_in_flight <= 16
    # the steps ran on the workers: the search measured how busy they were at each step
    assert all(lv["workers_cpu"] is not None for lv in report["capacity"]["levels"])
