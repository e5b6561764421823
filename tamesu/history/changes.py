"""Two invocations compared: regressions, fixes, pass-rate changes, new and removed tests, latency
and cost changes with their significance, and the tests that are flaky.

A verdict that flips from a single run on each side is reported, but its pass-rate difference
comes with an interval, so "1/1 -> 0/1" reads as the weak evidence it is and "20/20 -> 9/20" as a
real change. Latency and cost are compared per test (Welch's interval over the runs of each side)
and over the suite (a paired interval over the tests both sides ran).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from tamesu.history.grid_changes import GridChange, grid_changes
from tamesu.history.store import HistoryDB, HistoryError, Invocation, TestRow
from tamesu.stats import Difference, mean_difference, paired_difference, rate_difference

__all__ = ["METRICS", "Comparison", "MetricChange", "TestChange", "compare", "flaky_tests"]

METRICS: tuple[tuple[str, str], ...] = (
    ("duration_s", "s"),
    ("turn_latency_ms_p50", "ms"),
    ("turn_latency_ms_p95", "ms"),
    ("llm_cost_usd", "USD"),
    ("cost_usd", "USD"),
)
"""The run metrics ``tamesu diff`` compares, with their units."""

_BAD = ("failed", "error")


@dataclass
class TestChange:
    """One test's change between the two sides."""

    __test__ = False

    suite: str
    test_id: str
    kind: Literal["regression", "fix", "rate", "new", "removed", "unselected"]
    """``unselected``: the baseline ran it, and the new run chose its tests (tags, a filter) and
    left it out: it was not selected, not removed."""
    a: TestRow | None = None
    b: TestRow | None = None
    rate: Difference | None = None

    @property
    def name(self) -> str:
        return f"{self.suite} / {self.test_id}"


@dataclass
class MetricChange:
    """A metric's change over the suite, and the tests whose own change is significant."""

    name: str
    unit: str
    a_mean: float
    b_mean: float
    tests: int
    """Tests measured on both sides."""
    diff: Difference | None = None
    per_test: list[tuple[str, Difference]] = field(default_factory=list)

    @property
    def relative(self) -> float | None:
        return None if self.a_mean == 0 else self.b_mean / self.a_mean - 1


@dataclass
class Comparison:
    a: Invocation
    b: Invocation
    changes: list[TestChange] = field(default_factory=list)
    metrics: list[MetricChange] = field(default_factory=list)
    flaky: list[tuple[str, str]] = field(default_factory=list)
    """(test name, why it is called flaky)."""
    grid: list[GridChange] = field(default_factory=list)
    """``--grid`` runs: each cell's pass rate on both sides (``tamesu.history.grid_changes``)."""

    def of(self, kind: str) -> list[TestChange]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def regressed(self) -> bool:
        return bool(self.of("regression"))


def _rate(a: TestRow, b: TestRow, confidence: float) -> Difference | None:
    return rate_difference(a.passed, a.runs, b.passed, b.runs, confidence=confidence)


def _values(test: TestRow, metric: str) -> list[float]:
    return [
        float(r.metrics[metric]) for r in test.run_rows if isinstance(r.metrics.get(metric), (int, float))
    ]


def compare(
    a: Invocation,
    b: Invocation,
    *,
    confidence: float = 0.95,
    history: HistoryDB | None = None,
    flaky_window: int = 10,
) -> Comparison:
    """What changed from ``a`` (the baseline) to ``b``."""
    out = Comparison(a=a, b=b)
    before = {(t.suite, t.test_id): t for t in a.tests}
    after = {(t.suite, t.test_id): t for t in b.tests}
    for key, tb in after.items():
        ta = before.get(key)
        if ta is None:
            out.changes.append(TestChange(*key, "new", b=tb))
            continue
        rate = _rate(ta, tb, confidence)
        if ta.verdict == "passed" and tb.verdict in _BAD:
            out.changes.append(TestChange(*key, "regression", ta, tb, rate))
        elif ta.verdict in _BAD and tb.verdict == "passed":
            out.changes.append(TestChange(*key, "fix", ta, tb, rate))
        elif rate is not None and rate.significant:
            out.changes.append(TestChange(*key, "rate", ta, tb, rate))
    gone: Literal["unselected", "removed"] = "unselected" if b.selection else "removed"
    out.changes += [TestChange(*key, gone, a=ta) for key, ta in before.items() if key not in after]
    common = [(before[k], after[k]) for k in after if k in before]
    for metric, unit in METRICS:
        change = _metric(metric, unit, common, confidence)
        if change is not None:
            out.metrics.append(change)
    out.flaky = flaky_tests(b.tests, history=history, window=flaky_window, also=a.tests)
    out.grid = grid_changes(a, b, confidence=confidence)
    return out


def _metric(
    metric: str, unit: str, common: Sequence[tuple[TestRow, TestRow]], confidence: float
) -> MetricChange | None:
    pairs: list[tuple[float, float]] = []
    per_test: list[tuple[str, Difference]] = []
    for ta, tb in common:
        va, vb = _values(ta, metric), _values(tb, metric)
        if not va or not vb:
            continue
        pairs.append((sum(va) / len(va), sum(vb) / len(vb)))
        diff = mean_difference(va, vb, confidence=confidence)
        if diff is not None and diff.significant:
            per_test.append((f"{tb.suite} / {tb.test_id}", diff))
    if not pairs:
        return None
    return MetricChange(
        name=metric,
        unit=unit,
        a_mean=sum(p[0] for p in pairs) / len(pairs),
        b_mean=sum(p[1] for p in pairs) / len(pairs),
        tests=len(pairs),
        diff=paired_difference(pairs, confidence=confidence),
        per_test=per_test,
    )


def flaky_tests(
    tests: Sequence[TestRow],
    *,
    history: HistoryDB | None = None,
    window: int = 10,
    also: Sequence[TestRow] = (),
) -> list[tuple[str, str]]:
    """Tests seen both passing and failing: across their latest ``window`` invocations in the
    history, or among the repeats of one invocation. Infrastructure errors are not flakiness of
    the agent and are left out, and a test that failed in every repeat of the newest run is
    failing, not flaky (whatever it did before)."""
    out: dict[str, str] = {}
    failing: set[str] = set()
    for test in tests:
        outcomes = [r.outcome for r in test.run_rows]
        if outcomes and all(o == "failed" for o in outcomes):
            failing.add(f"{test.suite} / {test.test_id}")
    for test in [*tests, *also]:
        name = f"{test.suite} / {test.test_id}"
        if name in out or name in failing:
            continue
        outcomes = [r.outcome for r in test.run_rows]
        if "passed" in outcomes and "failed" in outcomes:
            out[name] = f"{outcomes.count('passed')} of {len(outcomes)} runs passed in one invocation"
            continue
        if history is None:
            continue
        try:
            seen = [v for _, v, _, _ in history.verdicts(test.suite, test.test_id, limit=window)]
        except HistoryError:
            continue
        if "passed" in seen and "failed" in seen:
            out[name] = (
                f"passed {seen.count('passed')}, failed {seen.count('failed')} of its last {len(seen)} invocations"
            )
    return list(out.items())
