"""Grading, where the graph ran: within the run's time limit, only a run that ended without an
error, the metrics of every outcome, graded or not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tamesu.actors.services import RunServices
from tamesu.assertions.evaluation import AssertionContext, assertion
from tamesu.kernel.outcome import AssertionResult
from tamesu.runner.grading import run_and_grade
from tests.actors.agents import Check, check, make_spec, register

pytestmark = [pytest.mark.unit, pytest.mark.timing]

register()


async def _slow(spec: Any, ctx: AssertionContext) -> AssertionResult:
    await asyncio.sleep(float(spec))
    return AssertionResult.of(True)


def _raises(spec: Any, ctx: AssertionContext) -> AssertionResult:
    raise RuntimeError(f"cannot grade {spec}")


assertion("test-slow-grade", spec=str)(_slow)
assertion("test-raising-grade", spec=str)(_raises)


@pytest.fixture
async def services() -> AsyncIterator[RunServices]:
    svc = RunServices.create()
    yield svc
    await svc.aclose()


async def test_grading_counts_against_the_runs_time_limit(services: RunServices) -> None:
    spec = make_spec(say=["hi"], checks=[("slow", Check("test-slow-grade", "30"))])
    out = await run_and_grade(spec, services, timeout=0.3)
    assert (out.error_kind, out.error, out.retryable) == ("timeout", "the run took longer than 300ms", True)
    assert out.results == []
    assert out.transcript.metrics, "a run that failed while grading is still measured"


async def test_an_assertion_that_raises_is_an_error_result_in_its_place(services: RunServices) -> None:
    spec = make_spec(
        say=["hi"],
        checks=[("first", check({"contains": "hi"})), ("boom", Check("test-raising-grade", "x"))],
    )
    out = await run_and_grade(spec, services)
    assert out.error is None
    assert [(r.name, r.state, r.message) for r in out.results] == [
        ("first", "passed", ""),
        ("boom", "error", "RuntimeError: cannot grade x"),
    ]


async def test_a_run_that_failed_is_measured_but_not_graded(services: RunServices) -> None:
    spec = make_spec(type="test-failing", say=["hi", "now fail"], checks=[("c", check({"contains": "hi"}))])
    out = await run_and_grade(spec, services, secrets={"AGENT_TOKEN": "tok-1234abcd"})
    assert out.error_kind == "agent" and out.results == []
    assert out.transcript.metrics
