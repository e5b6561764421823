"""What a load test counts: fault kinds, per-call samples, windows over time, and the gates."""

from __future__ import annotations

import pytest

from tamesu.errors import UsageError
from tamesu.kernel.outcome import RunResult
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.load import LoadProfile
from tamesu.load.gates import Gates, evaluate_gates, gates_for, series_stat
from tamesu.load.samples import CallSample, LoadStats, fault_kind, sample_of, window_rows

pytestmark = pytest.mark.unit


def result(
    outcome: str = "error", error: str | None = None, kind: str | None = "agent", **kw: object
) -> RunResult:
    return RunResult(
        run_id="t#1@0", test_id="t", test_name="t", suite="s", target="api", outcome=outcome,  # type: ignore[arg-type]
        error=error, error_kind=kind, **kw,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("error", "kind", "fault"),
    [
        ("connection refused at http://127.0.0.1:1/chat after 3 attempts", "agent", "refused"),
        ('agent answered 503 after 3 attempts: {"error": "boom"}', "agent", "http_5xx"),
        (
            "cannot connect to http://127.0.0.1:2/chat: Server disconnected after 3 attempts",
            "agent",
            "dropped",
        ),
        ("the answer from http://127.0.0.1:2/chat broke off: peer closed", "agent", "dropped"),
        ("no answer within 30s from http://127.0.0.1:2/chat", "agent", "timeout"),
        ("timed out after 5s", "timeout", "timeout"),
        ("the Ray worker running this run died: gone", "worker", "worker"),
        ("agent answered non-JSON (text/html): <html>", "agent", "agent"),
        ('agent answered 502 after 2 attempts: {"error": "upstream refused"}', "agent", "http_5xx"),
        ("agent answered 429 after 3 attempts", "agent", "http_429"),
        (
            "the agent at ws://127.0.0.1:3 refused the session (it closed the websocket with 1013 "
            "Try Again Later) after 3 attempts: it serves fewer sessions at once than tamesu opened",
            "agent",
            "refused",
        ),
        ("no response.done within 60s on ws://127.0.0.1:3", "agent", "timeout"),
        ("the realtime API closed the websocket mid-turn (code 1011)", "agent", "dropped"),
        ("cannot open a websocket at ws://x: invalid upgrade", "agent", "unreachable"),
    ],
)
def test_errors_are_sorted_into_fault_kinds(error: str, kind: str, fault: str) -> None:
    assert fault_kind(result(error=error, kind=kind)) == fault


def test_passed_and_failed_calls_have_no_fault() -> None:
    assert fault_kind(result("passed", kind=None)) is None
    assert fault_kind(result("failed", kind=None)) is None


def test_a_sample_keeps_each_turns_latencies_stamped_on_the_tests_clock() -> None:
    transcript = Transcript(
        turns=[
            Turn(role="user", text="hi", sent_at=0.5),
            Turn(role="agent", text="a", sent_at=0.5, first_byte_at=0.6, end_at=0.9),
            Turn(role="user", text="more", sent_at=1.0),
            Turn(role="agent", text="b", first_byte_at=1.2, first_audio_at=1.3, end_at=2.0),
        ]
    )
    s = sample_of(3, result("passed", kind=None), transcript, start=10.0, end=12.5)
    assert (s.index, s.outcome, s.fault, s.start, s.end) == (3, "passed", None, 10.0, 12.5)
    assert s.turn_latency_ms == [(10.5, pytest.approx(100.0)), (11.0, pytest.approx(300.0))]
    assert s.response_ms == [(10.5, pytest.approx(400.0)), (11.0, pytest.approx(1000.0))]
    assert s.time_to_first_audio_ms == [(11.0, pytest.approx(300.0))]


def sample(
    index: int,
    outcome: str,
    end: float,
    latency: float | None = None,
    *,
    final: bool = True,
    fault: str | None = None,
) -> CallSample:
    lat = [(end - 0.1, latency)] if latency is not None else []
    return CallSample(
        index=index, run_id=f"t@{index}", test_id="t", start=end - 1, end=end, outcome=outcome,
        final=final, fault=fault, turn_latency_ms=lat,
    )  # fmt: skip


def test_windows_split_calls_and_latencies_by_time() -> None:
    samples = [
        sample(0, "passed", 0.5, 100),
        sample(1, "error", 0.8, fault="http_5xx", final=False),
        sample(1, "passed", 1.5, 300),
        sample(2, "failed", 1.7, 500),
    ]
    rows = window_rows(samples, 1.0)
    assert [(r["start"], r["calls"], r["outcomes"], r["faults"]) for r in rows] == [
        (0.0, 1, {"passed": 1}, {"http_5xx": 1}),
        (1.0, 2, {"passed": 1, "failed": 1}, {}),
    ]
    assert rows[1]["turn_latency_ms"]["p50"] == pytest.approx(400.0)
    assert rows[1]["pass_rate"] == 0.5


