from __future__ import annotations

import tracemalloc

import pytest

from tamesu.kernel.transcript import Transcript, Turn

from .builders import convo
from .conftest import Check

pytestmark = pytest.mark.unit

REFUND = convo(
    "user: Can I return shoes after 40 days?",
    "agent: Our return   window is\n30 Days from delivery.",
    "user: And a refund?",
    "agent: Refunds go back to the original card within five days.",
)


async def test_contains_ignores_case_and_whitespace(check: Check) -> None:
    result = await check({"contains": "return window is 30 days"}, REFUND)
    assert result.passed and result.kind == "contains" and result.name == "contains"


async def test_contains_failure_shows_the_closest_turn(check: Check) -> None:
    result = await check({"contains": "refunds go back to the gift card"}, REFUND)
    assert not result.passed and not result.error
    assert result.actual.startswith("turn 2: Refunds go back")
    assert result.message == "not in any of 2 agent turn(s); the closest is turn 2"


async def test_contains_with_no_agent_turn_fails(check: Check) -> None:
    result = await check({"contains": "hello"}, convo("user: hi"))
    assert not result.passed and "no agent turn" in result.message


async def test_not_contains_names_the_turn_and_a_snippet(check: Check) -> None:
    result = await check({"not_contains": "ORIGINAL card"}, REFUND)
    assert not result.passed
    assert result.actual.startswith("turn 2: ")
    assert "original card" in result.actual


async def test_not_contains_passes(check: Check) -> None:
    assert (await check({"not_contains": "90 days"}, REFUND)).passed


async def test_regex_is_case_sensitive_unless_flagged(check: Check) -> None:
    assert not (await check({"regex": "30 days"}, REFUND)).passed
    result = await check({"regex": r"(?i)30\s+days"}, REFUND)
    assert result.passed and result.actual == "30 Days"


async def test_regex_failure_shows_the_transcript(check: Check) -> None:
    result = await check({"regex": r"\bORD-\d+"}, REFUND)
    assert not result.passed and "Refunds go back" in result.actual


async def test_not_regex(check: Check) -> None:
    ok = await check({"not_regex": r"\b\d{16}\b"}, REFUND)
    assert ok.passed
    bad = await check({"not_regex": r"five \w+"}, REFUND)
    assert not bad.passed and bad.actual.startswith("turn 2:") and "five days" in bad.actual


async def test_bad_regex_is_an_evaluation_error(check: Check) -> None:
    result = await check({"regex": "(unclosed"}, REFUND)
    assert result.error and "bad regular expression" in result.message


async def test_single_turn_transcript_as_on_turn_gives_it(check: Check) -> None:
    last = convo("agent: Goodbye and thanks!")
    assert (await check({"contains": "goodbye", "on_turn": "last"}, last)).passed
    assert not (await check({"contains": "return window", "on_turn": "last"}, last)).passed


async def test_a_failing_contains_on_a_huge_reply_costs_little_more_than_the_reply(check: Check) -> None:
    size = 4_000_000
    huge = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    turns = [Turn(role="agent", text=huge), Turn(role="agent", text="the refund window is 30 days")]
    tracemalloc.start()
    try:
        result = await check({"contains": "refund window is 90 days"}, Transcript(turns=turns))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not result.passed and result.actual == "turn 2: the refund window is 30 days"
    assert peak < 3 * size, f"{peak / 1e6:.0f} MB to fail on a {size / 1e6:.0f} MB reply"
    long_miss = await check({"contains": "zzz"}, Transcript(turns=turns[:1]))
    assert long_miss.actual.startswith("turn 1: lorem ipsum") and long_miss.actual.endswith("…")
    assert len(long_miss.actual) < 260
