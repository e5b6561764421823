"""The voice target's protocol options against a real voice-websocket agent on loopback."""

from __future__ import annotations

import asyncio

import pytest

from tamesu.errors import TargetError
from tamesu.kernel.messages import AgentTurn, RawResponse, ToolCall, UserTurn
from tamesu.targets.voice.adapter import frame_template
from tamesu.templates import Scope

from ..voice.peers import AgentScript, Calls, calls, collect

__all__ = ["calls"]

pytestmark = [pytest.mark.integration, pytest.mark.timing, pytest.mark.virtual_time]

SAY = UserTurn(text="one two three")


async def test_open_close_headers_and_session_open(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.3))
    http = url.replace("ws://", "http://")
    phone = await calls.target(
        {
            "type": "voice",
            "url": f"{url}/voice?call={{{{session.call_id}}}}",
            "headers": {"Authorization": "Bearer {{secrets.TOKEN}}"},
            "session": {
                "open": {
                    "url": f"{http}/calls",
                    "body": {"tier": "{{vars.tier}}"},
                    "capture": {"call_id": "$.call_id"},
                }
            },
            "messages": {
                "open": {"type": "start", "call_id": "{{session.call_id}}"},
                "close": {"type": "hangup"},
            },
            "idle": "400ms",
            "transcript_source": "agent",
        },
        secrets={"TOKEN": "tok-123"},
    )
    await collect(phone, SAY)
    await phone.stop()
    await asyncio.wait_for(agent.log.closed.wait(), 5)
    assert agent.opened == {"tier": "gold"}
    assert agent.log.headers["Authorization"] == "Bearer tok-123"
    assert agent.log.messages[0] == {"type": "start", "call_id": "c-42"}
    assert agent.log.messages[-1] == {"type": "hangup"}


async def test_json_frames_both_ways_and_mulaw(calls: Calls) -> None:
    agent, url = await calls.agent(
        AgentScript(greeting=None, delay=0.2, reply=0.5, json_frames=True, encoding="mulaw", rate=8000)
    )
    phone = await calls.target(
        {
            "type": "voice",
            "url": f"{url}/voice",
            "audio": {
                "encoding": "mulaw",
                "frames": "json",
                "send": {"user_audio_chunk": "{{audio}}"},
                "receive": "$[*].audio_event.audio_base_64",
            },
            "messages": {"transcript": "$[?(@.type=='transcript')].text"},
            "idle": "400ms",
        }
    )
    messages = await collect(phone, SAY)
    turn = messages[-1]
    assert isinstance(turn, AgentTurn)
    assert agent.log.caller_ends, "the agent heard the caller's JSON-framed mu-law audio"
    assert turn.first_audio_at is not None and turn.first_audio_at - (turn.sent_at or 0) < 0.5
    assert turn.text == "Returns are accepted within 30 days."
    raws = [m.body for m in messages if isinstance(m, RawResponse)]
    assert raws and not any("audio_event" in r for r in raws if isinstance(r, dict)), "audio stays out of raw"


async def test_tool_calls_and_the_end_of_the_call(calls: Calls) -> None:
    _, url = await calls.agent(
        AgentScript(
            greeting=None,
            delay=0.2,
            reply=0.3,
            end_after=1,
            tool_calls=[{"name": "lookup_policy", "args": {"topic": "returns"}}],
        )
    )
    phone = await calls.target(
        {
            "type": "voice",
            "url": f"{url}/voice",
            "messages": {
                "tool_calls": "$[?(@.type=='tool_calls')].calls[*]",
                "done": "$[?(@.type=='end')].type",
                "transcript": "$[?(@.type=='transcript')].text",
            },
            "idle": "400ms",
        }
    )
    messages = await collect(phone, SAY)
    calls_made = [m for m in messages if isinstance(m, ToolCall)]
    assert [(c.name, c.args) for c in calls_made] == [("lookup_policy", {"topic": "returns"})]
    turn = messages[-1]
    assert isinstance(turn, AgentTurn) and turn.done


def test_the_send_template_needs_audio_exactly_once() -> None:
    scope = Scope({"session": "s-1"})
    prefix, suffix = frame_template({"type": "audio", "session": "{{session}}", "chunk": "{{audio}}"}, scope)
    assert prefix + "QUJD" + suffix == '{"type": "audio", "session": "s-1", "chunk": "QUJD"}'
    with pytest.raises(TargetError, match="exactly once"):
        frame_template({"type": "audio"}, scope)
