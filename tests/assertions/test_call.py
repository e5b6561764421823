"""call_ended_by and transferred_to, on transcripts as the sip target records them."""

from __future__ import annotations

import pytest

from tamesu.kernel.events import CallEnded, CallTransferred

from .builders import convo
from .conftest import Check

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("events", "end_reason", "got"),
    [
        ([CallEnded(by="busy", detail="486 Busy Here")], "agent", "busy"),
        ([CallEnded(by="no_answer")], "agent", "no_answer"),
        ([CallEnded(by="timeout")], "agent", "timeout"),
        ([], "agent", "agent"),
        ([], "done", "caller"),
        ([], "max_turns", "caller"),
        ([], "timeout", "timeout"),
        ([], "error", "error"),
    ],
)
async def test_a_calls_end_is_its_call_ended_event_else_the_runs_end(
    check: Check, events: list[CallEnded], end_reason: str, got: str
) -> None:
    transcript = convo("agent: hello", events=list(events), end_reason=end_reason)
    result = await check({"call_ended_by": [got]}, transcript)
    assert result.passed and result.actual == got
    others = [r for r in ("agent", "caller", "timeout", "error", "no_answer", "busy") if r != got]
    failed = await check({"call_ended_by": others}, transcript)
    assert not failed.passed and f"the call ended by {got}" in failed.message


async def test_a_single_reason_reads_as_a_list(check: Check) -> None:
    transcript = convo("agent: bye", end_reason="agent")
    assert (await check({"call_ended_by": "agent"}, transcript)).passed


async def test_transferred_to_matches_the_refer_target(check: Check) -> None:
    transcript = convo("agent: transferring", events=[CallTransferred(to="sip:billing@pbx.example")])
    assert (await check({"transferred_to": {"matches": "^sip:billing@"}}, transcript)).passed
    failed = await check({"transferred_to": {"matches": "^sip:sales@"}}, transcript)
    assert not failed.passed and "sip:billing@pbx.example" in failed.message


async def test_a_call_never_transferred_fails_transferred_to(check: Check) -> None:
    failed = await check({"transferred_to": {"matches": "."}}, convo("agent: hi"))
    assert not failed.passed and failed.message.startswith("the call was not transferred")
