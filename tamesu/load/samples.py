"""What a load test measures: one sample per call attempt, the running totals, windows over time.

A ``CallSample`` is what the driver keeps of a call once its result is written: when it started
and ended (seconds since the test started), how it ended, which fault when it failed to run, each
agent turn's latencies stamped with when the turn happened, and the agent's faults (every 5xx,
refusal, timeout and drop, the ones the connect policy retried within a passing call included). Samples are appended to
``calls.jsonl`` next to results.jsonl, so the report and a resumed test are rebuilt from the run
directory alone. Fault kinds name what an agent under load does wrong, so they are counted apart.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from tamesu.costs import result_cost
from tamesu.metrics import percentile
from tamesu.wire.faults import agent_fault

if TYPE_CHECKING:
    from tamesu.kernel.outcome import RunResult
    from tamesu.kernel.transcript import Transcript

__all__ = ["SERIES", "CallSample", "LoadStats", "capacity_held", "fault_kind", "sample_of", "window_rows"]

SERIES = ("turn_latency_ms", "response_ms", "time_to_first_audio_ms")
"""The per-turn series a load test keeps; ``<series>_p95`` and the like are gated over all calls."""

_RECENT = 30.0
"""Seconds of recent samples the live view's percentiles are taken over."""


def fault_kind(result: RunResult) -> str | None:
    """What went wrong for an ``error`` result: refused, http_5xx, timeout, dropped, worker, ...

    The agent-side kinds are read from the adapter's message (``agent_fault``); anything else keeps
    the run's own error kind.
    """
    if result.outcome not in ("error", "quarantined") or result.error is None:
        return None
    kind = result.error_kind or "other"
    if kind in (
        "worker",
        "timeout",
        "hook",
        "budget",
        "config",
        "model",
        "simulator",
        "cancelled",
    ):
        return kind
    return agent_fault(result.error) or kind


class CallSample(msgspec.Struct, kw_only=True):
    """One attempt of one call, as the report needs it (no text, no secrets)."""

    index: int
    run_id: str
    test_id: str
    suite: str = ""
    """The test's suite ("" in calls.jsonl files written before it was kept)."""
    attempt: int = 1
    final: bool = True
    start: float
    end: float
    outcome: str
    fault: str | None = None
    agent_faults: dict[str, int] = msgspec.field(default_factory=dict)
    """The result's ``agent_faults``: what the agent did wrong in this attempt, retried or not."""
    cost_usd: float = 0.0
    """What the attempt cost (its ``cost_usd`` metric: model calls, speech, call minutes)."""
    in_flight: int = 0
    """Calls in flight when this attempt ended, itself included (0: not known, an older record)."""
    full: bool = False
    """The agent refused this call for capacity (``error_kind`` capacity; its fault says how)."""
    turn_latency_ms: list[tuple[float, float]] = msgspec.field(default_factory=list)
    """(seconds since the test started, milliseconds) per agent turn."""
    response_ms: list[tuple[float, float]] = msgspec.field(default_factory=list)
    time_to_first_audio_ms: list[tuple[float, float]] = msgspec.field(default_factory=list)

    def series(self, name: str) -> list[tuple[float, float]]:
        return getattr(self, name)  # type: ignore[no-any-return]


def sample_of(
    index: int,
    result: RunResult,
    transcript: Transcript | None,
    *,
    start: float,
    end: float,
    in_flight: int = 0,
) -> CallSample:
    """The sample of one finished attempt; ``start``/``end`` are seconds since the test started."""
    sample = CallSample(
        index=index,
        run_id=result.run_id,
        test_id=result.test_id,
        suite=result.suite,
        attempt=result.attempt,
        final=result.final,
        start=start,
        end=end,
        outcome=result.outcome,
        fault=fault_kind(result),
        agent_faults=dict(result.agent_faults),
        cost_usd=result_cost(result),
        in_flight=in_flight,
        full=result.error_kind == "capacity",
    )
    if transcript is None:
        return sample
    last_user: float | None = None
    for turn in transcript.turns:
        if turn.role == "user":
            last_user = turn.sent_at
            continue
        sent = turn.sent_at if turn.sent_at is not None else last_user
        if sent is None:
            continue
        at = start + sent
        first = turn.first_audio_at or turn.first_byte_at or turn.end_at
        if first is not None:
            sample.turn_latency_ms.append((at, (first - sent) * 1000.0))
        if turn.end_at is not None:
            sample.response_ms.append((at, (turn.end_at - sent) * 1000.0))
        if turn.first_audio_at is not None:
            sample.time_to_first_audio_ms.append((at, (turn.first_audio_at - sent) * 1000.0))
    return sample


def _pcts(values: Sequence[float]) -> dict[str, float | None]:
    return {f"p{p}": percentile(values, p) for p in (50, 95, 99)}


