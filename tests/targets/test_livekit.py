"""The livekit target with the real ``livekit`` SDK on both sides, against the loopback LiveKit server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("livekit.rtc")
pytest.importorskip("aiortc")

from tamesu.errors import TargetError
from tamesu.kernel.messages import AgentTurn, Dtmf, RawResponse, UserTurn
from tamesu.testing.livekit_agents import AgentLog, text_agent
from tamesu.testing.livekit_server import LivekitServer, serve_livekit_server

from ..voice.peers import Calls, calls, collect

__all__ = ["calls"]

pytestmark = [pytest.mark.integration]


@pytest.fixture
async def server() -> AsyncIterator[LivekitServer]:
    async with serve_livekit_server() as s:
        yield s


def room_config(server: LivekitServer, **extra: Any) -> dict[str, Any]:
    return {
        "type": "livekit",
        "url": server.url,
        "api_key": "{{secrets.LK_KEY}}",
        "api_secret": "{{secrets.LK_SECRET}}",
        "join_timeout": "20s",
        **extra,
    }


def keys(server: LivekitServer) -> dict[str, str]:
    return {"LK_KEY": server.api_key, "LK_SECRET": server.api_secret}


async def test_a_dispatched_text_agent_answers_over_lk_chat(server: LivekitServer, calls: Calls) -> None:
    log = AgentLog()
    server.register_agent("support-agent", text_agent(lambda t: f"About {t}: 30 days.", log=log))
    target = await calls.target(
        room_config(
            server, dispatch={"agent_name": "support-agent"}, room="shop-{{session}}", identity="web-user-9"
        ),
        secrets=keys(server),
        turn_timeout=20,
    )
    turn = await collect(target, UserTurn(text="returns"))
    last = turn[-1]
    assert isinstance(last, AgentTurn) and last.text == "About returns: 30 days."
    assert last.first_byte_at is not None and last.sent_at is not None and last.first_byte_at >= last.sent_at
    assert log.heard == ["returns"]
    room = server.rooms["shop-sess-1"]
    assert "web-user-9" in room.members
    assert [d.agent_name for d in server.dispatches["shop-sess-1"]] == ["support-agent"]
    second = (await collect(target, UserTurn(text="exchanges")))[-1]
    assert isinstance(second, AgentTurn) and second.text == "About exchanges: 30 days."
    assert server.problems == []


async def test_an_agent_answering_with_data_packets_is_heard_too(server: LivekitServer, calls: Calls) -> None:
    server.register_agent("", text_agent(lambda t: '{"message": "packet reply"}', as_packets=True))
    target = await calls.target(room_config(server), secrets=keys(server), turn_timeout=20)
    last = (await collect(target, UserTurn(text="hi")))[-1]
    assert isinstance(last, AgentTurn) and last.text == "packet reply"


async def test_dtmf_goes_as_sip_dtmf_packets_and_the_agents_digits_come_back(
    server: LivekitServer, calls: Calls
) -> None:
    log = AgentLog()
    server.register_agent("", text_agent(log=log))
    target = await calls.target(room_config(server), secrets=keys(server), turn_timeout=20)
    messages = await collect(target, UserTurn(text="", data={"dtmf": "2#"}))
    assert Dtmf(digits="2#", direction="sent", at=messages[0].at) == messages[0]
    received = [m.digits for m in messages if isinstance(m, Dtmf) and m.direction == "received"]
    while len(received) < 2:  # the echoes may straddle the turn's end
        received += [
            m.digits
            for m in await collect(target, UserTurn(text="again"))
            if isinstance(m, Dtmf) and m.direction == "received"
        ]
    assert received[:2] == ["2", "#"] and log.digits == ["2", "#"]
    assert [
        p.sip_dtmf.digit for p in server.rooms[next(iter(server.rooms))].data_log if p.HasField("sip_dtmf")
    ][:2] == ["2", "#"]


async def test_an_agent_recognised_by_identity_prefix(server: LivekitServer, calls: Calls) -> None:
    server.register_agent("", text_agent())
    target = await calls.target(
        room_config(server, agent_identity_prefix="agent-"), secrets=keys(server), turn_timeout=20
    )
    assert isinstance((await collect(target, UserTurn(text="x")))[-1], AgentTurn)
    assert target.link.agent.identity.startswith("agent-")


async def test_no_agent_within_join_timeout_is_a_retryable_error(server: LivekitServer, calls: Calls) -> None:
    with pytest.raises(TargetError, match=r"no agent .* joined room") as err:
        await calls.target(room_config(server, join_timeout="300ms"), secrets=keys(server))
    assert err.value.retryable


async def test_a_bad_secret_is_refused_and_never_shown(server: LivekitServer, calls: Calls) -> None:
    with pytest.raises(TargetError) as err:
        await calls.target(
            room_config(server), secrets={"LK_KEY": server.api_key, "LK_SECRET": "wrong-secret-value"}
        )
    assert "wrong-secret-value" not in str(err.value) and "could not join" in str(err.value)


async def test_a_ready_token_is_used_as_it_is(server: LivekitServer, calls: Calls) -> None:
    server.register_agent("", text_agent())
    token = server.token("token-user", "token-room")
    target = await calls.target(
        {"type": "livekit", "url": server.url, "token": "{{secrets.TOKEN}}", "room": "token-room"},
        secrets={"TOKEN": token},
        turn_timeout=20,
    )
    assert isinstance((await collect(target, UserTurn(text="x")))[-1], AgentTurn)
    assert "token-user" in server.rooms["token-room"].members


async def test_the_agent_leaving_ends_the_conversation(server: LivekitServer, calls: Calls) -> None:
    server.register_agent("", text_agent(lambda t: "bye"))
    target = await calls.target(room_config(server), secrets=keys(server), turn_timeout=20)
    await collect(target, UserTurn(text="hello"))
    room = next(iter(server.rooms.values()))
    agent = next(i for i in room.members if i.startswith("agent-"))
    assert await room.remove(agent)
    last = (await collect(target, None))[-1]
    assert isinstance(last, AgentTurn) and last.done
    with pytest.raises(TargetError, match="ended"):
        await collect(target, UserTurn(text="still there?"))


async def test_text_that_is_not_utf8_becomes_a_recorded_error(server: LivekitServer, calls: Calls) -> None:
    async def broken(job: Any) -> None:
        from livekit import rtc

        room = rtc.Room()
        room.register_text_stream_handler(
            "lk.chat",
            lambda r, _w: asyncio.ensure_future(
                room.local_participant.publish_data(b"\xff\xfe", topic="lk.chat")
            ),
        )
        await room.connect(job.url, job.token)
        left = asyncio.Event()
        room.on("participant_disconnected", lambda *_: left.set())
        await left.wait()
        await room.disconnect()

    server.register_agent("", broken)
    target = await calls.target(room_config(server), secrets=keys(server), turn_timeout=3)
    messages: list[Any] = []
    with pytest.raises(TargetError, match="no answer"):
        async for msg in target.turn(UserTurn(text="hi")):
            messages.append(msg)
    errors = [m.body.get("error") for m in messages if isinstance(m, RawResponse)]
    assert "a data packet that is not UTF-8" in errors
