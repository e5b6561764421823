"""The one table of a run's metrics, read by ``metric`` assertions, ``defaults.slo`` and reports.

Most metrics are computed from the Transcript's timings and turns. Others can only be measured
while the run happens (barge-in on a phone line, model spend); targets and the model layer record
them in ``Transcript.metrics`` and the table lists them so that suites may name them. Percentiles
use linear interpolation between the two nearest ranks (the usual "type 7" definition).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tamesu.transcript import Transcript, Turn

__all__ = [
    "ALIASES",
    "METRICS",
    "Metric",
    "compute_metrics",
    "metric_names",
    "metric_value",
    "metrics_markdown",
    "percentile",
    "resolve_metric",
]

Compute = Callable[["Transcript"], "float | None"]


@dataclass(frozen=True)
class Metric:
    description: str
    unit: str
    compute: Compute | None = None
    """None: the run records it (``source`` says who)."""
    source: str = "computed"
    default: float | None = None
    """The value of a recorded metric the run did not record (no model calls cost nothing)."""
    series: Callable[[Transcript], list[float]] | None = None
    """For a statistic over agent turns: the per-turn values (``compute_metrics`` reads each
    series once for all its statistics)."""
    stat: str | None = None
    """p50, p90, p95, p99, max or mean of ``series``."""


def percentile(values: Iterable[float], p: float) -> float | None:
    """The p-th percentile (0-100) with linear interpolation; None for no values."""
    data = sorted(values)
    if not data:
        return None
    return _sorted_percentile(data, p)


def _agent_turns_with_user(t: Transcript) -> list[tuple[Turn, Turn | None]]:
    """Each agent turn with the user turn it answers (the latest user turn before it)."""
    out: list[tuple[Turn, Turn | None]] = []
    last_user: Turn | None = None
    for turn in t.turns:
        if turn.role == "user":
            last_user = turn
        else:
            out.append((turn, last_user))
    return out


def _sent_at(agent: Turn, user: Turn | None) -> float | None:
    if agent.sent_at is not None:
        return agent.sent_at
    return None if user is None else user.sent_at


def _latencies(t: Transcript) -> list[float]:
    """Per agent turn: the user's message sent -> the agent's first audio or first byte (or its end)."""
    out: list[float] = []
    for agent, user in _agent_turns_with_user(t):
        if agent.latency_ms is not None:
            out.append(agent.latency_ms)
            continue
        sent = _sent_at(agent, user)
        first = agent.first_audio_at or agent.first_byte_at or agent.end_at
        if sent is not None and first is not None:
            out.append((first - sent) * 1000.0)
    return out


def _first_audio(t: Transcript) -> list[float]:
    out: list[float] = []
    for agent, user in _agent_turns_with_user(t):
        sent = _sent_at(agent, user)
        if sent is not None and agent.first_audio_at is not None:
            out.append((agent.first_audio_at - sent) * 1000.0)
    return out


def _response(t: Transcript) -> list[float]:
    out: list[float] = []
    for agent, user in _agent_turns_with_user(t):
        sent = _sent_at(agent, user)
        if sent is not None and agent.end_at is not None:
            out.append((agent.end_at - sent) * 1000.0)
    return out


def _pct(series: Callable[[Transcript], list[float]], p: float) -> Compute:
    return lambda t: percentile(series(t), p)


def _max(series: Callable[[Transcript], list[float]]) -> Compute:
    return lambda t: max(series(t), default=None)


def _mean(series: Callable[[Transcript], list[float]]) -> Compute:
    def mean(t: Transcript) -> float | None:
        values = series(t)
        return sum(values) / len(values) if values else None

    return mean


def _duration(t: Transcript) -> float | None:
    if t.duration:
        return t.duration
    ends = [x for turn in t.turns for x in (turn.end_at, turn.first_byte_at, turn.sent_at) if x is not None]
    return max(ends) if ends else None


_STATS = ("p50", "p90", "p95", "p99", "max", "mean")
_SERIES: dict[str, str] = {}
"""Series base name -> what it measures, for the compact table."""


def _series(name: str, what: str, series: Callable[[Transcript], list[float]]) -> dict[str, Metric]:
    _SERIES[name] = what
    return {
        f"{name}_p50": Metric(f"{what}: median over agent turns", "ms", _pct(series, 50), series=series, stat="p50"),
        f"{name}_p90": Metric(f"{what}: 90th percentile", "ms", _pct(series, 90), series=series, stat="p90"),
        f"{name}_p95": Metric(f"{what}: 95th percentile", "ms", _pct(series, 95), series=series, stat="p95"),
        f"{name}_p99": Metric(f"{what}: 99th percentile", "ms", _pct(series, 99), series=series, stat="p99"),
        f"{name}_max": Metric(f"{what}: slowest agent turn", "ms", _max(series), series=series, stat="max"),
        f"{name}_mean": Metric(f"{what}: mean over agent turns", "ms", _mean(series), series=series, stat="mean"),
    }  # fmt: skip


def _stats(values: list[float]) -> dict[str, float]:
    """Every statistic of a series at once, each equal to what its metric's own ``compute`` gives."""
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "p50": _sorted_percentile(ordered, 50.0),
        "p90": _sorted_percentile(ordered, 90.0),
        "p95": _sorted_percentile(ordered, 95.0),
        "p99": _sorted_percentile(ordered, 99.0),
        "max": max(values),
        "mean": sum(values) / len(values),
    }


