"""The interval and estimator formulas against known values and against simulated samples."""

from __future__ import annotations

import math
import random

import pytest

from tamesu.stats import (
    mean_difference,
    min_repeats_for,
    paired_difference,
    pass_hat_k,
    rate_difference,
    t_quantile,
    wilson_interval,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("c", "n", "low", "high"),
    # published Wilson 95% intervals (Newcombe 1998, table I)
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)],
)
def test_wilson_interval_matches_published_values(c: int, n: int, low: float, high: float) -> None:
    got = wilson_interval(c, n)
    assert got == pytest.approx((low, high), abs=1e-4)


def test_wilson_interval_of_all_passes_ends_at_one_and_starts_at_n_over_n_plus_z_squared() -> None:
    low, high = wilson_interval(5, 5)
    assert high == 1.0 and low == pytest.approx(5 / (5 + 1.959964**2), abs=1e-6)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_interval_covers_the_true_rate_about_as_often_as_promised() -> None:
    rng = random.Random(11)
    for p, n in ((0.9, 10), (0.5, 30), (0.8, 5)):
        covered = 0
        trials = 4000
        for _ in range(trials):
            c = sum(rng.random() < p for _ in range(n))
            low, high = wilson_interval(c, n)
            covered += low <= p <= high
        assert covered / trials > 0.92, (p, n, covered / trials)


def test_pass_hat_k_is_the_unbiased_chance_that_k_tries_all_pass() -> None:
    assert pass_hat_k(4, 5, 3) == pytest.approx(math.comb(4, 3) / math.comb(5, 3))
    assert pass_hat_k(5, 5, 5) == 1.0 and pass_hat_k(4, 5, 5) == 0.0
    assert pass_hat_k(3, 5, 1) == pytest.approx(0.6)
    assert pass_hat_k(3, 2, 3) is None and pass_hat_k(2, 2, 3) is None
    # its mean over many samples of n tries is p**k, which c/n ** k is not
    rng = random.Random(5)
    p, n, k = 0.7, 6, 3
    values = [pass_hat_k(sum(rng.random() < p for _ in range(n)), n, k) or 0.0 for _ in range(20000)]
    assert sum(values) / len(values) == pytest.approx(p**k, abs=0.01)


def test_min_repeats_for_a_threshold_is_where_the_all_pass_lower_bound_reaches_it() -> None:
    assert min_repeats_for(0.8) == 16
    assert wilson_interval(15, 15)[0] < 0.8 <= wilson_interval(16, 16)[0]
    assert min_repeats_for(1.0) is None


def test_t_quantiles_match_the_tables() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(12.7062, abs=1e-3)
    assert t_quantile(0.975, 10) == pytest.approx(2.2281, abs=1e-4)
    assert t_quantile(0.95, 30) == pytest.approx(1.6973, abs=1e-4)
    assert t_quantile(0.025, 10) == pytest.approx(-2.2281, abs=1e-4)


def test_rate_difference_matches_newcombes_worked_example() -> None:
    # Newcombe 1998 (method 10): 56/70 against 48/80 gives 0.2 with 0.0524 to 0.3339
    diff = rate_difference(48, 80, 56, 70)
    assert diff is not None
    assert (diff.estimate, diff.low, diff.high) == pytest.approx((0.2, 0.0524, 0.3339), abs=1e-4)
    assert diff.significant
    small = rate_difference(1, 1, 0, 1)
    assert small is not None and not small.significant


def test_mean_differences_with_welch_and_paired_intervals() -> None:
    same = mean_difference([100, 110, 90, 105], [102, 108, 95, 99])
    assert same is not None and not same.significant
    slower = mean_difference([100, 110, 90, 105, 98], [200, 210, 190, 205, 199])
    assert slower is not None and slower.significant and slower.low > 80
    assert mean_difference([1.0], [2.0, 3.0]) is None
    paired = paired_difference([(100, 150), (200, 260), (50, 95), (80, 130)])
    assert paired is not None and paired.significant and paired.estimate == pytest.approx(51.25)
    assert paired_difference([(1, 2)]) is None
