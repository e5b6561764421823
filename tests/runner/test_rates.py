"""tamesu.yaml statistics: intervals in verdicts, lower-bound thresholds and early stopping."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tamesu.kernel.outcome import RunResult
from tamesu.run_spec import RunSpec
from tamesu.runner.rates import EarlyStopper, RateRule
from tamesu.runner.scheduler import Scheduler
from tamesu.runner.verdict import verdicts

from .test_scheduler import Outcome, ScriptedPlacement, failed, make_spec, passed, schedule, transcript

pytestmark = pytest.mark.unit

EARLY = RateRule(early_stop=(0.05, 0.05, 0.1))


def _specs(test: str, repeats: int, threshold: float = 1.0) -> list[RunSpec]:
    return [make_spec(test, repeat=i, repeats=repeats, pass_threshold=threshold) for i in range(repeats)]


def _results(specs: list[RunSpec], outcomes: str) -> list[RunResult]:
    """One result per letter: p passed, f failed, e error; they ended in this order."""
    kinds = {"p": "passed", "f": "failed", "e": "error"}
    return [
        RunResult(
            run_id=s.run_id,
            test_id=s.test_id,
            test_name=s.test_name,
            suite=s.suite,
            target="api",
            outcome=kinds[o],  # type: ignore[arg-type]
            repeat_index=s.repeat_index,
            started_at=float(i),
            duration=0.5,
        )
        for i, (s, o) in enumerate(zip(specs, outcomes))
    ]


def test_a_repeated_verdict_carries_its_wilson_interval_and_pass_hat_k() -> None:
    specs = _specs("t", 5, 0.6)
    [tv] = verdicts(specs, _results(specs, "ppfpp"), rule=RateRule(pass_k=(1, 3, 9)))
    assert tv.verdict == "passed" and tv.interval == pytest.approx((0.3755, 0.9638), abs=1e-4)
    assert tv.pass_hat == pytest.approx({1: 0.8, 3: 0.4})
    assert tv.rate_text == "80% (95% CI 38%-96%), pass^1 0.80, pass^3 0.40"


def test_the_reference_rule_is_unchanged_by_default() -> None:
    specs = _specs("t", 3, 0.67)
    [tv] = verdicts(specs, _results(specs, "ppf"))
    assert tv.verdict == "passed" and tv.stopped is None and tv.note is None


def test_a_threshold_on_the_lower_bound_needs_enough_repeats_to_prove_the_rate() -> None:
    rule = RateRule(threshold_on="lower_bound")
    few = _specs("few", 3, 0.67)
    [tv] = verdicts(few, _results(few, "ppp"), rule=rule)
    assert tv.verdict == "failed" or tv.verdict == "not_run"
    assert tv.note is not None and "at least 8" in tv.note
    many = _specs("many", 20, 0.67)
    [tv] = verdicts(many, _results(many, "p" * 18 + "ff"), rule=rule)
    assert tv.verdict == "passed" and tv.interval is not None and tv.interval[0] >= 0.67
    [tv] = verdicts(many, _results(many, "p" * 14 + "f" * 6), rule=rule)
    assert tv.verdict == "failed"  # 70% observed, but the lower bound is 48%
    every = _specs("every", 4, 1.0)
    [tv] = verdicts(every, _results(every, "pppp"), rule=rule)
    assert tv.verdict == "passed"  # a threshold of 1 keeps meaning every run passed


def test_an_sprt_decision_is_the_verdict_and_the_report_says_how_many_runs_it_took() -> None:
    specs = _specs("t", 50, 0.8)
    [tv] = verdicts(specs, _results(specs, "p" * 12), rule=EARLY)
    assert tv.verdict == "passed" and tv.stopped is not None
    assert (tv.stopped.reason, tv.stopped.after, tv.spent) == ("sprt", 12, 12)
    assert tv.pass_count == "12/12 passed, threshold 0.80; stopped after 12 of 50 (SPRT)"
    [tv] = verdicts(specs, _results(specs, "pfff"), rule=EARLY)
    assert tv.verdict == "failed" and tv.stopped is not None and tv.stopped.decision == "fail"


def test_errors_are_no_evidence_either_way() -> None:
    specs = _specs("t", 50, 0.8)
    [tv] = verdicts(specs, _results(specs, "e" * 5), rule=EARLY)
    assert tv.verdict == "error" and tv.stopped is None


def test_a_settled_fixed_verdict_stops_without_an_sprt_decision() -> None:
    specs = _specs("t", 3, 0.67)
    [tv] = verdicts(specs, _results(specs, "pp"), rule=EARLY)
    assert tv.verdict == "passed" and tv.stopped is not None and tv.stopped.reason == "settled"


async def test_the_scheduler_starts_no_run_of_a_decided_test() -> None:

    specs = _specs("good", 50, 0.8) + _specs("bad", 50, 0.8)
    rule = EARLY

    def behave(spec: RunSpec, n: int) -> Any:
        ok = spec.test_id == "good"
        return Outcome(transcript(spec.run_id, "hi", "hello"), [passed() if ok else failed()])

    placement = ScriptedPlacement(behave)
    outcome = await schedule(placement, specs, concurrency=1, early_stop=EarlyStopper.for_plan(rule, specs))
    ran = [s.test_id for s in placement.calls]
    assert ran.count("good") == 12 and ran.count("bad") == 3
    by_test = {t.test_id: t for t in verdicts(specs, outcome.results, rule=rule)}
    assert by_test["good"].verdict == "passed" and by_test["bad"].verdict == "failed"
    assert by_test["good"].spent == 12


async def test_early_stopping_saves_runs_and_keeps_the_false_pass_rate_by_simulation() -> None:
    """A flaky agent at the lower hypothesis (70% against a threshold of 0.8) rarely passes."""

    rng = random.Random(3)
    specs = [s for i in range(200) for s in _specs(f"t{i}", 60, 0.8)]

    def behave(spec: RunSpec, n: int) -> Any:
        return Outcome(transcript(spec.run_id, "hi", "hello"), [passed() if rng.random() < 0.7 else failed()])

    placement = ScriptedPlacement(behave)
    # no time limit: thousands of scripted runs are CPU work, as long as the machine takes for them
    stopper = EarlyStopper.for_plan(EARLY, specs)
    outcome = await Scheduler(placement, concurrency=4, early_stop=stopper).run(specs)
    tests = verdicts(specs, outcome.results, rule=EARLY)
    false_pass = sum(t.verdict == "passed" for t in tests) / len(tests)
    assert false_pass <= 0.1
    assert len(placement.calls) < len(specs) / 2
