from __future__ import annotations

import pytest

from tamesu.kernel.transcript import HandoffInfo, Turn

from .builders import convo
from .conftest import Check

pytestmark = pytest.mark.unit

THREE = convo("user: a", "agent: one", "user: b", "agent: two", "user: c", "agent: three")


@pytest.mark.parametrize(
    ("bounds", "ok"),
    [
        ({"lte": 3}, True),
        ({"lt": 3}, False),
        ({"eq": 3}, True),
        ({"gte": 2, "lt": 4}, True),
        ({"gt": 3}, False),
    ],
)
async def test_turns(check: Check, bounds: dict[str, int], ok: bool) -> None:
    result = await check({"turns": bounds}, THREE)
    assert result.passed is ok and result.actual == 3


async def test_turns_failure_message(check: Check) -> None:
    result = await check({"turns": {"gte": 2, "lt": 3}}, THREE)
    assert result.message == "3 agent turn(s), expected < 3 and >= 2"


CAPS = convo("agent: Your order is ORD-1001", captures={"order_id": "ORD-1001"})


async def test_captured_exists_equals_matches(check: Check) -> None:
    assert (await check({"captured": {"name": "order_id"}}, CAPS)).passed
    assert (await check({"captured": {"name": "order_id", "equals": "ORD-1001"}}, CAPS)).passed
    assert (await check({"captured": {"name": "order_id", "matches": "^ORD-[0-9]+$"}}, CAPS)).passed


async def test_captured_failures(check: Check) -> None:
    missing = await check({"captured": {"name": "ticket"}}, CAPS)
    assert not missing.passed and "captured: order_id" in missing.message
    wrong = await check({"captured": {"name": "order_id", "equals": "ORD-1002"}}, CAPS)
    assert not wrong.passed and wrong.actual == "ORD-1001"
    nomatch = await check({"captured": {"name": "order_id", "matches": "^TKT-"}}, CAPS)
    assert not nomatch.passed and "does not match" in nomatch.message


def _handed(
    turn: int, to: str | None = "billing", summary: str | None = "Order ORD-1001 arrived late"
) -> object:
    return convo(
        "agent: one", "agent: two", "agent: three", handoff=HandoffInfo(turn=turn, to=to, summary=summary)
    )


async def test_handoff_expected_and_not(check: Check) -> None:
    assert (await check({"handoff": True}, _handed(2))).passed
    assert not (await check({"handoff": True}, THREE)).passed
    assert (await check({"handoff": False}, THREE)).passed
    forbidden = await check({"handoff": {"expected": False}}, _handed(2))
    assert not forbidden.passed and forbidden.message == "the agent handed off to billing on turn 2"


async def test_handoff_within_turns_and_destination(check: Check) -> None:
    assert (await check({"handoff": {"within_turns": 3, "to": "^billing$"}}, _handed(3))).passed
    late = await check({"handoff": {"within_turns": 2}}, _handed(3))
    assert not late.passed and "later than turn 2" in late.message
    elsewhere = await check({"handoff": {"to": "^sales$"}}, _handed(1))
    assert not elsewhere.passed and "'billing'" in elsewhere.message
    unknown = await check({"handoff": {"to": "^billing$"}}, _handed(1, to=None))
    assert not unknown.passed and "unknown destination" in unknown.message


async def test_handoff_summary_contains(check: Check) -> None:
    assert (await check({"handoff": {"summary_contains": ["ord-1001", "LATE"]}}, _handed(1))).passed
    lacking = await check({"handoff": {"summary_contains": ["ORD-1001", "refund"]}}, _handed(1))
    assert not lacking.passed and "'refund'" in lacking.message
    no_summary = await check({"handoff": {"summary_contains": ["x"]}}, _handed(1, summary=None))
    assert not no_summary.passed and "(no summary)" in no_summary.message


async def test_handoff_summary_rubric_needs_a_model(check: Check) -> None:
    result = await check({"handoff": {"summary": "The summary names the order"}}, _handed(1))
    assert result.error and "needs a model" in result.message


TIMED = convo(
    Turn(role="user", text="a", sent_at=0.0),
    Turn(role="agent", text="one", first_byte_at=0.4, end_at=1.0),
    Turn(role="user", text="b", sent_at=2.0),
    Turn(role="agent", text="two", first_byte_at=3.0, end_at=3.5),
    duration=4.0,
)


async def test_metric_computed_and_alias(check: Check) -> None:
    assert (await check({"metric": {"name": "turn_latency_ms_max", "lt": 1001}}, TIMED)).passed
    assert (await check({"metric": {"name": "turn_latency_max_ms", "lt": 1001}}, TIMED)).passed
    slow = await check({"metric": {"name": "turn_latency_ms_max", "lt": 999}}, TIMED)
    assert not slow.passed and slow.actual == pytest.approx(1000.0)
    assert slow.expected == "turn_latency_ms_max < 999" and slow.message == ""


async def test_a_metric_value_is_reported_rounded(check: Check) -> None:
    measured = convo("agent: hi", metrics={"response_ms_p95": 1234.56789, "llm_cost_usd": 0.0123456789})
    slow = await check({"metric": {"name": "response_ms_p95", "lt": 1000}}, measured)
    costly = await check({"metric": {"name": "llm_cost_usd", "lt": 0.01}}, measured)
    assert (slow.actual, costly.actual) == (1234.57, 0.01235)


async def test_metric_prefers_recorded_values(check: Check) -> None:
    recorded = convo("agent: hi", metrics={"llm_cost_usd": 0.07, "turns": 9})
    assert not (await check({"metric": {"name": "llm_cost_usd", "lte": 0.05}}, recorded)).passed
    assert (await check({"metric": {"name": "turns", "eq": 9}}, recorded)).passed


async def test_metric_unknown_name_lists_known(check: Check) -> None:
    result = await check({"metric": {"name": "latency", "lt": 1}}, TIMED)
    assert result.error and "unknown metric 'latency'" in result.message
    assert "turn_latency_ms_p95" in result.message


async def test_metric_without_a_value_fails(check: Check) -> None:
    result = await check({"metric": {"name": "time_to_first_audio_ms_p95", "lt": 1500}}, TIMED)
    assert not result.passed and not result.error
    assert "has no value in this run" in result.message
    unrecorded = await check({"metric": {"name": "interruptions", "lt": 1}}, TIMED)
    assert not unrecorded.passed and not unrecorded.error


async def test_metric_of_model_spend_is_zero_without_model_calls(check: Check) -> None:
    result = await check({"metric": {"name": "llm_cost_usd", "lte": 0.05}}, TIMED)
    assert result.passed and result.actual == 0.0
