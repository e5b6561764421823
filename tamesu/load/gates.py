"""The gates of a load test: pass rate, error rate, latency percentiles over every call, drift.

A suite's ``defaults.slo`` holds each run to a maximum; under load the same names also bound the
percentile over every turn of every call (``turn_latency_ms_p95: 3000`` is then the p95 of all
turns of the whole test). SLO names that are not per-turn percentiles (``llm_cost_usd``) stay
per-call checks: they already fail the calls that cross them, which the pass rate counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tamesu.errors import UsageError
from tamesu.load.samples import SERIES, CallSample, window_rows
from tamesu.metrics import percentile, resolve_metric

if TYPE_CHECKING:
    from tamesu.config.load_profile import LoadProfile

__all__ = ["GateResult", "Gates", "evaluate_gates", "gates_for", "series_stat"]

_STATS = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "max": 100.0}


def series_stat(name: str) -> tuple[str, str] | None:
    """``turn_latency_ms_p95`` (or ``turn_latency_p95_ms``) -> (turn_latency_ms, p95); None otherwise."""
    key = resolve_metric(name)
    if key is None:
        return None
    for series in SERIES:
        stat = key.removeprefix(series + "_")
        if key.startswith(series + "_") and stat in (*_STATS, "mean"):
            return series, stat
    return None


def _stat(values: Sequence[float], stat: str) -> float | None:
    if not values:
        return None
    if stat == "mean":
        return sum(values) / len(values)
    return percentile(values, _STATS[stat])


@dataclass
class GateResult:
    name: str
    """pass_rate, error_rate, slo/<metric>, drift."""
    limit: float
    actual: float | None
    passed: bool
    detail: str = ""


@dataclass
class Gates:
    pass_rate: float | None = 1.0
    """Least share of all final calls that must pass; None holds each test to its own threshold."""
    thresholds: dict[tuple[str, str], float] = field(default_factory=dict)
    """(suite, test id) -> that test's pass_threshold, the pass-rate gates when ``pass_rate`` is None."""
    error_rate: float | None = None
    slo: dict[str, float] = field(default_factory=dict)
    """Per-turn percentile metric -> maximum, over every call."""
    drift: float | None = None
    window: float = 10.0
    cost_per_pass: float | None = None
    """Most US dollars per passed call (every attempt's cost over the final calls that passed)."""


def gates_for(
    profile: LoadProfile,
    *,
    suite_slo: Mapping[str, float] = {},
    pass_threshold: float = 1.0,
    thresholds: Mapping[tuple[str, str], float] | None = None,
) -> Gates:
    """The gates of a test: the profile's, then the suites' percentile SLOs, then the pass threshold.

    Without a profile pass rate, each test of ``thresholds`` is held to its own pass_threshold (a
    looser test never lowers the bar of a stricter one); without those either, to ``pass_threshold``.
    A profile SLO that is not a per-turn percentile is a usage error (it could never be checked).
    """
    given = profile.gates
    slo = {name: float(v) for name, v in suite_slo.items() if series_stat(name) is not None}
    for name, value in (given.slo if given is not None else {}).items():
        if series_stat(name) is None:
            known = ", ".join(f"{s}_p95" for s in SERIES)
            raise UsageError(f"load gate slo {name!r} is not a per-turn percentile (such as {known})")
        slo[name] = float(value)
    explicit = given.pass_rate if given is not None else None
    own = dict(thresholds or {})
    return Gates(
        pass_rate=explicit if explicit is not None else (None if own else pass_threshold),
        thresholds={} if explicit is not None else own,
        error_rate=given.error_rate if given is not None else None,
        slo=slo,
        drift=given.drift if given is not None else None,
        window=profile.seconds("window") or 10.0,
        cost_per_pass=given.cost_per_pass if given is not None else None,
    )


def evaluate_gates(gates: Gates, samples: Iterable[CallSample]) -> list[GateResult]:
    """Every gate against the final attempts of the test; an empty test passes no rate gate."""
    finals = [s for s in samples if s.final]
    out: list[GateResult] = []
    graded = len(finals)
    errors = sum(1 for s in finals if s.outcome == "error")
    if gates.pass_rate is not None:
        out.append(_pass_rate("pass_rate", gates.pass_rate, finals, "calls"))
    suites = {suite for suite, _ in gates.thresholds}
    for (suite, test), threshold in gates.thresholds.items():
        mine = [s for s in finals if s.test_id == test and s.suite in (suite, "")]
        name = f"pass_rate/{suite}/{test}" if len(suites) > 1 else f"pass_rate/{test}"
        out.append(_pass_rate(name, threshold, mine, "calls of the test"))
    if gates.error_rate is not None:
        err = errors / graded if graded else None
        ok = err is not None and err <= gates.error_rate + 1e-9
        out.append(GateResult("error_rate", gates.error_rate, err, ok, f"{errors}/{graded} calls errored"))
    for name, limit in gates.slo.items():
        series, stat = series_stat(name)  # type: ignore[misc]
        values = [v for s in finals for _, v in s.series(series)]
        actual = _stat(values, stat)
        ok = actual is None or actual <= limit
        detail = f"over {len(values)} turns" if values else "no turns measured"
        out.append(GateResult(f"slo/{name}", limit, actual, ok, detail))
    if gates.cost_per_pass is not None:
        out.append(_cost_per_pass(gates.cost_per_pass, list(samples), finals))
    if gates.drift is not None:
        out.append(_drift(gates, finals))
    return out


def _cost_per_pass(limit: float, samples: Sequence[CallSample], finals: Sequence[CallSample]) -> GateResult:
    """Every attempt's cost over the calls that passed; no pass at all holds no cost gate."""
    spent = sum(s.cost_usd for s in samples)
    passed = sum(1 for s in finals if s.outcome == "passed")
    actual = spent / passed if passed else None
    ok = actual is not None and actual <= limit + 1e-12
    return GateResult("cost_per_pass", limit, actual, ok, f"${spent:.4f} over {passed} passed calls")


def _pass_rate(name: str, limit: float, finals: Sequence[CallSample], what: str) -> GateResult:
    """One pass-rate gate over these final calls; none at all holds no gate."""
    passed = sum(1 for s in finals if s.outcome == "passed")
    rate = passed / len(finals) if finals else None
    ok = rate is not None and rate >= limit - 1e-9
    return GateResult(name, limit, rate, ok, f"{passed}/{len(finals)} {what} passed")


def _drift(gates: Gates, finals: list[CallSample]) -> GateResult:
    rows = [r for r in window_rows(finals, gates.window) if r["turn_latency_ms"]["count"]]
    if len(rows) < 2:
        return GateResult("drift", gates.drift or 1.0, None, True, "fewer than two windows with turns")
    first, last = rows[0]["turn_latency_ms"]["p95"], rows[-1]["turn_latency_ms"]["p95"]
    ratio = (last / first) if first else None
    ok = ratio is None or ratio <= (gates.drift or 1.0)
    detail = f"turn_latency_ms_p95 {first:.0f} ms in the first window, {last:.0f} ms in the last"
    return GateResult("drift", gates.drift or 1.0, ratio, ok, detail)
