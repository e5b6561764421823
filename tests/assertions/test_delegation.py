"""``delegated_to`` reads the messages the remote agents recorded in the transcript."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from tamesu.kernel.events import RemoteMessage
from tamesu.kernel.transcript import Transcript

from .conftest import Check

pytestmark = pytest.mark.unit


def remote(
    agent: str, text: str, direction: Literal["received", "replied"] = "received", **extra: Any
) -> RemoteMessage:
    return RemoteMessage(at=1.0, agent=agent, direction=direction, text=text, **extra)


RUN = Transcript(
    events=[
        remote("billing", "Please refund order ORD-1001", data=[{"order": "ORD-1001", "amount": 42}]),
        remote("billing", "Refund of 42 euros issued", "replied"),
        remote("shipping", "Where is parcel P-7?"),
    ]
)


async def test_a_message_to_the_agent_passes_by_name_alone(check: Check) -> None:
    assert (await check({"delegated_to": "billing"}, RUN)).passed
    assert (await check({"delegated_to": {"agent": "shipping"}}, RUN)).passed


async def test_no_message_to_the_agent_fails_and_names_those_that_were_messaged(check: Check) -> None:
    result = await check({"delegated_to": "loyalty"}, RUN)
    assert not result.passed
    assert result.message == "the agent sent no message to loyalty (it messaged billing, shipping)"
    silent = await check({"delegated_to": "billing"}, Transcript())
    assert not silent.passed and silent.message == "the agent sent no message to billing"


async def test_contains_is_forgiving_and_regex_is_exact(check: Check) -> None:
    assert (await check({"delegated_to": {"agent": "billing", "contains": "REFUND   order"}}, RUN)).passed
    assert (await check({"delegated_to": {"agent": "billing", "regex": r"ORD-\d{4}"}}, RUN)).passed
    wrong = await check({"delegated_to": {"agent": "billing", "regex": r"(?-i:REFUND)"}}, RUN)
    assert not wrong.passed and "matches none of 1 message(s) to billing" in wrong.message


async def test_the_agents_replies_do_not_count_as_messages_to_it(check: Check) -> None:
    result = await check({"delegated_to": {"agent": "billing", "contains": "euros issued"}}, RUN)
    assert not result.passed
    assert result.message == "none of 1 message(s) to billing contains 'euros issued'"


async def test_data_parts_are_read_as_json(check: Check) -> None:
    assert (await check({"delegated_to": {"agent": "billing", "contains": '"amount": 42'}}, RUN)).passed
    assert not (await check({"delegated_to": {"agent": "shipping", "contains": "ORD-1001"}}, RUN)).passed