def _sorted_percentile(data: list[float], p: float) -> float:
    if len(data) == 1:
        return data[0]
    rank = (len(data) - 1) * min(max(p, 0.0), 100.0) / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (rank - low)


_VOICE = "recorded by voice targets"
_MODELS = "recorded by model calls; 0 when the run made none"

METRICS: dict[str, Metric] = {
    "turns": Metric("Agent turns", "count", lambda t: float(len(t.agent_turns()))),
    "user_turns": Metric(
        "User turns (script, simulator or counterpart)", "count", lambda t: float(len(t.user_turns()))
    ),
    "tool_calls": Metric("Tool calls the agent made", "count", lambda t: float(len(t.tool_calls()))),
    "duration_s": Metric("Length of the run", "s", _duration),
    "duration_ms": Metric(
        "Length of the run", "ms", lambda t: None if (d := _duration(t)) is None else d * 1000.0
    ),
    **_series(
        "turn_latency_ms",
        "User message sent to the agent's first byte (voice: the caller's end of speech to the agent's "
        "first speech as heard)",
        _latencies,
    ),
    **_series("response_ms", "User message sent to the end of the agent's turn", _response),
    **_series(
        "time_to_first_audio_ms",
        "User message sent to the agent's first audio (voice: the caller's end of speech to the first "
        "audible agent audio received)",
        _first_audio,
    ),
    "barge_ins": Metric("Times the caller started talking while the agent spoke", "count", source=_VOICE),
    "interruptions": Metric(
        "Times the agent yielded to a barge-in (went quiet within 500 ms of the caller finishing)",
        "count",
        source=_VOICE,
    ),
    "barge_in_ms_p50": Metric(
        "Caller starts talking over the agent to the agent going quiet: median", "ms", source=_VOICE
    ),
    "barge_in_ms_p95": Metric(
        "Caller starts talking over the agent to the agent going quiet: 95th percentile", "ms", source=_VOICE
    ),
    "barge_in_ms_max": Metric(
        "Caller starts talking over the agent to the agent going quiet: slowest", "ms", source=_VOICE
    ),
    "talk_over_ms": Metric("Total time agent and caller spoke at once", "ms", source=_VOICE),
    "silence_ms_max": Metric(
        "Longest silence the caller waited through for the agent (before it spoke, or between its phrases)",
        "ms",
        source=_VOICE,
    ),
    "call_duration_s": Metric("Length of the call, from connecting to the last turn", "s", source=_VOICE),
    "caller_speech_s": Metric("Seconds the simulated caller spoke", "s", source=_VOICE),
    "agent_speech_s": Metric("Seconds the agent spoke, as the caller heard it", "s", source=_VOICE),
    "wer_agent_transcript": Metric(
        "Word error rate of the agent's own transcript against tamesu's STT of its audio "
        "(transcript_source: stt with an agent that publishes transcripts)",
        "ratio",
        source=_VOICE,
    ),
    "llm_calls": Metric(
        "Model calls tamesu made (simulator, judge, ...)", "count", source=_MODELS, default=0.0
    ),
    "llm_tokens": Metric(
        "Tokens tamesu's own model calls used (input + output)", "count", source=_MODELS, default=0.0
    ),
    "llm_input_tokens": Metric(
        "Input tokens of tamesu's own model calls", "count", source=_MODELS, default=0.0
    ),
    "llm_output_tokens": Metric(
        "Output tokens of tamesu's own model calls", "count", source=_MODELS, default=0.0
    ),
    "llm_cost_usd": Metric("Cost of tamesu's own model calls", "USD", source=_MODELS, default=0.0),
}
"""Name -> Metric. Plugins may add recorded metrics here before a suite is validated."""

