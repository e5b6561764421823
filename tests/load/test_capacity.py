"""The capacity search against an agent whose delay is a known function of its calls in flight."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tamesu.config.load_profile import CapacitySearch
from tamesu.load.capacity import CapacitySearcher
from tamesu.load.gates import Gates
from tamesu.load.load_test import LoadResult
from tamesu.reports.html import render_html
from tamesu.reports.load_report import capacity_line
from tamesu.reports.rundir import RunDirectory
from tamesu.testing.loaded_agent import serve_loaded_agent

from .agents import load, rest_suite, says, serve_fault_agent

pytestmark = pytest.mark.integration


FAST_STEPS = {"step_calls": 12, "step_seconds": "0.4s", "cool_down": "50ms", "max_duration": "2m"}


async def search(
    tmp_path: Path, url: str, *, slo: float | None = 500, stream: io.StringIO | None = None, **capacity: Any
) -> LoadResult:
    gates: dict[str, Any] = {"slo": {"turn_latency_ms_p95": slo}} if slo is not None else {}
    overrides = {"capacity": {**FAST_STEPS, **capacity}, "gates": gates}
    return await load(  # type: ignore[no-any-return]
        tmp_path,
        one_test(url),
        overrides=overrides,
        transcripts="none",
        live=False,
        stream=stream or io.StringIO(),
    )


def one_test(url: str, message: str = "hello") -> str:
    return rest_suite(url, [says("hello", message)], suite="capacity", timeout="10s")


async def test_the_capacity_found_is_within_a_fifth_of_the_agents_own_figure(tmp_path: Path) -> None:
    out = io.StringIO()
    async with serve_loaded_agent(base_ms=50, per_call_ms=25) as (url, agent):
        result = await search(tmp_path, url, slo=500, stream=out, max_concurrency=64)
    expected = agent.capacity(turn_latency_ms=500)  # 18 calls in flight
    found = result.report["capacity"]
    assert result.exit_code == 0, out.getvalue()
    assert abs(found["concurrency"] - expected) <= 0.2 * expected, found
    assert found["broke"]["gate"] == "slo/turn_latency_ms_p95"
    assert found["concurrency"] < found["broke"]["concurrency"] <= found["concurrency"] + 1
    levels = {lv["concurrency"]: lv for lv in found["levels"]}
    assert {1, 2, 4, 8, 16, 32} <= set(levels), "the steps double until one breaks, then bisect"
    assert levels[found["concurrency"]]["gates_passed"] and not levels[32]["gates_passed"]
    assert all(lv["calls"] >= 12 for lv in found["levels"]), "each step makes at least step_calls calls"
    assert agent.max_in_flight <= 32
    assert (
        f"capacity: {found['concurrency']} calls in flight; turn_latency_ms_p95 broke at " in out.getvalue()
    )
    assert "Capacity search:" in out.getvalue()
    page = render_html(RunDirectory.open(result.run_dir))
    assert "Turn latency (ms) by calls in flight" in page and "Pass rate (%) by calls in flight" in page
    assert f"capacity {found['concurrency']}</text>" in page, "the knee is marked on the charts"
    assert f"broke {found['broke']['concurrency']}</text>" in page
    assert "did not finish" not in page


async def test_every_gate_holding_up_to_max_concurrency_answers_max_concurrency(tmp_path: Path) -> None:
    async with serve_loaded_agent(base_ms=5, per_call_ms=1) as (url, agent):
        result = await search(tmp_path, url, slo=60_000, max_concurrency=6)
    found = result.report["capacity"]
    assert (result.exit_code, found["concurrency"], found["stopped"], found["broke"]) == (
        0,
        6,
        "max_concurrency",
        None,
    )
    assert [lv["concurrency"] for lv in found["levels"]] == [1, 2, 4, 6]
    assert agent.max_in_flight <= 6
    assert capacity_line(found) == "capacity: 6 calls in flight; every gate held up to --max-concurrency"


async def test_exit_one_when_even_the_first_step_breaks(tmp_path: Path) -> None:
    async with serve_loaded_agent(base_ms=50, per_call_ms=25) as (url, _):
        result = await search(tmp_path, url, slo=10, start=1)
    found = result.report["capacity"]
    assert (result.exit_code, found["concurrency"], found["stopped"]) == (1, None, "first_step_broke")
    assert capacity_line(found) == "capacity: none: turn_latency_ms_p95 broke at 1"


async def test_a_step_whose_errors_are_far_over_their_gate_stops_at_once(tmp_path: Path) -> None:
    async with serve_fault_agent() as (url, agent):
        overrides = {
            "capacity": {**FAST_STEPS, "step_calls": 200, "step_seconds": "30s"},
            "gates": {"error_rate": 0.05},
        }
        result = await load(tmp_path, one_test(url, "fail"), overrides=overrides, quiet=True)
    [level] = result.report["capacity"]["levels"]
    assert level["aborted"] and level["calls"] < 200 and level["broke"][0] == "error_rate"
    assert agent.requests < 200
    assert result.exit_code == 3, "no call reached a verdict: the agent, not its capacity, is the problem"


class SaturatedMeter:
    """tamesu's own process busy all the time (what a driver at its limit measures)."""

    async def start(self) -> None:
        pass

    async def shares(self) -> tuple[float, float | None]:
        return 0.97, None


async def test_a_step_limited_by_tamesus_own_cpu_gives_no_capacity(tmp_path: Path) -> None:
    async with serve_loaded_agent(base_ms=5, per_call_ms=1) as (url, _):
        overrides = {"capacity": FAST_STEPS}
        result = await load(
            tmp_path, one_test(url), overrides=overrides, quiet=True, cpu_meter=SaturatedMeter()
        )
    found = result.report["capacity"]
    assert (result.exit_code, found["concurrency"], found["stopped"]) == (3, None, "driver_bound")
    assert capacity_line(found).startswith(
        "capacity: not measured: tamesu's own CPU was the limit at 1 calls in flight, not the agent"
    )


@pytest.mark.unit
@pytest.mark.parametrize(
    ("good", "bad", "following"),
    [
        (0, None, 1),
        (4, None, 8),
        (32, None, 48),
        (48, None, None),
        (16, 32, 24),
        (18, 19, None),
        (0, 1, None),
    ],
)
def test_the_levels_double_until_one_breaks_then_halve_the_bracket(
    good: int, bad: int | None, following: int | None
) -> None:
    from tamesu.clock import MonotonicClock

    def no_driver(level: int) -> Any:
        raise AssertionError("choosing the next level runs no step")

    searcher = CapacitySearcher(
        CapacitySearch(max_concurrency=48), Gates(), make_driver=no_driver, clock=MonotonicClock()
    )
    assert searcher.next_level(good, bad) == following
