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
    from tamesu.kernel.transcript import Transcript

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
    "shown_metrics",
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


def _timings(t: Transcript) -> tuple[list[float], list[float], list[float]]:
    """Per agent turn, in one pass over the turns: its latency, time to first audio and response
    time (ms), each measured from when the user's message was sent (the agent turn's own ``sent_at``,
    else the latest user turn's before it)."""
    latency: list[float] = []
    first_audio: list[float] = []
    response: list[float] = []
    user_sent: float | None = None
    for turn in t.turns:
        if turn.role == "user":
            user_sent = turn.sent_at
            continue
        sent = turn.sent_at if turn.sent_at is not None else user_sent
        if sent is None:
            continue
        first = turn.first_audio_at or turn.first_byte_at or turn.end_at
        if first is not None:
            latency.append((first - sent) * 1000.0)
        if turn.first_audio_at is not None:
            first_audio.append((turn.first_audio_at - sent) * 1000.0)
        if turn.end_at is not None:
            response.append((turn.end_at - sent) * 1000.0)
    return latency, first_audio, response


def _latencies(t: Transcript) -> list[float]:
    """Per agent turn: the user's message sent -> the agent's first audio or first byte (or its end)."""
    return _timings(t)[0]


def _first_audio(t: Transcript) -> list[float]:
    return _timings(t)[1]


def _response(t: Transcript) -> list[float]:
    return _timings(t)[2]


_ONE_PASS: dict[Callable[[Transcript], list[float]], int] = {_latencies: 0, _first_audio: 1, _response: 2}
"""The series ``_timings`` gives at once (``compute_metrics`` reads the turns once for all three)."""


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


def shown_metrics(values: dict[str, float]) -> dict[str, float]:
    """The metrics as a report lists them: a series whose six statistics are one value (a run of
    one agent turn) is that value once, under the series' name (``turn_latency_ms``)."""
    shown = dict(values)
    for name in _SERIES:
        stats = [shown.get(f"{name}_{stat}") for stat in _STATS]
        if stats[0] is not None and all(value == stats[0] for value in stats):
            for stat in _STATS:
                del shown[f"{name}_{stat}"]
            shown[name] = stats[0]
    return dict(sorted(shown.items()))


def _stats(values: list[float]) -> tuple[float, ...]:
    """Every statistic of a non-empty series at once, in ``_STATS`` order, each equal to what its
    metric's own ``compute`` gives (the percentiles are ``_sorted_percentile``'s arithmetic)."""
    ordered = sorted(values)
    last = len(ordered) - 1
    out: list[float] = []
    for p in _PERCENTILES:
        if last == 0:
            out.append(ordered[0])
            continue
        rank = last * p / 100.0
        low = int(rank)
        high = low + 1 if low < last else last
        out.append(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))
    out.append(max(values))
    out.append(sum(values) / len(values))
    return tuple(out)


_PERCENTILES = (50.0, 90.0, 95.0, 99.0)
"""p50, p90, p95 and p99: the first four of ``_STATS``."""


def _sorted_percentile(data: list[float], p: float) -> float:
    if len(data) == 1:
        return data[0]
    rank = (len(data) - 1) * min(max(p, 0.0), 100.0) / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (rank - low)


_VOICE = "recorded by voice targets"
_MODELS = "recorded by model calls; 0 when the run made none"
_COSTS = "recorded at the end of every run (tamesu.costs)"

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
    "cost_usd": Metric(
        "What the run cost: model calls, speech and call minutes (prices: in tamesu.yaml)",
        "USD",
        source=_COSTS,
        default=0.0,
    ),
    "speech_cost_usd": Metric(
        "Hosted TTS and STT, and local engines' CPU seconds, at prices:", "USD", source=_COSTS
    ),
    "call_minutes": Metric("Minutes of call priced by prices.call_minute", "min", source=_COSTS),
    "call_minutes_cost_usd": Metric("Call minutes at the target's price per minute", "USD", source=_COSTS),
    "tts_characters": Metric("Characters the run sent to TTS engines", "count", source=_COSTS),
    "stt_seconds": Metric("Seconds of audio the run sent to STT engines", "s", source=_COSTS),
    "local_speech_cpu_s": Metric(
        "CPU seconds local speech engines (piper, espeak, whisper) spent on the run's requests",
        "s",
        source=_COSTS,
    ),
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


_Series = Callable[["Transcript"], list[float]]
_Step = tuple[str, "Compute | None", "_Series | None", list[tuple[str, int]]]
"""A plain metric (name, compute, None, []) or a series with its statistics' metrics
("", None, series, [(name, where the statistic is in ``_STATS``), ...])."""
_plan: tuple[list[str], list[Metric], list[_Step]] | None = None


def _compute_plan() -> list[_Step]:
    """The table as steps, each series once with all its statistics, made again only when the
    table changed."""
    global _plan
    names, metrics = list(METRICS), list(METRICS.values())
    if _plan is not None and _plan[0] == names and _plan[1] == metrics:  # identity first: cheap
        return _plan[2]
    steps: list[_Step] = []
    by_series: dict[_Series, list[tuple[str, int]]] = {}
    for name, metric in METRICS.items():
        if metric.compute is None:
            continue
        if metric.series is not None and metric.stat in _STATS:
            wanted = by_series.get(metric.series)
            if wanted is None:
                wanted = by_series[metric.series] = []
                steps.append(("", None, metric.series, wanted))
            wanted.append((name, _STATS.index(metric.stat)))
        else:
            steps.append((name, metric.compute, None, []))
    _plan = (names, metrics, steps)
    return steps


def compute_metrics(transcript: Transcript) -> dict[str, float]:
    """Every computed metric that has a value in this run (recorded ones are left to their source).

    Each per-turn series is read once for all its statistics, and the built-in ones in one pass
    over the turns (this runs once per run).
    """
    out: dict[str, float] = {}
    timings: tuple[list[float], list[float], list[float]] | None = None
    for name, compute, series, wanted in _compute_plan():
        if series is None:
            value = compute(transcript)  # type: ignore[misc]
            if value is not None:
                out[name] = float(value)
            continue
        slot = _ONE_PASS.get(series)
        if slot is None:
            values = series(transcript)
        else:
            if timings is None:
                timings = _timings(transcript)
            values = timings[slot]
        if values:
            stats = _stats(values)
            for metric_name, at in wanted:
                out[metric_name] = float(stats[at])
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
