"""How a load test grades its tests: the gates (each test's own pass_threshold unless the profile
sets one rate), one run per test taken in turn, each test's verdict over its calls by the rule of
``tamesu run``, and the summary.json that makes a finished load test read as finished everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tamesu.config.load_profile import LoadProfile
    from tamesu.config.loader import LoadedSuite
    from tamesu.kernel.outcome import RunResult
    from tamesu.load.driver import LoadOutcome
    from tamesu.load.gates import Gates
    from tamesu.run_spec import RunSpec
    from tamesu.runner.results import ResultsStore
    from tamesu.runner.verdict import TestVerdict
    from tamesu.secrets import Redactor

__all__ = ["load_gates", "load_verdicts", "one_spec_per_test", "write_summary"]


def load_gates(profile: LoadProfile, loaded: Sequence[LoadedSuite], specs: Sequence[Any]) -> Gates:
    """The gates of a load test: the profile's, the suites' percentile SLOs, and (unless the profile
    sets one pass rate) each test's own pass_threshold."""
    from tamesu.config import effective_defaults
    from tamesu.load.gates import gates_for

    slo: dict[str, float] = {}
    for suite in loaded:
        slo.update(effective_defaults(suite.project, suite.suite).slo)
    thresholds = {(s.suite, s.test_id): float(s.pass_threshold) for s in specs}
    return gates_for(profile, suite_slo=slo, thresholds=thresholds)


def one_spec_per_test(specs: Sequence[RunSpec], note: Callable[[str], None]) -> list[RunSpec]:
    """The runs a load test takes in turn: one per expanded test, so each test gets an equal share
    of the calls (a ``repeat: 10`` test would otherwise get ten times the calls of its neighbours);
    the calls themselves are the repeats under load."""
    out: list[RunSpec] = []
    for spec in specs:
        if spec.repeat_index == 0:
            out.append(spec.evolve(run_id=spec.test_id, repeats=1))
        elif spec.repeat_index == 1:
            note(
                f"{spec.suite} / {spec.test_id}: repeat {spec.repeats} is not multiplied under load: "
                "each test gets an equal share of the calls"
            )
    return out


def load_verdicts(specs: Sequence[RunSpec], finals: Sequence[RunResult], project: Any) -> list[TestVerdict]:
    """Each test's verdict over its calls, by the rule of ``tamesu run`` (its pass_threshold and
    tamesu.yaml's statistics): every call is one repeat of its test."""
    from tamesu.runner.rates import RateRule
    from tamesu.runner.verdict import verdicts

    by_test = {(s.suite, s.test_id): s for s in specs}
    calls = [
        by_test[(r.suite, r.test_id)].evolve(run_id=r.run_id, repeats=1)
        for r in finals
        if (r.suite, r.test_id) in by_test
    ]
    return verdicts(calls, finals, rule=RateRule.from_settings(getattr(project, "statistics", None)))


def write_summary(
    store: ResultsStore,
    tests: list[TestVerdict],
    attempts: list[RunResult],
    finals: list[RunResult],
    outcome: LoadOutcome,
    code: int,
    loaded: Sequence[LoadedSuite],
    started_at: float,
    redactor: Redactor,
) -> None:
    """summary.json, as ``tamesu run`` writes it: a finished load test reads as one in every report."""
    from tamesu.reports.json_report import summary
    from tamesu.runner.invocation import InvocationResult

    result = InvocationResult(
        exit_code=code,
        tests=tests,
        results=finals,
        attempts=attempts,
        run_dir=store.dir,
        suites=[s.suite.suite for s in loaded],
        started_at=started_at,
        duration=time.time() - started_at,
        interrupted=outcome.interrupted,
        budget_exceeded=outcome.budget_exceeded,
        resumed=outcome.resumed,
        settings={
            "started_at": datetime.fromtimestamp(started_at, timezone.utc).isoformat(timespec="seconds")
        },
    )
    store.write_json("summary.json", redactor.redact_obj(summary(result)))
