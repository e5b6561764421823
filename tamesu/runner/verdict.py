"""A test's verdict from its repeated runs, and the invocation's exit code from the verdicts.

A test that runs three times is one line in a report, not three: its runs are folded into a pass
count measured against ``pass_threshold``, so a flaky agent can be held to "2 of 3" on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tamesu.runner.rates import RateRule, Stop, completion_order, observation
from tamesu.runner.unanswered import unanswered

if TYPE_CHECKING:
    from tamesu.kernel.outcome import Outcome, RunResult
    from tamesu.run_spec import RunSpec

__all__ = [
    "EXIT_BUDGET",
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "TestVerdict",
    "Verdict",
    "exit_code",
    "final_results",
    "outcome_of",
    "run_key",
    "strict_error",
    "verdicts",
]

Verdict = Literal["passed", "failed", "error", "quarantined", "inconclusive", "not_run"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_ERROR = 3
EXIT_BUDGET = 4
EXIT_INTERRUPTED = 130


def run_key(suite: str, run_id: str) -> str:
    """Runs are told apart by suite and run id, so two suites may reuse a test name."""
    return f"{suite}\x1f{run_id}"


_RANK: dict[str, int] = {"passed": 0, "skipped": 0, "inconclusive": 1, "failed": 2, "error": 3}
_STRICT_RANK: dict[str, int] = {**_RANK, "inconclusive": 2, "skipped": 3}


def outcome_of(spec: RunSpec, results: Sequence[Any], error: str | None) -> Outcome:
    """One run: error (infrastructure, or an assertion that could not be evaluated) > failed (an
    assertion) > inconclusive (a judge could not tell) > passed; a skipped check leaves the run
    passed (reports count it), and with ``spec.strict`` a skipped check is an error and an
    inconclusive one a failure. A quarantined test's run that did not pass is ``quarantined``."""
    rank = _STRICT_RANK if spec.strict else _RANK
    worst = 3 if error is not None else max((rank[r.state] for r in results), default=0)
    outcome: Outcome = ("passed", "inconclusive", "failed", "error")[worst]  # type: ignore[assignment]
    if spec.quarantine is not None and outcome != "passed":
        return "quarantined"
    return outcome


def strict_error(spec: RunSpec, results: Sequence[Any]) -> str | None:
    """Why a strict run is an error though nothing broke: the checks that were skipped."""
    if not spec.strict:
        return None
    skipped = [r for r in results if r.skipped]
    if not skipped:
        return None
    first = skipped[0]
    more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
    return f"strict: check {first.name} was skipped: {first.message}{more}"


def result_of(
    spec: RunSpec,
    *,
    results: Sequence[Any] = (),
    error: str | None = None,
    error_kind: str | None = None,
    attempt: int = 1,
    started_at: float = 0.0,
    duration: float = 0.0,
    transcript: Any = None,
) -> RunResult:
    """One attempt's result: what the spec says of the run, and what came of it (its outcome follows
    from the assertions and the error; metrics and turns from the transcript, when there is one)."""
    from tamesu.kernel.outcome import RunResult

    if error is None and (why := unanswered(spec, transcript)) is not None:
        error, error_kind = why, "agent"
    if error is None and (why := strict_error(spec, results)) is not None:
        error, error_kind = why, "skipped"
    findings = []
    if spec.attack is not None:
        from tamesu.redteam.findings import findings_of

        findings = findings_of(spec, results, transcript)
    return RunResult(
        run_id=spec.run_id,
        test_id=spec.test_id,
        test_name=spec.test_name,
        suite=spec.suite,
        target=spec.target_name,
        outcome=outcome_of(spec, results, error),
        assertions=list(results),
        error=error,
        error_kind=error_kind,
        case=spec.case,
        language=spec.language,
        repeat_index=spec.repeat_index,
        attempt=attempt,
        started_at=started_at,
        duration=duration,
        tags=list(spec.tags),
        metrics=dict(transcript.metrics) if transcript is not None else {},
        quarantine=spec.quarantine,
        turns=len(transcript.agent_turns()) if transcript is not None else 0,
        findings=findings,
        agent_faults=dict(transcript.agent_faults) if transcript is not None else {},
        grid=spec.grid,
    )