def test_live_snapshot_counts_outcomes_faults_and_recent_percentiles() -> None:
    stats = LoadStats()
    for s in [
        sample(0, "passed", 1.0, 100),
        sample(1, "error", 2.0, fault="refused", final=False),
        sample(1, "passed", 3.0, 200),
    ]:
        stats.add(s)
    snap = stats.snapshot(4.0)
    assert (snap["finished"], snap["pass_rate"], snap["faults"], snap["retried"]) == (
        2,
        1.0,
        {"refused": 1},
        1,
    )
    assert snap["recent"]["turn_latency_ms"]["p50"] == pytest.approx(150.0)
    assert snap["calls_per_s"] == pytest.approx(0.5)
    later = stats.snapshot(100.0)
    assert later["recent"]["turn_latency_ms"]["p50"] is None
    assert later["calls_per_s"] == 0.0


def test_gates_default_to_the_pass_threshold_and_take_suite_slo_percentiles_only() -> None:
    gates = gates_for(
        LoadProfile.model_validate({"gates": {"slo": {"response_ms_p99": 900}}}),
        suite_slo={"turn_latency_p95_ms": 250, "llm_cost_usd": 0.05},
        pass_threshold=0.67,
    )
    assert (gates.pass_rate, gates.slo) == (0.67, {"turn_latency_p95_ms": 250.0, "response_ms_p99": 900.0})
    assert series_stat("turn_latency_p95_ms") == ("turn_latency_ms", "p95")
    assert series_stat("llm_cost_usd") is None
    with pytest.raises(UsageError, match="llm_cost_usd"):
        gates_for(LoadProfile.model_validate({"gates": {"slo": {"llm_cost_usd": 1}}}))


def test_without_a_profile_pass_rate_each_test_is_held_to_its_own_threshold() -> None:
    thresholds = {("s", "strict"): 1.0, ("s", "loose"): 0.5}
    gates = gates_for(LoadProfile.model_validate({}), thresholds=thresholds)
    assert (gates.pass_rate, gates.thresholds) == (None, thresholds)
    samples = [sample(i, "passed" if i % 4 else "failed", i + 1.0) for i in range(8)]
    for i, s in enumerate(samples):
        s.test_id, s.suite = ("strict" if i < 4 else "loose"), "s"
    got = [(g.name, g.passed, g.actual) for g in evaluate_gates(gates, samples)]
    assert got == [("pass_rate/strict", False, 0.75), ("pass_rate/loose", True, 0.75)]
    explicit = gates_for(LoadProfile.model_validate({"gates": {"pass_rate": 0.7}}), thresholds=thresholds)
    assert (explicit.pass_rate, explicit.thresholds) == (0.7, {})


def test_gates_pass_and_fail_on_the_final_calls() -> None:
    samples = [sample(i, "passed", i + 1.0, 100 + i) for i in range(9)]
    samples += [
        sample(9, "error", 10.0, fault="http_5xx", final=False),
        sample(9, "error", 11.0, fault="http_5xx"),
    ]
    results = evaluate_gates(
        Gates(pass_rate=0.9, error_rate=0.05, slo={"turn_latency_ms_max": 105.0}), samples
    )
    assert [(g.name, g.passed) for g in results] == [
        ("pass_rate", True),
        ("error_rate", False),
        ("slo/turn_latency_ms_max", False),
    ]
    assert results[0].actual == pytest.approx(0.9)
    assert results[2].actual == pytest.approx(108.0)
    empty = evaluate_gates(Gates(), [])
    assert [(g.name, g.passed, g.actual) for g in empty] == [("pass_rate", False, None)]


def test_drift_compares_the_last_window_with_the_first() -> None:
    samples = [sample(i, "passed", 1.0 + i, 100.0 * (1 + i // 5)) for i in range(10)]
    [drift] = [g for g in evaluate_gates(Gates(drift=1.5, window=5.0), samples) if g.name == "drift"]
    assert drift.actual == pytest.approx(2.0) and not drift.passed
    [ok] = [g for g in evaluate_gates(Gates(drift=2.5, window=5.0), samples) if g.name == "drift"]
    assert ok.passed


def test_agent_faults_count_retried_attempts_and_the_ending_error_once() -> None:
    from tamesu.wire.faults import AgentFaults

    faults = AgentFaults()
    faults.note_message("agent answered 503")
    faults.note_message("connection refused at http://127.0.0.1:1/chat")
    assert faults.total("agent answered 503 after 3 attempts: busy") == {"http_5xx": 2, "refused": 1}
    assert faults.total("agent answered non-JSON (text/html)") == {"http_5xx": 1, "refused": 1}
    assert faults.total(None) == faults.counts


def test_capacity_refusals_say_how_many_calls_the_target_held() -> None:
    from tamesu.load.samples import capacity_held

    full = result(error="agent answered 503 after 3 attempts: overloaded", kind="capacity")
    assert fault_kind(full) == "http_5xx", "the fault kinds stay those of the answer"
    samples = [
        sample_of(0, result("passed", kind=None), None, start=0, end=1, in_flight=3),
        sample_of(1, full, None, start=0, end=1, in_flight=3),
        sample_of(2, full, None, start=1, end=2, in_flight=2),
    ]
    assert capacity_held(samples) == {"refusals": 2, "held": 1}
    assert capacity_held(samples[:1]) is None
