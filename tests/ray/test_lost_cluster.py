"""A Ray cluster whose head node dies mid-run: tamesu stops in bounded time with what finished kept.

The cluster (a head and one worker node) is this test's own, since it does not survive the test.
The agent under test is a loopback server in this process, slow enough that the runs are still
going when the head is killed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from tests.load.agents import serve_fault_agent, write_suite

from .cluster import local_cluster

pytestmark = [pytest.mark.ray, pytest.mark.slow]

RUNS = 40


def finished(run_dir: Path) -> list[dict[str, object]]:
    lines = (
        (run_dir / "results.jsonl").read_text().splitlines() if (run_dir / "results.jsonl").exists() else []
    )
    return [r for r in map(json.loads, lines) if r["final"]]


async def test_a_lost_head_node_stops_the_run_with_exit_3_and_keeps_what_finished(tmp_path: Path) -> None:
    async with serve_fault_agent(delay=0.5) as (url, _):
        write_suite(tmp_path, url, {"greets": ["hello"]})
        with local_cluster(workers=1, cpus=1) as cluster:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "tamesu", "run", "suite.yaml", "--address", cluster.gcs,
                "--repeat", str(RUNS), "-j", "2",
                cwd=tmp_path, env=cluster.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            run_dir = None
            for _ in range(1200):
                dirs = [d for d in (tmp_path / "tamesu-runs").glob("2*") if d.is_dir()]
                if dirs and len(finished(dirs[0])) >= 2:
                    run_dir = dirs[0]
                    break
                await asyncio.sleep(0.1)
            if run_dir is None:
                proc.kill()
                out, err = await proc.communicate()
                pytest.fail(f"no run finished within two minutes:\n{out.decode()}\n{err.decode()}")
            cluster.kill_node(cluster.nodes[0])
            killed = time.monotonic()
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            stopped_after = time.monotonic() - killed

        assert proc.returncode == 3, (out.decode(), err.decode())
        assert stopped_after < 40, stopped_after
        kept = finished(run_dir)
        assert 2 <= len(kept) < RUNS
        lines = [line for line in err.decode().splitlines() if line.startswith("tamesu:")]
        assert lines == [
            f"tamesu: lost the Ray cluster at {cluster.gcs}: "
            f"its head node has not answered for 10s; {len(kept)} of {RUNS} runs finished and are kept in "
            f"{run_dir}; continue with tamesu run --resume (in-process, or --address a new cluster)"
        ], err.decode()
        assert "Failed to connect to GCS" not in err.decode() and "*** " not in err.decode()

        resume = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tamesu", "run", "suite.yaml", "--repeat", str(RUNS), "--resume", cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(resume.communicate(), 120)
        assert resume.returncode == 0, out.decode()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["runs"], summary["resumed"]) == (RUNS, len(kept))