@dataclass
class TestVerdict:
    """One expanded test with all its runs folded into one verdict."""

    __test__ = False

    suite: str
    test_id: str
    test_name: str
    target: str
    verdict: Verdict
    passed: int
    repeats: int
    pass_threshold: float
    quarantine: str | None = None
    duration: float = 0.0
    runs: list[RunResult] = field(default_factory=list)
    interval: tuple[float, float] | None = None
    """The Wilson interval of the pass rate over the runs made, at ``confidence``."""
    confidence: float = 0.95
    pass_hat: dict[int, float] = field(default_factory=dict)
    """pass^k by k: the chance that k tries all pass (tamesu.yaml statistics.pass_k)."""
    threshold_on: str = "rate"
    stopped: Stop | None = None
    """Why the repeats stopped before ``repeats`` (statistics.early_stop)."""
    note: str | None = None
    """A warning about the verdict itself (repeats too few to ever prove the threshold)."""

    @property
    def skipped_checks(self) -> dict[str, str]:
        """The checks skipped in any of its runs, by name, with the reason."""
        return {a.name: a.message for r in self.runs for a in r.assertions if a.skipped}

    @property
    def inconclusive_checks(self) -> dict[str, str]:
        """The checks a judge could not tell in any of its runs, by name, with the reason."""
        return {a.name: a.message for r in self.runs for a in r.assertions if a.inconclusive}

    @property
    def caveat(self) -> str:
        """``1 check skipped`` / ``2 checks skipped, 1 inconclusive``: what a verdict must say
        besides its word, so a test with unchecked parts never reads as a plain PASS."""
        parts = []
        if n := len(self.skipped_checks):
            parts.append(f"{n} check{'s' if n != 1 else ''} skipped")
        if n := len(self.inconclusive_checks):
            parts.append(f"{n} inconclusive")
        return ", ".join(parts)

    @property
    def spent(self) -> int:
        """Runs made (fewer than ``repeats`` when the test stopped early)."""
        return len(self.runs)

    @property
    def pass_count(self) -> str:
        """``2/3 passed, threshold 0.67`` (the threshold only when it is below 1); a test that
        stopped early says after how many of its repeats."""
        made = self.spent if self.stopped is not None else self.repeats
        text = f"{self.passed}/{made} passed"
        if self.pass_threshold < 1:
            bound = " on the lower bound" if self.threshold_on == "lower_bound" else ""
            text += f", threshold {self.pass_threshold:.2f}{bound}"
        if self.stopped is not None:
            why = "SPRT" if self.stopped.reason == "sprt" else "verdict settled"
            text += f"; stopped after {self.spent} of {self.repeats} ({why})"
        return text

    @property
    def rate_text(self) -> str:
        """``80% (95% CI 38-96%), pass^3 0.40`` for a repeated test; empty for a single run."""
        if self.interval is None or self.spent < 2:
            return ""
        low, high = self.interval
        rate = self.passed / self.spent
        text = f"{rate:.0%} ({self.confidence:.0%} CI {low:.0%}-{high:.0%})"
        for k, value in sorted(self.pass_hat.items()):
            text += f", pass^{k} {value:.2f}"
        return text


def final_results(results: Iterable[RunResult]) -> list[RunResult]:
    """The last attempt of every run (first-seen order); earlier attempts were retried away."""
    last: dict[str, RunResult] = {}
    for r in results:
        key = run_key(r.suite, r.run_id)
        if key not in last or r.attempt >= last[key].attempt:
            last.pop(key, None)
            last[key] = r
    return list(last.values())


def verdicts(
    specs: Sequence[RunSpec], results: Iterable[RunResult], *, rule: RateRule | None = None
) -> list[TestVerdict]:
    """Fold final run results into one verdict per expanded test, in plan order; ``rule`` is
    tamesu.yaml's statistics (default: the reference rule)."""
    rule = rule or RateRule()
    by_run = {run_key(r.suite, r.run_id): r for r in final_results(results)}
    tests: dict[tuple[str, str], TestVerdict] = {}
    for spec in specs:
        key = (spec.suite, spec.test_id)
        tv = tests.get(key)
        if tv is None:
            tv = tests[key] = TestVerdict(
                suite=spec.suite,
                test_id=spec.test_id,
                test_name=spec.test_name,
                target=spec.target_name,
                verdict="not_run",
                passed=0,
                repeats=spec.repeats,
                pass_threshold=spec.pass_threshold,
                quarantine=spec.quarantine,
            )
        result = by_run.get(run_key(spec.suite, spec.run_id))
        if result is not None:
            tv.runs.append(result)
            tv.duration += result.duration
    for tv in tests.values():
        tv.repeats = max(tv.repeats, len(tv.runs), 1)
        tv.passed = sum(1 for r in tv.runs if r.outcome == "passed")
        _judge(tv, rule)
    return list(tests.values())


def _judge(tv: TestVerdict, rule: RateRule) -> None:
    tv.interval = rule.interval(tv.passed, len(tv.runs))
    tv.confidence = rule.confidence
    tv.pass_hat = rule.pass_hat(tv.passed, len(tv.runs))
    tv.threshold_on = rule.threshold_on
    outcomes = [observation(r.outcome) for r in completion_order(tv.runs)]
    tv.stopped = rule.stop(outcomes, tv.repeats, tv.pass_threshold)
    need = rule.needed_repeats(tv.repeats, tv.pass_threshold)
    if need is not None:
        tv.note = (
            f"{tv.repeats} repeats can never prove pass_threshold {tv.pass_threshold:.2f} on the "
            f"{rule.confidence:.0%} lower bound; it takes at least {need}"
        )
    tv.verdict = _fold(tv, rule)


def _fold(tv: TestVerdict, rule: RateRule) -> Verdict:
    if not tv.runs:
        return "not_run"
    decision = tv.stopped.decision if tv.stopped is not None else None
    if decision == "pass" or (decision is None and rule.passes(tv.passed, tv.repeats, tv.pass_threshold)):
        return "passed"
    seen = {r.outcome for r in tv.runs}
    if tv.quarantine is not None or "quarantined" in seen:
        return "quarantined"
    if "failed" in seen:
        return "failed"
    if "error" in seen:
        return "error"
    if "inconclusive" in seen:
        return "inconclusive"
    return "not_run"  # only passes so far, but too few runs finished to reach the threshold


def exit_code(
    tests: Iterable[TestVerdict], *, budget_exceeded: bool = False, interrupted: bool = False
) -> int:
    """130 interrupted, 4 budget, 1 any failure, 3 infrastructure errors only, else 0.

    Quarantined tests never fail the invocation; a test left unrun by an interruption or a budget
    stop is covered by those codes. An inconclusive test is neither a failure nor an error: it is
    counted and shown apart (``--strict`` makes it a failure before it gets here).
    """
    if interrupted:
        return EXIT_INTERRUPTED
    if budget_exceeded:
        return EXIT_BUDGET
    seen = {t.verdict for t in tests}
    if "failed" in seen:
        return EXIT_FAILED
    if "error" in seen or "not_run" in seen:
        return EXIT_ERROR
    return EXIT_OK
