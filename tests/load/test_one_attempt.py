"""``tamesu run`` and ``tamesu load`` attempt a run the same way: both go through
``tamesu.runner.attempt``, so what one does with a budget error, a failed hook or a suite's budget,
the other does too."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tamesu.config import Hook
from tamesu.errors import BudgetExceeded
from tamesu.kernel.outcome import RunResult
from tamesu.load import LoadProfile
from tamesu.load.driver import LoadDriver
from tamesu.run_spec import RunSpec
from tamesu.runner.invocation import Reporter
from tamesu.runner.scheduler import Scheduler
from tamesu.runner.suite_setup import Budget, SuiteSetup

from ..runner.test_scheduler import WAIT, Outcome, ScriptedPlacement, make_spec, passed, transcript

pytestmark = pytest.mark.unit

Attempted = tuple[list[RunResult], list[str]]
"""Every attempt recorded, and the notes the command would show."""


class Notes(Reporter):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)


async def by_run(placement: Any, specs: list[RunSpec], setups: dict[str, SuiteSetup]) -> Attempted:
    notes = Notes()
    scheduler = Scheduler(placement, concurrency=1, suites=setups, reporter=notes)
    out = await asyncio.wait_for(scheduler.run(specs), WAIT)
    return out.results, notes.lines


async def by_load(placement: Any, specs: list[RunSpec], setups: dict[str, SuiteSetup]) -> Attempted:
    recorded: list[RunResult] = []
    profile = LoadProfile.model_validate({"concurrency": 1, "calls": len(specs)})
    driver = LoadDriver(placement, specs, profile, setups=setups, on_result=recorded.append)
    out = await asyncio.wait_for(driver.run(), WAIT)
    for result in recorded:
        result.run_id = result.run_id.rpartition("@")[0]
    return recorded, out.notes


COMMANDS: dict[str, Callable[..., Awaitable[Attempted]]] = {"run": by_run, "load": by_load}


@pytest.mark.parametrize("command", COMMANDS)
async def test_a_budget_error_from_the_model_layer_is_final_and_named_as_itself(command: str) -> None:
    placement = ScriptedPlacement(lambda spec, n: BudgetExceeded("model spend $2.00 exceeded $1"))
    results, _ = await COMMANDS[command](placement, [make_spec(retries=2)], {})
    [result] = results
    assert (result.outcome, result.error_kind, result.final) == ("error", "budget", True)
    assert result.error == "model spend $2.00 exceeded $1"
    assert len(placement.calls) == 1, "a spent budget is never retried"


@pytest.mark.integration
@pytest.mark.parametrize("command", COMMANDS)
async def test_a_failed_after_each_hook_is_told_and_fails_no_run(command: str, tmp_path: Path) -> None:
    setup = SuiteSetup(name="s", dir=tmp_path, after_each=[Hook(command="echo gone >&2; exit 3")])
    results, notes = await COMMANDS[command](ScriptedPlacement(), [make_spec()], {"/suites/s.yaml": setup})
    assert [r.outcome for r in results] == ["passed"]
    assert len(notes) == 1 and "after_each hook failed" in notes[0] and "gone" in notes[0]


@pytest.mark.parametrize("command", COMMANDS)
async def test_a_suites_own_budget_stops_further_runs(command: str, tmp_path: Path) -> None:
    costly = Outcome(transcript("t", "hi", "hello"), [passed()])
    costly.transcript.metrics["llm_cost_usd"] = 0.6
    placement = ScriptedPlacement(lambda spec, n: costly)
    setup = SuiteSetup(name="s", dir=tmp_path, budget=Budget(max_cost_usd=1.0))
    specs = [make_spec(f"t{i}") for i in range(5)]
    results, _ = await COMMANDS[command](placement, specs, {"/suites/s.yaml": setup})
    assert len(results) == 2, "the second run crossed the suite's cap: nothing started after it"
    assert setup.budget is not None and setup.budget.exceeded()
