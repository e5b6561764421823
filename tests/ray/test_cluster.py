"""A real three-node Ray cluster on this machine: runs across it, a job submitted to it, a node lost.

The cluster (a head and two workers of one CPU each) is started once for the module and stopped
whatever happens; the agent under test is a loopback server in this process. The node-loss test
puts a fresh node in place of the one it kills, so the tests run in any order.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator, Collection, Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray")

from tests.load.agents import FaultAgent, serve_fault_agent, write_suite

from ..stored import stored_transcripts
from .cluster import LocalCluster, local_cluster

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster(workers=2, cpus=1) as c:
        yield c


@pytest.fixture
async def agent() -> AsyncIterator[tuple[str, FaultAgent]]:
    async with serve_fault_agent(delay=0.2) as served:
        yield served


async def tamesu(cluster: LocalCluster, cwd: Path, *args: str, timeout: float = 180) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", *args, cwd=cwd, env=cluster.env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    return proc.returncode or 0, out.decode()


def run_workers(cluster: LocalCluster) -> list[dict[str, str]]:
    data = cluster.request("/api/v0/actors?limit=1000&detail=1")
    return [a for a in data["data"]["result"]["result"] if a.get("class_name") == "RunWorker"]  # type: ignore[index]


def worker_nodes(cluster: LocalCluster, *, besides: Collection[str] = ()) -> set[str]:
    """The nodes the RunWorker actors were placed on (alive or not), leaving out the actors in
    ``besides`` (those of the tests before, which may have run on a node since lost)."""
    return {a["node_id"] for a in run_workers(cluster) if a["actor_id"] not in besides}


async def test_a_suite_runs_across_the_nodes_with_run_address(
    cluster: LocalCluster, agent: tuple[str, FaultAgent], tmp_path: Path
) -> None:
    url, fault_agent = agent
    write_suite(tmp_path, url, {"greets": ["hello"], "twice": ["hello", "hello"]}, extra="")
    earlier = {a["actor_id"] for a in run_workers(cluster)}
    code, out = await tamesu(
        cluster, tmp_path, "run", "suite.yaml", "--address", cluster.gcs, "--repeat", "3"
    )
    assert code == 0, out
    assert "2 passed, 0 failed, 0 errors" in out
    assert fault_agent.requests == 9
    assert len(worker_nodes(cluster, besides=earlier)) == 3


async def test_submit_sends_the_suite_folder_as_a_job_and_fetches_the_results(
    cluster: LocalCluster, agent: tuple[str, FaultAgent], tmp_path: Path
) -> None:
    url, _ = agent
    (tmp_path / "tamesu.yaml").write_text("concurrency: 3\n")
    (tmp_path / "suites").mkdir()
    write_suite(tmp_path / "suites", url, {"greets": ["hello"]})
    code, out = await tamesu(
        cluster, tmp_path, "submit", "suites/suite.yaml", "--address", cluster.dashboard,
        "--options", "--repeat 4 --junit junit.xml", "--job-id", "tamesu-test-submit",
    )  # fmt: skip
    assert code == 0, out
    assert "submitted tamesu-test-submit" in out
    assert "1 passed, 0 failed, 0 errors" in out
    assert "[tamesu-artifact]" not in out
    latest = tmp_path / "tamesu-runs" / "latest"
    results = [json.loads(line) for line in (latest / "results.jsonl").read_text().splitlines()]
    assert Counter(r["outcome"] for r in results) == {"passed": 4}
    assert len(stored_transcripts(latest)) == 4
    assert (tmp_path / "tamesu-runs" / "junit.xml").is_file()

    code, out = await tamesu(cluster, tmp_path, "jobs", "--address", cluster.dashboard)
    assert code == 0, out
    [row] = [line for line in out.splitlines() if line.startswith("tamesu-test-submit")]
    assert "SUCCEEDED" in row and "run" in row and "loadtest" in row
    code, out = await tamesu(
        cluster, tmp_path, "jobs", "logs", "tamesu-test-submit", "--address", cluster.dashboard
    )
    assert "1 passed" in out and "[tamesu-artifact]" not in out
    os.remove(latest)
    code, out = await tamesu(
        cluster, tmp_path, "jobs", "fetch", "tamesu-test-submit", "--address", cluster.dashboard
    )
    assert code == 0, out
    assert (tmp_path / "tamesu-runs" / "latest" / "results.jsonl").is_file()


async def test_jobs_stop_ends_a_submitted_run(
    cluster: LocalCluster, agent: tuple[str, FaultAgent], tmp_path: Path
) -> None:
    url, _ = agent
    write_suite(tmp_path, url, {"stuck": ["hang"]}, timeout="2m")
    code, out = await tamesu(
        cluster,
        tmp_path,
        "submit",
        "suite.yaml",
        "--address",
        cluster.dashboard,
        "--no-wait",
        "--job-id",
        "tamesu-test-stop",
    )
    assert code == 0, out
    for _ in range(120):
        code, out = await tamesu(cluster, tmp_path, "jobs", "--address", cluster.dashboard)
        if any(line.startswith("tamesu-test-stop") and "RUNNING" in line for line in out.splitlines()):
            break
        await asyncio.sleep(0.5)
    code, out = await tamesu(
        cluster, tmp_path, "jobs", "stop", "tamesu-test-stop", "--address", cluster.dashboard
    )
    assert code == 0, out
    assert "job tamesu-test-stop: STOPPED" in out
    for _ in range(120):
        if not [a for a in run_workers(cluster) if a["state"] == "ALIVE"]:
            break
        await asyncio.sleep(0.5)
    assert [a["state"] for a in run_workers(cluster) if a["state"] == "ALIVE"] == []


async def test_a_load_test_survives_a_worker_node_dying(
    cluster: LocalCluster, agent: tuple[str, FaultAgent], tmp_path: Path
) -> None:
    url, _ = agent
    write_suite(tmp_path, url, {"greets": ["hello", "hello"]}, retries=2)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tamesu", "load", "suite.yaml", "--address", cluster.gcs, "--calls", "24",
        "-j", "3", "--workers", "3", "--no-live", "--window", "1s",
        cwd=tmp_path, env=cluster.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    calls = None
    for _ in range(600):
        found = list((tmp_path / "tamesu-runs").glob("*/calls.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 3:
            calls = found[0]
            break
        await asyncio.sleep(0.1)
    if calls is None:
        proc.kill()
        out, _ = await proc.communicate()
        pytest.fail(f"no call finished within a minute:\n{out.decode()}")
    cluster.kill_node(cluster.nodes[2])
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 180)
    finally:
        await asyncio.to_thread(cluster.replace_lost)
    text = out.decode()
    assert proc.returncode == 0, text
    report = json.loads((calls.parent / "load-report.json").read_text())
    assert report["totals"]["outcomes"] == {"passed": 24}
    # Whether a call was in flight on the killed node is a race: a call that was is counted as a
    # worker fault and retried (tests/actors covers that deterministically); none is lost either way.
    assert set(report["faults"]) <= {"worker"}, text
    finals = [json.loads(line) for line in calls.read_text().splitlines() if json.loads(line)["final"]]
    assert sorted(s["index"] for s in finals) == list(range(24))


async def test_a_capacity_search_submitted_as_a_job_runs_its_steps_on_the_cluster(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    from tamesu.testing.loaded_agent import serve_loaded_agent
    from tests.load.agents import rest_suite, says

    async with serve_loaded_agent(base_ms=100, per_call_ms=50) as (url, loaded):
        (tmp_path / "suite.yaml").write_text(rest_suite(url, [says("hello", "hello")], timeout="20s"))
        options = (
            "--find-capacity --max-concurrency 16 --step-calls 8 --step-seconds 0.5s --cool-down 100ms "
            "--max-duration 3m --slo turn_latency_ms_p95=600 -q"
        )
        code, out = await tamesu(
            cluster, tmp_path, "submit", "suite.yaml", "--load", "--address", cluster.dashboard,
            "--options", options, "--job-id", "tamesu-test-capacity", timeout=300,
        )  # fmt: skip
    assert code == 0, out
    report = json.loads((tmp_path / "tamesu-runs" / "latest" / "load-report.json").read_text())
    expected = loaded.capacity(turn_latency_ms=600)  # 10 calls in flight
    found = report["capacity"]["concurrency"]
    assert abs(found - expected) <= 0.2 * expected, report["capacity"]
    assert f"capacity: {found} calls in flight; turn_latency_ms_p95 broke at" in out
    shares = [(lv["concurrency"], lv["workers_cpu"]) for lv in report["capacity"]["levels"]]
    assert all(share is not None for _, share in shares), f"the workers' CPU is measured: {shares}"