ALIASES: dict[str, str] = {
    f"{base}_{stat}_ms": f"{base}_ms_{stat}"
    for base in ("turn_latency", "response", "time_to_first_audio")
    for stat in _STATS
}
"""Other spellings suites use (``turn_latency_p95_ms`` is ``turn_latency_ms_p95``)."""
ALIASES["barge_in_p95_ms"] = "barge_in_ms_p95"
ALIASES["barge_in_p50_ms"] = "barge_in_ms_p50"
ALIASES["barge_in_max_ms"] = "barge_in_ms_max"
ALIASES["silence_max_ms"] = "silence_ms_max"


def resolve_metric(name: str) -> str | None:
    """The table name of ``name`` (resolving aliases), or None when it is not a known metric."""
    name = ALIASES.get(name, name)
    return name if name in METRICS else None


def metric_names() -> list[str]:
    return sorted(METRICS)


_Plan = list[tuple[str, "Compute | None", "Callable[[Transcript], list[float]] | None", str]]
_plan: tuple[list[str], list[Metric], _Plan] | None = None


def _compute_plan() -> _Plan:
    """The table as steps (name, compute, series, stat), made again only when the table changed."""
    global _plan
    names, metrics = list(METRICS), list(METRICS.values())
    if _plan is not None and _plan[0] == names and _plan[1] == metrics:  # identity first: cheap
        return _plan[2]
    steps: _Plan = []
    for name, metric in METRICS.items():
        if metric.compute is None:
            continue
        if metric.series is not None and metric.stat in _STATS:
            steps.append((name, None, metric.series, metric.stat))
        else:
            steps.append((name, metric.compute, None, ""))
    _plan = (names, metrics, steps)
    return steps


def compute_metrics(transcript: Transcript) -> dict[str, float]:
    """Every computed metric that has a value in this run (recorded ones are left to their source).

    Each per-turn series is read once for all its statistics (this runs once per run).
    """
    out: dict[str, float] = {}
    read: dict[Callable[[Transcript], list[float]], dict[str, float]] = {}
    for name, compute, series, stat in _compute_plan():
        if series is None:
            value = compute(transcript)  # type: ignore[misc]
        else:
            stats = read.get(series)
            if stats is None:
                stats = read[series] = _stats(series(transcript))
            value = stats.get(stat)
        if value is not None:
            out[name] = float(value)
    return out


def metric_value(transcript: Transcript, name: str) -> float | None:
    """One metric of the run: what the run recorded, else computed now; None when it has no value.

    Raises KeyError for a name that is not in the table.
    """
    key = resolve_metric(name)
    if key is None:
        raise KeyError(name)
    for candidate in (key, name):
        if candidate in transcript.metrics:
            return float(transcript.metrics[candidate])
    compute = METRICS[key].compute
    if compute is None:
        return METRICS[key].default
    value = compute(transcript)
    return None if value is None else float(value)


def metrics_markdown(*, compact: bool = False) -> str:
    """The table as Markdown; ``compact`` writes each percentile series as one row (for the README)."""
    lines = ["| Metric | Unit | What it measures |", "|---|---|---|"]
    done: set[str] = set()
    for name, metric in METRICS.items():
        base = name.rsplit("_", 1)[0]
        if compact and base in _SERIES and name.endswith(_STATS):
            if base not in done:
                done.add(base)
                stats = "/".join(_STATS)
                lines.append(f"| `{base}_{{{stats}}}` | ms | {_SERIES[base]}: per agent turn |")
            continue
        note = "" if metric.source == "computed" else f" ({metric.source})"
        lines.append(f"| `{name}` | {metric.unit} | {metric.description}{note} |")
    return "\n".join(lines) + "\n"
