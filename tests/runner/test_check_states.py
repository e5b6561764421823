"""Checks that did not run, or that a judge could not tell, never read as a pass; ``strict``
makes the first an error and the second a failure."""

from __future__ import annotations

from typing import Any

import pytest

from tamesu.kernel.outcome import AssertionResult, count_states
from tamesu.runner.verdict import exit_code, outcome_of, result_of, verdicts

pytestmark = pytest.mark.unit


class Spec:
    """The few RunSpec fields a verdict reads."""

    def __init__(self, run_id: str = "t", *, strict: bool = False, quarantine: str | None = None) -> None:
        self.run_id = self.test_id = self.test_name = run_id
        self.suite, self.target_name, self.case, self.language = "s", "api", None, None
        self.repeat_index, self.repeats, self.pass_threshold = 0, 1, 1.0
        self.strict, self.quarantine = strict, quarantine
        self.tags: list[str] = []
        self.attack: Any = None
        self.grid: dict[str, str] | None = None


def named(result: AssertionResult, name: str) -> AssertionResult:
    result.name = result.kind = name
    return result


def passed() -> AssertionResult:
    return named(AssertionResult.of(True), "contains")


def skipped() -> AssertionResult:
    return named(AssertionResult.skip("needs a judge model (models.judge or models.default)"), "judge")


def unsure() -> AssertionResult:
    return named(AssertionResult.cannot_tell(message="the conversation never mentions refunds"), "judge")


def test_each_check_says_its_state_in_one_word() -> None:
    failed = named(AssertionResult.of(False), "contains")
    broken = named(AssertionResult.failed_to_evaluate("down"), "http")
    states = [r.state for r in (passed(), failed, broken, skipped(), unsure())]
    assert states == ["passed", "failed", "error", "skipped", "inconclusive"]
    assert not skipped().passed and not unsure().passed, "neither can be read as a pass by an older reader"
    assert count_states([passed(), skipped(), skipped()]) == {"passed": 1, "skipped": 2}


def test_a_skipped_check_leaves_the_run_passed_but_strict_makes_it_an_error_that_names_it() -> None:
    assert outcome_of(Spec(), [passed(), skipped()], None) == "passed"
    strict = result_of(Spec(strict=True), results=[passed(), skipped()])  # type: ignore[arg-type]
    assert strict.outcome == "error" and strict.error_kind == "skipped"
    assert (
        strict.error
        == "strict: check judge was skipped: needs a judge model (models.judge or models.default)"
    )


def test_an_inconclusive_check_is_neither_a_pass_nor_a_fail_and_strict_counts_it_as_a_failure() -> None:
    assert outcome_of(Spec(), [passed(), unsure()], None) == "inconclusive"
    assert outcome_of(Spec(strict=True), [passed(), unsure()], None) == "failed"
    failed = named(AssertionResult.of(False), "contains")
    assert outcome_of(Spec(), [failed, unsure()], None) == "failed", "a failure outranks it"


def test_an_inconclusive_test_is_counted_apart_and_its_caveat_names_what_was_not_checked() -> None:
    specs = [Spec("a"), Spec("b"), Spec("c")]
    runs = [
        result_of(specs[0], results=[passed(), skipped()]),  # type: ignore[arg-type]
        result_of(specs[1], results=[unsure()]),  # type: ignore[arg-type]
        result_of(specs[2], results=[passed()]),  # type: ignore[arg-type]
    ]
    a, b, c = verdicts(specs, runs)  # type: ignore[arg-type]
    assert (a.verdict, a.caveat) == ("passed", "1 check skipped")
    assert a.skipped_checks == {"judge": "needs a judge model (models.judge or models.default)"}
    assert (b.verdict, b.caveat) == ("inconclusive", "1 inconclusive")
    assert (c.verdict, c.caveat) == ("passed", "")
    assert exit_code([a, b, c]) == 0
    strict = [Spec("a", strict=True)]
    (s,) = verdicts(strict, [result_of(strict[0], results=[passed(), skipped()])])  # type: ignore[arg-type]
    assert s.verdict == "error" and exit_code([s]) == 3
