from __future__ import annotations

import pytest

from tamesu.assertions.tools import is_subsequence

from .builders import agent, call, convo
from .conftest import Check

pytestmark = pytest.mark.unit

RUN = convo(
    "user: Move my booking to Saturday",
    agent("Let me check.", tool_calls=[call("lookup_order", id="ORD-1", options={"full": True, "depth": 2})]),
    agent(
        "Done.",
        tool_calls=[call("reschedule_booking", day="saturday", slots=[1, 2]), call("end_session")],
    ),
)


async def test_tool_called_by_name_short_form(check: Check) -> None:
    assert (await check({"tool_called": "reschedule_booking"}, RUN)).passed


async def test_tool_called_missing_lists_the_calls(check: Check) -> None:
    result = await check({"tool_called": "issue_refund"}, RUN)
    assert not result.passed
    assert "never called" in result.message and "lookup_order" in result.message


async def test_tool_called_args_are_a_subset(check: Check) -> None:
    assert (
        await check({"tool_called": {"name": "lookup_order", "args": {"options": {"full": True}}}}, RUN)
    ).passed
    assert (
        await check({"tool_called": {"name": "lookup_order", "args": {"options": {"depth": 2.0}}}}, RUN)
    ).passed
    assert (
        await check({"tool_called": {"name": "reschedule_booking", "args": {"slots": [1, 2]}}}, RUN)
    ).passed


@pytest.mark.parametrize(
    "args",
    [{"day": "Saturday"}, {"slots": [1]}, {"day": "saturday", "room": 1}, {"slots": [True, 2]}],
)
async def test_tool_called_args_mismatch(check: Check, args: dict[str, object]) -> None:
    result = await check({"tool_called": {"name": "reschedule_booking", "args": args}}, RUN)
    assert not result.passed and "never with args" in result.message


async def test_tool_called_schema_every_call(check: Check) -> None:
    schema = {"type": "object", "required": ["day"], "properties": {"day": {"enum": ["saturday", "sunday"]}}}
    assert (await check({"tool_called": {"name": "reschedule_booking", "schema": schema}}, RUN)).passed
    twice = convo(
        agent(tool_calls=[call("reschedule_booking", day="sunday")]),
        agent(tool_calls=[call("reschedule_booking", day="monday")]),
    )
    result = await check({"tool_called": {"name": "reschedule_booking", "schema": schema}}, twice)
    assert not result.passed
    assert result.message.startswith("call 2 of reschedule_booking: args.day:")
    assert "monday" in result.message


async def test_tool_not_called(check: Check) -> None:
    assert (await check({"tool_not_called": "issue_refund"}, RUN)).passed
    result = await check({"tool_not_called": "end_session"}, RUN)
    assert not result.passed and result.actual == [{"name": "end_session", "args": {}}]


async def test_tool_not_called_with_args(check: Check) -> None:
    assert (
        await check({"tool_not_called": {"name": "reschedule_booking", "args": {"day": "sunday"}}}, RUN)
    ).passed
    assert not (
        await check({"tool_not_called": {"name": "reschedule_booking", "args": {"day": "saturday"}}}, RUN)
    ).passed


async def test_tool_sequence_subsequence_and_exact(check: Check) -> None:
    assert (await check({"tool_sequence": {"calls": ["lookup_order", "end_session"]}}, RUN)).passed
    wrong_order = await check({"tool_sequence": {"calls": ["end_session", "lookup_order"]}}, RUN)
    assert not wrong_order.passed
    assert wrong_order.actual == ["lookup_order", "reschedule_booking", "end_session"]
    assert "called: lookup_order -> reschedule_booking -> end_session" in wrong_order.message
    exact = {"calls": ["lookup_order", "reschedule_booking", "end_session"], "exact": True}
    assert (await check({"tool_sequence": exact}, RUN)).passed
    assert not (
        await check({"tool_sequence": {"calls": ["lookup_order", "end_session"], "exact": True}}, RUN)
    ).passed


def test_is_subsequence() -> None:
    assert is_subsequence(["a", "c"], ["a", "b", "c"])
    assert not is_subsequence(["a", "a"], ["a", "b"])
    assert is_subsequence([], [])
