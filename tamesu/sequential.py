"""Stopping a repeated test early, once more runs cannot reasonably change its verdict.

A test with ``repeat: 50`` and ``pass_threshold: 0.8`` against an agent that passes every time is
decided long before its fiftieth model-driven conversation. Two rules may stop it:

- **Wald's sequential probability ratio test** (SPRT) weighs "the true pass rate is at least
  threshold + indifference" (the test should pass) against "at most threshold − indifference"
  (it should fail). After each run the log-likelihood ratio of the two is compared with Wald's
  bounds: above ln((1 − β) / α) the test passes, below ln(β / (1 − α)) it fails. Its promise: a
  test whose rate is at or below the lower hypothesis passes early with probability at most
  α / (1 − β) (about α), one at or above the upper fails early with probability at most
  β / (1 − α) (``tests/stats/test_sequential.py`` measures both by simulation). Between the two
  hypotheses either decision is acceptable.
- **Curtailment**: the fixed-N verdict is already certain (enough passes, or too many failures),
  whatever the remaining runs do; this stop makes no error at all.

A test the SPRT leaves undecided after its ``repeat`` runs gets the ordinary verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Decision", "Sprt", "first_decision", "settled"]

Decision = Literal["pass", "fail"]


@dataclass(frozen=True)
class Sprt:
    """Wald's test of pass rate ≥ threshold + indifference against ≤ threshold − indifference."""

    threshold: float
    alpha: float = 0.05
    """The most a test at the lower rate may pass by stopping early."""
    beta: float = 0.05
    """The most a test at the upper rate may fail by stopping early."""
    indifference: float = 0.1

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5 or not 0 < self.beta < 0.5:
            raise ValueError("alpha and beta must be between 0 and 0.5")
        if not 0 < self.indifference < 0.5:
            raise ValueError("indifference must be between 0 and 0.5")

    @property
    def low(self) -> float:
        """The pass rate the test must fail at (H0)."""
        return max(0.0, self.threshold - self.indifference)

    @property
    def high(self) -> float:
        """The pass rate the test must pass at (H1)."""
        return min(1.0, self.threshold + self.indifference)

    def log_ratio(self, passed: int, failed: int) -> float:
        """ln L(high) / L(low) after ``passed`` passes and ``failed`` failures (±inf when a single
        outcome is impossible under one hypothesis: a pass at rate 0, a failure at rate 1)."""
        return _term(passed, self.high, self.low) + _term(failed, 1 - self.high, 1 - self.low)

    def decide(self, passed: int, failed: int) -> Decision | None:
        """Pass or fail once the ratio crosses a bound; None while it lies between them."""
        llr = self.log_ratio(passed, failed)
        if llr >= math.log((1 - self.beta) / self.alpha):
            return "pass"
        if llr <= math.log(self.beta / (1 - self.alpha)):
            return "fail"
        return None


def _term(count: int, under_high: float, under_low: float) -> float:
    if count == 0:
        return 0.0
    if under_low == 0:
        return math.inf
    if under_high == 0:
        return -math.inf
    return count * math.log(under_high / under_low)


def first_decision(outcomes: Iterable[bool], sprt: Sprt) -> tuple[Decision | None, int]:
    """The SPRT's decision over outcomes in the order they came, and how many it took; (None, n)
    when it never decided."""
    passed = failed = seen = 0
    for ok in outcomes:
        seen += 1
        passed += ok
        failed += not ok
        decision = sprt.decide(passed, failed)
        if decision is not None:
            return decision, seen
    return None, seen


def settled(passed: int, runs: int, planned: int, judge: Callable[[int, int], bool]) -> bool:
    """Whether the fixed-N verdict ``judge(passes, planned)`` is already certain after ``runs``:
    it is the same with no more passes as with every remaining run passing (judges are monotone
    in the passes)."""
    remaining = max(0, planned - runs)
    return judge(passed, planned) == judge(passed + remaining, planned)
