"""The load driver against a real loopback agent that misbehaves: pacing, faults, retries, resume."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tamesu.actors.services import RunServices
from tamesu.load import LoadProfile
from tamesu.load.driver import CALLS_FILE, CHECKPOINT_FILE, LoadCheckpoint, LoadDriver, read_samples
from tamesu.load.load_test import LoadRequest, prepare_load
from tamesu.runner.placement.local import LocalPlacement
from tamesu.runner.results import ResultsStore, read_transcript
from tamesu.runner.verdict import final_results

from .agents import FaultAgent, closed_port, serve_fault_agent, write_suite

pytestmark = pytest.mark.integration


@pytest.fixture
async def agent() -> AsyncIterator[tuple[str, FaultAgent]]:
    async with serve_fault_agent(delay=0.02) as served:
        yield served


@pytest.fixture
async def services() -> AsyncIterator[RunServices]:
    s = RunServices.create()
    yield s
    await s.aclose()


def specs_of(path: Path) -> list[Any]:
    _, specs, _ = prepare_load(LoadRequest(), [str(path)])
    return specs


def driver(
    services: RunServices, specs: list[Any], store: ResultsStore | None = None, **profile: Any
) -> LoadDriver:
    return LoadDriver(
        LocalPlacement(services), specs, LoadProfile.model_validate(profile), store=store, http=services.http
    )


async def test_concurrency_mode_holds_the_level_and_starts_exactly_the_calls(
    agent: tuple[str, FaultAgent], services: RunServices, tmp_path: Path
) -> None:
    url, fault_agent = agent
    specs = specs_of(write_suite(tmp_path, url, {"a": ["hello"], "b": ["hello", "hello"]}))
    outcome = await driver(services, specs, concurrency=4, calls=20).run()
    assert outcome.stats.outcomes == {"passed": 20}
    assert fault_agent.max_in_flight == 4
    assert fault_agent.requests == 30
    ids = sorted(r.run_id for r in outcome.results)
    assert ids == sorted([f"a@{i}" for i in range(0, 20, 2)] + [f"b@{i}" for i in range(1, 20, 2)])
    assert len(outcome.stats.values("turn_latency_ms")) == 30


async def test_every_agent_fault_is_counted_by_kind_and_a_hang_stalls_nothing(
    agent: tuple[str, FaultAgent], services: RunServices, tmp_path: Path
) -> None:
    url, _ = agent
    says = {"ok": ["hello"], "fail": ["fail"], "hang": ["hang"], "drop": ["drop"], "refused": ["hello"]}
    path = write_suite(
        tmp_path, url, says, timeout="1s", targets={"dead": f"http://127.0.0.1:{closed_port()}"}
    )
    started = asyncio.get_running_loop().time()
    outcome = await driver(services, specs_of(path), concurrency=5, calls=15).run()
    assert asyncio.get_running_loop().time() - started < 6
    assert outcome.stats.outcomes == {"passed": 3, "error": 12}
    assert outcome.stats.faults == {"http_5xx": 3, "timeout": 3, "dropped": 3, "refused": 3}
    assert outcome.stats.agent_faults == {"http_5xx": 3, "timeout": 3, "dropped": 3, "refused": 3}


async def test_5xx_the_connect_policy_retried_within_passing_calls_are_counted(
    agent: tuple[str, FaultAgent], services: RunServices, tmp_path: Path
) -> None:
    from tamesu.load.report_data import build_load_report

    url, fault_agent = agent
    path = write_suite(tmp_path, url, {"cold": ["flaky"]}, attempts=2)
    outcome = await driver(services, specs_of(path), concurrency=1, calls=4).run()
    assert fault_agent.requests == 8
    assert outcome.stats.outcomes == {"passed": 4} and outcome.stats.faults == {}
    assert outcome.stats.agent_faults == {"http_5xx": 4}
    assert [r.agent_faults for r in outcome.results] == [{"http_5xx": 1}] * 4
    report = build_load_report(
        outcome.samples, outcome.results, [], profile={}, window=3600.0, elapsed=outcome.elapsed
    )
    assert report["faults"] == {} and report["agent_faults"] == {"http_5xx": 4}
    assert [w["agent_faults"] for w in report["windows"]] == [{"http_5xx": 4}]


async def test_retryable_errors_are_retried_per_retries_and_recorded_durably(
    agent: tuple[str, FaultAgent], services: RunServices, tmp_path: Path
) -> None:
    url, _ = agent
    path = write_suite(tmp_path, url, {"cold": ["flaky"]}, retries=1)
    store = ResultsStore.create(tmp_path / "runs", suites=["load"], settings={"kind": "load"})
    outcome = await driver(services, specs_of(path), store, concurrency=1, calls=4).run()
    assert outcome.stats.outcomes == {"passed": 4}
    assert (outcome.stats.retried, outcome.stats.faults) == (4, {"http_5xx": 4})
    attempts = store.results()
    assert Counter((r.attempt, r.final, r.outcome) for r in attempts) == {
        (1, False, "error"): 4,
        (2, True, "passed"): 4,
    }
    assert len(read_samples(store.dir)) == 8
    kept = [read_transcript(store.dir, r) for r in attempts if r.transcript_file]
    assert len(kept) == 8 and all(t is not None for t in kept)
    checkpoint = json.loads((store.dir / CHECKPOINT_FILE).read_text())["checkpoint"]
    assert checkpoint["next_index"] == 4


async def test_rate_mode_sheds_arrivals_beyond_max_in_flight_instead_of_piling_up(
    agent: tuple[str, FaultAgent], services: RunServices, tmp_path: Path
) -> None:
    url, fault_agent = agent
    path = write_suite(tmp_path, url, {"stuck": ["hang"]}, timeout="3s")
    outcome = await driver(
        services, specs_of(path), rate=20, duration="1s", arrivals="uniform", max_in_flight=5
    ).run()
    assert fault_agent.max_in_flight == 5
    assert outcome.stats.shed == 15
    assert outcome.stats.outcomes == {"error": 5}
    assert outcome.stats.faults == {"timeout": 5}


async def test_an_interrupted_test_resumes_where_it_stopped_without_losing_or_repeating_calls(
    agent: tuple[str, FaultAgent], services: RunServices, tmp_path: Path
) -> None:
    url, _ = agent
    specs = specs_of(write_suite(tmp_path, url, {"a": ["hello"]}))
    store = ResultsStore.create(tmp_path / "runs", suites=["load"], settings={"kind": "load"})
    first = driver(services, specs, store, concurrency=3, calls=30)
    seen: list[str] = []

    def stop_after_ten(result: Any) -> None:
        seen.append(result.run_id)
        if len(seen) == 10:
            first.interrupt()

    first.on_result = stop_after_ten
    out = await first.run()
    assert out.interrupted
    assert 10 <= len(read_samples(store.dir)) < 30
    point = LoadCheckpoint(**json.loads((store.dir / CHECKPOINT_FILE).read_text())["checkpoint"])
    again = driver(services, specs, ResultsStore.open(store.dir), concurrency=3, calls=30)
    again.resume(point, read_samples(store.dir))
    second = await again.run()
    assert not second.interrupted
    finals = [r for r in final_results(store.results()) if r.final]
    assert sorted(r.run_id for r in finals) == sorted(f"a@{i}" for i in range(30))
    assert second.stats.outcomes == {"passed": 30}
    lines = (store.dir / CALLS_FILE).read_text().splitlines()
    assert len([json.loads(x) for x in lines if json.loads(x)["final"]]) == 30


async def test_tamesu_runs_json_report_counts_the_agents_faults_too(
    agent: tuple[str, FaultAgent], tmp_path: Path
) -> None:
    from tamesu import run_async

    url, _ = agent
    path = write_suite(tmp_path, url, {"cold": ["flaky"], "busy": ["fail"]}, attempts=2)
    result = await run_async(path, output=tmp_path / "runs", json=tmp_path / "report.json")
    assert {r.test_id: r.outcome for r in result.results} == {"cold": "passed", "busy": "error"}
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["agent_faults"] == {"http_5xx": 3}
    runs = {t["test_id"]: t["runs"][0]["agent_faults"] for t in report["tests"]}
    assert runs == {"cold": {"http_5xx": 1}, "busy": {"http_5xx": 2}}
    assert json.loads((result.run_dir / "summary.json").read_text())["agent_faults"] == {"http_5xx": 3}


async def test_a_lost_cluster_stops_the_load_test_and_keeps_the_finished_calls(
    agent: tuple[str, FaultAgent], services: RunServices, tmp_path: Path
) -> None:
    from tamesu.errors import ClusterLost

    class LosingPlacement(LocalPlacement):
        """Runs the first calls, then its cluster is gone."""

        runs = 0

        async def run(self, spec: Any, **kw: Any) -> Any:
            self.runs += 1
            if self.runs > 5:
                raise ClusterLost("10.0.0.1:6379", silent_for=10)
            return await super().run(spec, **kw)

    url, _ = agent
    specs = specs_of(write_suite(tmp_path, url, {"a": ["hello"]}, retries=2))
    store = ResultsStore.create(tmp_path / "runs", suites=["load"], settings={"kind": "load"})
    load = LoadDriver(
        LosingPlacement(services), specs, LoadProfile.model_validate({"concurrency": 1, "calls": 20}),
        store=store, http=services.http,
    )  # fmt: skip
    with pytest.raises(ClusterLost):
        await load.run()
    assert [(s.index, s.outcome, s.final) for s in read_samples(store.dir)] == [
        (i, "passed", True) for i in range(5)
    ]
