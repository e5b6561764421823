from __future__ import annotations

import pytest

from .builders import agent, convo
from .conftest import Check

pytestmark = pytest.mark.unit

RUN = convo(
    "user: hi",
    agent("Hello", raw=[{"reply": "Hello", "status": "open", "count": 1}], status=200),
    "user: bye",
    agent("Bye", raw=[{"reply": "Bye", "status": "closed", "end_session": True, "count": 2.0}], status=200),
)


async def test_json_path_exists_in_some_turn(check: Check) -> None:
    assert (await check({"json_path": {"path": "$.end_session"}}, RUN)).passed
    missing = await check({"json_path": {"path": "$.order.id"}}, RUN)
    assert not missing.passed and "not in any of 2 response(s)" in missing.message


async def test_json_path_equals_some_match(check: Check) -> None:
    assert (await check({"json_path": {"path": "$.status", "equals": "closed"}}, RUN)).passed
    assert (await check({"json_path": {"path": "$.count", "equals": 2}}, RUN)).passed
    wrong = await check({"json_path": {"path": "$.status", "equals": "refunded"}}, RUN)
    assert not wrong.passed and wrong.actual == ["open", "closed"]
    assert "(turn 1)" in wrong.message


async def test_json_path_compares_json_values_exactly(check: Check) -> None:
    assert not (await check({"json_path": {"path": "$.end_session", "equals": "true"}}, RUN)).passed
    assert not (await check({"json_path": {"path": "$.count", "equals": True}}, RUN)).passed
    assert (await check({"json_path": {"path": "$.end_session", "equals": True}}, RUN)).passed


async def test_json_path_equals_null_is_a_value(check: Check) -> None:
    run = convo(agent(raw=[{"error": None}]))
    assert (await check({"json_path": {"path": "$.error", "equals": None}}, run)).passed
    assert not (await check({"json_path": {"path": "$.status", "equals": None}}, run)).passed


async def test_json_path_on_one_turn(check: Check) -> None:
    first = convo(RUN.agent_turns()[0])
    assert not (await check({"json_path": {"path": "$.end_session"}, "on_turn": 1}, first)).passed


async def test_json_path_without_raw_responses(check: Check) -> None:
    result = await check({"json_path": {"path": "$.x"}}, convo("agent: hi"))
    assert not result.passed and "no raw responses" in result.message


async def test_status_every_turn(check: Check) -> None:
    assert (await check({"status": 200}, RUN)).passed
    mixed = convo(agent("a", status=200), agent("b"), agent("c", status=503))
    result = await check({"status": 200}, mixed)
    assert not result.passed and result.actual == [200, 503]
    assert result.message == "turn 3 answered 503, expected 200"


async def test_status_without_any_status(check: Check) -> None:
    result = await check({"status": 200}, convo("agent: hi"))
    assert not result.passed and "no agent turn has an HTTP status" in result.message
