from __future__ import annotations

import pytest

from tamesu.kernel.transcript import ToolCallRecord, Transcript, Turn
from tamesu.metrics import (
    ALIASES,
    METRICS,
    compute_metrics,
    metric_value,
    metrics_markdown,
    percentile,
    resolve_metric,
    shown_metrics,
)

pytestmark = pytest.mark.unit


def _timed() -> Transcript:
    """Four exchanges with latencies 100, 200, 300 and 1000 ms (the last one on a voice line)."""
    turns: list[Turn] = []
    for i, (latency, length) in enumerate([(0.1, 0.5), (0.2, 0.5), (0.3, 1.0), (1.0, 1.0)]):
        sent = 10.0 * i
        turns.append(Turn(role="user", text="q", index=i + 1, sent_at=sent))
        first = sent + latency
        audio = {"first_audio_at": first} if i == 3 else {"first_byte_at": first}
        calls = [ToolCallRecord(name="lookup")] if i == 0 else []
        turns.append(
            Turn(role="agent", text="a", index=i + 1, end_at=first + length, tool_calls=calls, **audio)
        )
    return Transcript(turns=turns, duration=42.5)


def test_percentile_linear_interpolation() -> None:
    assert percentile([], 50) is None
    assert percentile([7.0], 95) == 7.0
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert percentile([100, 200, 300, 1000], 95) == pytest.approx(895.0)
    assert percentile([3, 1, 2], 0) == 1 and percentile([3, 1, 2], 100) == 3


def test_compute_metrics_on_known_timings() -> None:
    m = compute_metrics(_timed())
    assert m["turns"] == 4 and m["user_turns"] == 4 and m["tool_calls"] == 1
    assert m["duration_s"] == 42.5 and m["duration_ms"] == 42500
    assert m["turn_latency_ms_p50"] == pytest.approx(250.0)
    assert m["turn_latency_ms_p95"] == pytest.approx(895.0)
    assert m["turn_latency_ms_max"] == pytest.approx(1000.0)
    assert m["turn_latency_ms_mean"] == pytest.approx(400.0)
    assert m["response_ms_max"] == pytest.approx(2000.0)
    assert m["time_to_first_audio_ms_max"] == pytest.approx(1000.0)
    assert "llm_cost_usd" not in m


def test_latency_from_the_agent_turns_own_sent_time() -> None:
    t = Transcript(turns=[Turn(role="agent", text="hi", sent_at=1.0, first_byte_at=1.25)])
    assert compute_metrics(t)["turn_latency_ms_p95"] == pytest.approx(250.0)


def test_metrics_of_an_empty_run() -> None:
    m = compute_metrics(Transcript())
    assert m == {"turns": 0, "user_turns": 0, "tool_calls": 0}
    assert metric_value(Transcript(), "turn_latency_ms_p95") is None
    assert metric_value(Transcript(), "interruptions") is None
    assert metric_value(Transcript(), "llm_cost_usd") == 0.0


def test_metric_value_reads_recorded_and_aliases() -> None:
    t = _timed()
    t.metrics = {"llm_cost_usd": 0.02, "turn_latency_ms_p95": 1.0}
    assert metric_value(t, "llm_cost_usd") == 0.02
    assert metric_value(t, "turn_latency_p95_ms") == 1.0
    assert metric_value(t, "turn_latency_ms_p50") == pytest.approx(250.0)
    with pytest.raises(KeyError):
        metric_value(t, "nope")


def test_aliases_point_into_the_table() -> None:
    assert resolve_metric("turn_latency_p95_ms") == "turn_latency_ms_p95"
    assert resolve_metric("turn_latency_ms_p95") == "turn_latency_ms_p95"
    assert resolve_metric("latency") is None
    assert all(target in METRICS for target in ALIASES.values())


def test_markdown_lists_every_metric() -> None:
    text = metrics_markdown()
    assert all(f"`{name}`" in text for name in METRICS)
    assert "recorded by model calls" in text


def test_compact_markdown_groups_the_percentile_series() -> None:
    text = metrics_markdown(compact=True)
    assert "`turn_latency_ms_{p50/p90/p95/p99/max/mean}`" in text
    assert "`turn_latency_ms_p95`" not in text
    assert "`silence_ms_max`" in text and "`llm_cost_usd`" in text


def test_a_report_shows_a_one_turn_series_as_one_value_and_a_longer_one_in_full() -> None:
    one = Transcript(turns=[Turn(role="agent", text="hi", sent_at=1.0, first_byte_at=1.25)])
    shown = shown_metrics(compute_metrics(one))
    assert shown["turn_latency_ms"] == pytest.approx(250.0)
    assert not [name for name in shown if name.startswith("turn_latency_ms_")]
    four = shown_metrics(compute_metrics(_timed()))
    assert "turn_latency_ms" not in four and four["turn_latency_ms_p95"] == pytest.approx(895.0)