class LoadStats:
    """Running totals of a load test, cheap to update per call and to read several times a second."""

    def __init__(self) -> None:
        self.started = 0
        self.active = 0
        self.shed = 0
        """Arrivals dropped because max_in_flight calls were already running."""
        self.retried = 0
        self.outcomes: Counter[str] = Counter()
        """Final outcomes (passed, failed, error, quarantined)."""
        self.faults: Counter[str] = Counter()
        """Fault kinds of every attempt that ended in an error, retried ones included."""
        self.agent_faults: Counter[str] = Counter()
        """Every fault the agent produced, by kind: the attempts' own errors and what the connect
        policy retried within them (a call that passed may hold some)."""
        self.samples: list[CallSample] = []
        self._ends: deque[float] = deque()
        self._recent: dict[str, deque[tuple[float, float]]] = {name: deque() for name in SERIES}
        self.workers: dict[str, Any] = {}
        """The placement's last health report (Ray workers alive, calls in flight per worker)."""

    @property
    def finished(self) -> int:
        return sum(self.outcomes.values())

    def add(self, sample: CallSample) -> None:
        """Count one attempt (``final=False`` attempts only count their fault)."""
        self.samples.append(sample)
        if sample.fault is not None:
            self.faults[sample.fault] += 1
        self.agent_faults.update(sample.agent_faults)
        if not sample.final:
            self.retried += 1
            return
        self.outcomes[sample.outcome] += 1
        self._ends.append(sample.end)
        for name in SERIES:
            self._recent[name].extend(sample.series(name))

    def pass_rate(self) -> float | None:
        graded = self.finished
        return None if graded == 0 else self.outcomes["passed"] / graded

    def error_rate(self) -> float | None:
        graded = self.finished
        return None if graded == 0 else self.outcomes["error"] / graded

    def values(self, series: str) -> list[float]:
        """Every final attempt's values of one series, over the whole test."""
        return [v for s in self.samples if s.final for _, v in s.series(series)]

    def snapshot(self, now: float) -> dict[str, Any]:
        """What the live view shows at ``now`` (seconds since the test started)."""
        while self._ends and self._ends[0] < now - 10.0:
            self._ends.popleft()
        recent: dict[str, dict[str, float | None]] = {}
        for name, window in self._recent.items():
            while window and window[0][0] < now - _RECENT:
                window.popleft()
            recent[name] = _pcts([v for _, v in window])
        return {
            "elapsed": now,
            "active": self.active,
            "started": self.started,
            "finished": self.finished,
            "calls_per_s": len(self._ends) / min(10.0, max(now, 1e-9)),
            "outcomes": dict(self.outcomes),
            "pass_rate": self.pass_rate(),
            "faults": dict(self.faults),
            "agent_faults": dict(self.agent_faults),
            "shed": self.shed,
            "retried": self.retried,
            "recent": recent,
            "workers": dict(self.workers),
        }


def window_rows(
    samples: Iterable[CallSample], width: float, *, end: float | None = None
) -> list[dict[str, Any]]:
    """Per time window: calls ended, their outcomes and faults, the agent's faults, calls/s, latency
    percentiles.

    A call (and the agent faults of its attempt) counts in the window it ended in; a turn's latency
    in the window it happened in. ``end`` is when the test ended: the last window is cut there, and
    its calls/s divided by the seconds it really lasted, not by the full width.
    """
    width = max(width, 1e-3)
    rows: dict[int, dict[str, Any]] = {}

    def row(t: float) -> dict[str, Any]:
        k = max(0, int(t // width))
        if k not in rows:
            rows[k] = {
                "outcomes": Counter(),
                "faults": Counter(),
                "agent_faults": Counter(),
                **{s: [] for s in SERIES},
            }
        return rows[k]

    for s in samples:
        r = row(s.end)
        if s.fault is not None:
            r["faults"][s.fault] += 1
        r["agent_faults"].update(s.agent_faults)
        if not s.final:
            continue
        r["outcomes"][s.outcome] += 1
        for name in SERIES:
            for at, value in s.series(name):
                row(at)[name].append(value)
    out: list[dict[str, Any]] = []
    for k in sorted(rows):
        r = rows[k]
        ended = sum(r["outcomes"].values())
        start, stop = k * width, (k + 1) * width
        if end is not None and start < end < stop:
            stop = end
        out.append(
            {
                "start": start,
                "end": stop,
                "calls": ended,
                "calls_per_s": ended / max(stop - start, 1e-3),
                "outcomes": dict(r["outcomes"]),
                "pass_rate": None if not ended else r["outcomes"]["passed"] / ended,
                "faults": dict(r["faults"]),
                "agent_faults": dict(r["agent_faults"]),
                **{name: {**_pcts(r[name]), "count": len(r[name])} for name in SERIES},
            }
        )
    return out


def capacity_held(samples: Iterable[CallSample]) -> dict[str, int] | None:
    """How the target refused calls for capacity: the refusals, and the fewest other calls it was
    holding when one came (the concurrency it held); None when it never refused."""
    refused = [s for s in samples if s.full]
    if not refused:
        return None
    known = [s.in_flight - 1 for s in refused if s.in_flight > 0]
    return {"refusals": len(refused), "held": min(known) if known else 0}
