"""The sequential test keeps its promised error rates, measured by simulation (seeded, fast)."""

from __future__ import annotations

import random

import pytest

from tamesu.sequential import Sprt, first_decision, settled

pytestmark = pytest.mark.unit

TRIALS = 3000


def _simulate(sprt: Sprt, rate: float, *, seed: int, limit: int = 1000) -> tuple[float, float, float]:
    """Shares of simulated tests decided pass and fail, and the runs they took on average."""
    rng = random.Random(seed)
    passes = fails = runs = 0
    for _ in range(TRIALS):
        decision, used = first_decision((rng.random() < rate for _ in range(limit)), sprt)
        passes += decision == "pass"
        fails += decision == "fail"
        runs += used
    return passes / TRIALS, fails / TRIALS, runs / TRIALS


def _bound(error: float, other: float) -> float:
    """Wald's bound on the real error rate (error / (1 - other)) plus three standard errors."""
    bound = error / (1 - other)
    return bound + 3 * (bound * (1 - bound) / TRIALS) ** 0.5


@pytest.mark.parametrize(
    ("threshold", "alpha", "beta", "indifference"),
    [(0.8, 0.05, 0.05, 0.1), (0.67, 0.05, 0.1, 0.1), (0.9, 0.1, 0.05, 0.05), (1.0, 0.05, 0.05, 0.1)],
)
def test_sprt_keeps_its_error_rates_at_both_hypotheses(
    threshold: float, alpha: float, beta: float, indifference: float
) -> None:
    sprt = Sprt(threshold, alpha=alpha, beta=beta, indifference=indifference)
    false_pass, _, _ = _simulate(sprt, sprt.low, seed=1)
    _, false_fail, _ = _simulate(sprt, sprt.high, seed=2)
    assert false_pass <= _bound(alpha, beta)
    assert false_fail <= _bound(beta, alpha)


def test_sprt_errs_less_far_from_the_threshold_and_decides_sooner() -> None:
    sprt = Sprt(0.8, alpha=0.05, beta=0.05, indifference=0.1)
    near_pass, _, near_runs = _simulate(sprt, 0.7, seed=3)
    far_pass, _, far_runs = _simulate(sprt, 0.4, seed=4)
    assert far_pass < near_pass and far_pass < 0.005
    assert far_runs < near_runs
    _, _, good_runs = _simulate(sprt, 1.0, seed=5)
    assert good_runs == 12  # a flawless agent passes after 12 runs instead of, say, repeat: 50


def test_a_failure_at_threshold_one_decides_at_once() -> None:
    sprt = Sprt(1.0)
    assert sprt.decide(0, 1) == "fail"
    assert sprt.decide(27, 0) is None and sprt.decide(28, 0) == "pass"
    assert first_decision([True, True, False, True], sprt) == ("fail", 3)


def test_settled_when_no_remaining_run_can_change_the_fixed_verdict() -> None:
    def judge(p: int, n: int) -> bool:
        return p / n >= 0.8

    assert settled(8, 8, 10, judge)  # 8/10 already passes
    assert settled(5, 8, 10, judge) is True  # at most 7/10: fails whatever comes
    assert not settled(7, 8, 10, judge)


def test_sprt_refuses_rates_it_cannot_test() -> None:
    with pytest.raises(ValueError):
        Sprt(0.8, alpha=0.6)
    with pytest.raises(ValueError):
        Sprt(0.8, indifference=0)
