"""How sure a pass rate is, and whether two runs differ: the statistics reports print.

Agents are not deterministic, so "4 of 5 passed" is a small sample of a pass probability, not a
fact. This module turns counts into honest statements:

- ``wilson_interval``: the Wilson score interval of a pass rate (good coverage at small n and
  near 0 or 1, where the textbook normal interval fails);
- ``pass_hat_k``: pass^k, the chance that k independent tries *all* pass, estimated without bias
  from n tries with c passes as C(c, k) / C(n, k) (the reliability measure of tau-bench);
- ``rate_difference``: the difference of two pass rates with Newcombe's hybrid score interval;
- ``mean_difference`` / ``paired_difference``: the difference of two means with a Welch or
  paired Student-t interval, for latencies and costs.

Pure functions over numbers: reports, the verdict and ``tamesu diff`` all call these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "Difference",
    "max_lower_bound",
    "mean_difference",
    "min_repeats_for",
    "paired_difference",
    "pass_hat_k",
    "rate_difference",
    "t_quantile",
    "wilson_interval",
    "z_value",
]


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile: 1.96 for 0.95."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` in ``n`` tries; (0, 1) when nothing was tried."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes in {n} tries")
    z = z_value(confidence)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def max_lower_bound(n: int, *, confidence: float = 0.95) -> float:
    """The highest lower bound ``n`` tries can reach (all of them passing): n / (n + z²)."""
    return wilson_interval(n, n, confidence=confidence)[0] if n > 0 else 0.0


def min_repeats_for(threshold: float, *, confidence: float = 0.95) -> int | None:
    """The fewest repeats whose all-pass lower bound reaches ``threshold``; None for a threshold
    of 1, which no finite number of tries can prove."""
    if threshold >= 1:
        return None
    if threshold <= 0:
        return 1
    z2 = z_value(confidence) ** 2
    n = max(1, math.ceil(threshold * z2 / (1 - threshold)))
    while max_lower_bound(n, confidence=confidence) < threshold:
        n += 1
    return n


def pass_hat_k(successes: int, n: int, k: int) -> float | None:
    """pass^k: the unbiased estimate that k tries all pass, C(c, k) / C(n, k); None when k > n."""
    if k < 1 or k > n or not 0 <= successes <= n:
        return None
    return math.comb(successes, k) / math.comb(n, k)


@dataclass(frozen=True)
class Difference:
    """``b - a`` with a two-sided interval; ``significant`` when the interval excludes zero."""

    estimate: float
    low: float
    high: float
    confidence: float = 0.95

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0


def rate_difference(
    passed_a: int, n_a: int, passed_b: int, n_b: int, *, confidence: float = 0.95
) -> Difference | None:
    """The change of pass rate from a to b, with Newcombe's hybrid score interval (method 10),
    built from each side's Wilson interval; None when a side has no tries."""
    if n_a <= 0 or n_b <= 0:
        return None
    pa, pb = passed_a / n_a, passed_b / n_b
    la, ua = wilson_interval(passed_a, n_a, confidence=confidence)
    lb, ub = wilson_interval(passed_b, n_b, confidence=confidence)
    d = pb - pa
    low = d - math.sqrt((pb - lb) ** 2 + (ua - pa) ** 2)
    high = d + math.sqrt((ub - pb) ** 2 + (pa - la) ** 2)
    return Difference(d, max(-1.0, low), min(1.0, high), confidence)


def mean_difference(a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95) -> Difference | None:
    """The change of mean from a to b with Welch's interval (unequal variances); None when a side
    has fewer than two values, since then nothing can be said about the spread."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va, vb = _variance(a) / len(a), _variance(b) / len(b)
    d = mb - ma
    se2 = va + vb
    if se2 == 0:
        return Difference(d, d, d, confidence)
    df = se2**2 / ((va**2 / (len(a) - 1) if va else 0.0) + (vb**2 / (len(b) - 1) if vb else 0.0))
    half = t_quantile(0.5 + confidence / 2, df) * math.sqrt(se2)
    return Difference(d, d - half, d + half, confidence)


def paired_difference(pairs: Sequence[tuple[float, float]], *, confidence: float = 0.95) -> Difference | None:
    """The mean change ``b - a`` over pairs (the same test in two runs) with a paired t interval;
    None for fewer than two pairs."""
    if len(pairs) < 2:
        return None
    diffs = [b - a for a, b in pairs]
    d = sum(diffs) / len(diffs)
    se = math.sqrt(_variance(diffs) / len(diffs))
    half = t_quantile(0.5 + confidence / 2, len(diffs) - 1) * se
    return Difference(d, d - half, d + half, confidence)


def _variance(values: Sequence[float]) -> float:
    m = sum(values) / len(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (bisection on its CDF)."""
    if not 0 < p < 1:
        raise ValueError("p must be between 0 and 1")
    if df <= 0:
        raise ValueError("df must be positive")
    if df > 1e6:
        return NormalDist().inv_cdf(p)
    if p < 0.5:
        return -t_quantile(1 - p, df)
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if _t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


def _t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, x)
    return 1 - tail if t >= 0 else tail


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x > (a + 1) / (a + b + 2):
        return 1 - _incomplete_beta(b, a, 1 - x)
    return math.exp(log_front) * _beta_fraction(a, b, x) / a


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), evaluated with the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1) < 1e-14:
            break
    return result
