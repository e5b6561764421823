"""How a repeated test's runs are judged against its ``pass_threshold``, and when they may stop.

The reference rule compares the observed pass rate with the threshold. tamesu.yaml's
``statistics`` can ask for more: ``threshold_on: lower_bound`` compares the lower end of the
rate's Wilson interval instead (a pass then means the repeats *prove* the rate), and
``early_stop`` ends a test's repeats once the verdict is decided (``tamesu.sequential``). The
verdict (``runner.verdict``) and the scheduler's ``EarlyStopper`` both ask a ``RateRule``, so a
run stops for the same reason its verdict gives.

For the sequential test a run that passed counts as a pass, one that failed (or failed while
quarantined) as a failure; an infrastructure error says nothing about the agent and is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tamesu.sequential import Decision, Sprt, first_decision, settled
from tamesu.stats import min_repeats_for, pass_hat_k, wilson_interval

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.run_spec import RunSpec

__all__ = ["SLACK", "EarlyStopper", "RateRule", "Stop", "completion_order", "observation"]

SLACK = 0.005
"""Thresholds are written with two decimals: 0.67 means two of three, 0.33 one of three."""


def observation(outcome: str) -> bool | None:
    """What one run says of the agent: passed True, failed False, an error nothing."""
    if outcome == "passed":
        return True
    if outcome in ("failed", "quarantined"):
        return False
    return None


def completion_order(runs: Iterable[RunResult]) -> list[RunResult]:
    """Runs in the order they ended, which is the order the sequential test saw them."""
    return sorted(runs, key=lambda r: (r.started_at + r.duration, r.repeat_index))


@dataclass(frozen=True)
class Stop:
    """Why a test's repeats stopped early: the SPRT decided, or the verdict was ``settled``."""

    reason: Literal["sprt", "settled"]
    after: int
    """Runs it took."""
    decision: Decision | None = None
    """The SPRT's verdict (None when settled: the ordinary verdict holds)."""


@dataclass(frozen=True)
class RateRule:
    """The project's statistics settings, as the verdict and the scheduler use them."""

    threshold_on: Literal["rate", "lower_bound"] = "rate"
    confidence: float = 0.95
    pass_k: tuple[int, ...] = (3,)
    early_stop: tuple[float, float, float] | None = None
    """(alpha, beta, indifference) when early stopping is on."""

    @classmethod
    def from_settings(cls, statistics: Any) -> RateRule:
        """From tamesu.yaml's ``statistics`` (None: the reference rule)."""
        if statistics is None:
            return cls()
        stop = statistics.early_stop
        return cls(
            threshold_on=statistics.threshold_on,
            confidence=statistics.confidence,
            pass_k=tuple(statistics.pass_k),
            early_stop=(stop.alpha, stop.beta, stop.indifference)
            if stop is not None and stop.enabled
            else None,
        )

    def passes(self, passed: int, planned: int, threshold: float) -> bool:
        """The fixed-N verdict: rate (or its lower bound) against the threshold. A threshold of 1
        keeps meaning "every run passed" on the lower bound too, since no finite sample proves 1."""
        if planned <= 0:
            return False
        if self.threshold_on == "lower_bound" and threshold < 1:
            low, _ = wilson_interval(passed, planned, confidence=self.confidence)
            return low >= threshold - SLACK
        return passed / planned >= threshold - SLACK

    def sprt(self, threshold: float) -> Sprt | None:
        if self.early_stop is None:
            return None
        alpha, beta, indifference = self.early_stop
        return Sprt(threshold, alpha=alpha, beta=beta, indifference=indifference)

    def stop(self, outcomes: Sequence[bool | None], planned: int, threshold: float) -> Stop | None:
        """Whether (and why) a test may stop after these outcomes, in the order they came."""
        sprt = self.sprt(threshold)
        if sprt is None:
            return None
        seen = [o for o in outcomes if o is not None]
        decision, after = first_decision(seen, sprt)
        if decision is not None:
            return Stop("sprt", _position(outcomes, after), decision)
        if len(outcomes) < planned and settled(
            sum(1 for o in outcomes if o), len(outcomes), planned, lambda p, n: self.passes(p, n, threshold)
        ):
            return Stop("settled", len(outcomes))
        return None

    def needed_repeats(self, repeats: int, threshold: float) -> int | None:
        """On the lower bound: the repeats needed when ``repeats`` can never prove the threshold."""
        if self.threshold_on != "lower_bound" or threshold >= 1:
            return None
        need = min_repeats_for(threshold - SLACK, confidence=self.confidence)
        return need if need is not None and need > repeats else None

    def interval(self, passed: int, runs: int) -> tuple[float, float] | None:
        return wilson_interval(passed, runs, confidence=self.confidence) if runs > 0 else None

    def pass_hat(self, passed: int, runs: int) -> dict[int, float]:
        """pass^k for each configured k the runs can estimate."""
        out: dict[int, float] = {}
        for k in self.pass_k:
            value = pass_hat_k(passed, runs, k)
            if value is not None:
                out[k] = value
        return out


def _position(outcomes: Sequence[bool | None], observations: int) -> int:
    """How many runs it took to see ``observations`` passes and failures (errors in between count)."""
    seen = 0
    for i, o in enumerate(outcomes, 1):
        seen += o is not None
        if seen == observations:
            return i
    return len(outcomes)


@dataclass
class EarlyStopper:
    """The scheduler's side of early stopping: it hears every final result and says which planned
    runs need not start."""

    rule: RateRule
    _planned: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)
    _seen: dict[tuple[str, str], list[bool | None]] = field(default_factory=dict)
    _stopped: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def for_plan(cls, rule: RateRule, specs: Iterable[RunSpec]) -> EarlyStopper | None:
        """One for a plan, or None when early stopping is off."""
        if rule.early_stop is None:
            return None
        stopper = cls(rule)
        for spec in specs:
            stopper._planned[(spec.suite, spec.test_id)] = (spec.repeats, spec.pass_threshold)
        return stopper

    def observe(self, result: RunResult) -> None:
        """A final result came in (an earlier invocation's, when resuming, too)."""
        if not result.final:
            return
        key = (result.suite, result.test_id)
        plan = self._planned.get(key)
        if plan is None or key in self._stopped:
            return
        seen = self._seen.setdefault(key, [])
        seen.append(observation(result.outcome))
        if self.rule.stop(seen, *plan) is not None:
            self._stopped.add(key)

    def skip(self, spec: RunSpec) -> bool:
        """Whether this run need not start: its test is decided."""
        return (spec.suite, spec.test_id) in self._stopped
