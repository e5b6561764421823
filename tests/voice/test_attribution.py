"""Why a call failed: the agent misheard the caller, tamesu misheard the agent, or the agent was wrong."""

from __future__ import annotations

import pytest

from tamesu.kernel.events import VoiceCall, VoiceTurn
from tamesu.kernel.transcript import Transcript, Turn
from tamesu.voice.attribution import differs_materially, failure_cause

pytestmark = pytest.mark.unit

SAID = "Hi! Can I return shoes I bought 40 days ago?"


def call(*, caller_heard: str | None = None, stt: str | None = None, own: str | None = None) -> Transcript:
    t = Transcript(
        turns=[
            Turn(role="agent", text="Hi! You have reached Mochi Shoes.", index=1),
            Turn(role="user", text=SAID, index=1),
            Turn(role="agent", text=stt or own or "", index=2),
        ]
    )
    t.events = [
        VoiceCall(),
        VoiceTurn(
            turn=1,
            stt="Hi, you have reached Mochi Shoes.",
            agent_transcript="Hi! You have reached Mochi Shoes.",
        ),
        VoiceTurn(turn=2, caller_heard=caller_heard, stt=stt, agent_transcript=own),
    ]
    return t


def test_a_number_the_agent_misheard_marks_the_failure_heard_differently() -> None:
    assert (
        failure_cause(call(caller_heard="Hi, can I return shoes I bought 14 days ago?"))
        == "heard_differently"
    )


def test_tamesus_stt_of_the_agent_differing_from_its_words_marks_tamesu_heard_differently() -> None:
    t = call(caller_heard="Hi, can I return shoes I bought 40 days ago?", stt="Sorry, returns in 13 days.",
             own="Sorry, returns are accepted within 30 days.")  # fmt: skip
    assert failure_cause(t) == "tamesu_heard_differently"


def test_when_everyone_heard_right_the_failure_is_the_agents() -> None:
    t = call(caller_heard="hi can i return shoes i bought 40 days ago", stt="You can still return them.",
             own="You can still return them!")  # fmt: skip
    assert failure_cause(t) == "agent"
    assert failure_cause(Transcript(turns=[Turn(role="user", text="hi")])) is None  # not a call


def test_material_means_a_quarter_of_the_words_or_a_number() -> None:
    assert not differs_materially("Where is my order?", "where is my order")
    assert not differs_materially("Can I return the shoes I bought?", "Can I return shoes I bought?")
    assert differs_materially("order ORD-1001", "order ORD-1010")
    assert differs_materially("Where is my order?", "Wear this mine odor?")
