"""The sip target with trunk_id: the call placed through LiveKit's SIP API on the loopback LiveKit
server, whose trunk points at a SIP agent of our own (tamesu.testing.sip_agent) or at SIPp
scenarios; tamesu joins the room with the real livekit SDK and the SIP participant is the agent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("livekit.rtc")
pytest.importorskip("aiortc")

from livekit import api

from tamesu.config.project import LiveKitConfig, SipConfig
from tamesu.kernel.events import CallEnded
from tamesu.kernel.messages import AgentTurn, Dtmf, Event, UserTurn
from tamesu.testing.livekit_server import LivekitServer, serve_livekit_server
from tamesu.testing.sip_agent import SipVoiceAgent

from ..voice.peers import Calls, calls, collect
from .test_sip import needs_sipp, sipp

__all__ = ["calls", "sipp"]

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
async def server() -> AsyncIterator[LivekitServer]:
    async with serve_livekit_server() as s:
        yield s


@pytest.fixture
async def agent() -> AsyncIterator[SipVoiceAgent]:
    """The SIP voice agent in this process, speaking and hearing with the test engines."""
    phone = SipVoiceAgent(tts="test-vowel", stt="test-stt")
    await phone.start()
    yield phone
    await phone.close()


async def trunk_to(server: LivekitServer, port: int, *, tcp: bool = False) -> str:
    """A trunk created through the SIP API (the livekit-api client) that calls 127.0.0.1:port."""
    client = api.LiveKitAPI(server.url.replace("ws://", "http://"), server.api_key, server.api_secret)
    try:
        trunk = await client.sip.create_outbound_trunk(
            api.CreateSIPOutboundTrunkRequest(
                trunk=api.SIPOutboundTrunkInfo(
                    name="loopback",
                    address=f"127.0.0.1:{port}",
                    numbers=["+15550100"],
                    transport=api.SIPTransport.SIP_TRANSPORT_TCP
                    if tcp
                    else api.SIPTransport.SIP_TRANSPORT_AUTO,
                )
            )
        )
        listed = await client.sip.list_outbound_trunk(api.ListSIPOutboundTrunkRequest())
        assert [t.sip_trunk_id for t in listed.items][-1] == trunk.sip_trunk_id
    finally:
        await client.aclose()
    return str(trunk.sip_trunk_id)


async def phone(calls: Calls, server: LivekitServer, trunk: str | None, **config: Any) -> Any:
    lk = LiveKitConfig(url=server.url, api_key=server.api_key, api_secret="{{secrets.LK_SECRET}}")
    sip = SipConfig(outbound_trunk_id=trunk) if trunk and "trunk_id" not in config else None
    return await calls.target(
        {"type": "sip", "to": "+15550199", "from": "+15550100", "idle": "1s", **config},
        secrets={"LK_SECRET": server.api_secret},
        turn_timeout=20,
        livekit=lk,
        sip=sip,
    )


def ended(messages: list[Any]) -> list[tuple[str, str]]:
    return [
        (m.event.by, m.event.detail)
        for m in messages
        if isinstance(m, Event) and isinstance(m.event, CallEnded)
    ]


async def test_a_turn_is_heard_both_ways_and_a_digit_reaches_the_agent(
    server: LivekitServer, calls: Calls, agent: SipVoiceAgent
) -> None:
    trunk = await trunk_to(server, agent.ua.port, tcp=True)
    target = await phone(calls, server, trunk)  # sip.outbound_trunk_id
    [bridge] = server.sip.bridges
    member = server.rooms[target.trunk.room].members[target.trunk.identity]
    assert member.info.kind == 3 and member.info.attributes["sip.callStatus"] == "active"
    assert member.info.attributes["sip.phoneNumber"] == "+15550199"
    greeting = (await collect(target, None))[-1]
    assert isinstance(greeting, AgentTurn) and greeting.text.startswith(
        "heard "
    )  # its vowel, through the room
    assert greeting.first_audio_at is not None

    [line] = agent.calls
    assert line.call is not None
    digits: list[str] = []
    heard_digit = line.call.rtp.on_digit

    def pressed(digit: str) -> None:
        digits.append(digit)
        heard_digit(digit)

    line.call.rtp.on_digit = pressed
    answer = (await collect(target, UserTurn(text="where is my order please")))[-1]
    assert isinstance(answer, AgentTurn) and answer.text.startswith("heard ")  # it heard us, and answered
    keyed = await collect(target, UserTurn(data={"dtmf": "1"}))
    assert [m.digits for m in keyed if isinstance(m, Dtmf) and m.direction == "sent"] == ["1"]
    assert digits == ["1"]  # an RFC 4733 event on the agent's RTP
    assert isinstance(keyed[-1], AgentTurn) and keyed[-1].text.startswith("heard ")  # "You pressed 1 ..."
    await target.stop()
    await asyncio.wait_for(line.call.ended.wait(), 10)
    # the SIP participant removed at the end of the run: its side hung up (the agent's UA calls its
    # peer "agent"), with a BYE
    assert (line.call.end_reason, line.call.end_detail) == ("agent", "BYE")
    assert not server.problems
    assert bridge.call is None


@needs_sipp
async def test_a_busy_line_ends_the_call_as_busy(server: LivekitServer, calls: Calls, sipp: Any) -> None:
    agent = await sipp("busy.xml")
    trunk = await trunk_to(server, agent.port)
    target = await phone(calls, server, None, trunk_id=trunk)
    turn = await collect(target, None)
    assert isinstance(turn[-1], AgentTurn) and turn[-1].done
    assert ended(turn) == [("busy", "486 Busy Here")]
    await target.stop()
    assert await agent.done() == 0, "SIPp saw the ACK of its 486"


@needs_sipp
async def test_an_unanswered_call_ends_as_no_answer(server: LivekitServer, calls: Calls, sipp: Any) -> None:
    agent = await sipp("no_answer.xml")
    trunk = await trunk_to(server, agent.port)
    target = await phone(calls, server, None, trunk_id=trunk, ring_timeout="1s")
    turn = await collect(target, None)
    assert [by for by, _ in ended(turn)] == ["no_answer"]
    assert ended(turn)[0][1].startswith("408")
    await target.stop()
    assert await agent.done() == 0, "SIPp saw the CANCEL"


@needs_sipp
async def test_the_agents_rfc4733_digit_arrives_as_sip_dtmf(
    server: LivekitServer, calls: Calls, sipp: Any
) -> None:
    agent = await sipp("digits.xml")
    trunk = await trunk_to(server, agent.port)
    target = await phone(calls, server, None, trunk_id=trunk)
    turn = await collect(target, None)
    assert [m.digits for m in turn if isinstance(m, Dtmf) and m.direction == "received"] == ["1"]
    await target.stop()
    assert await agent.done() == 0, "SIPp saw the BYE"


async def test_a_trunk_without_a_livekit_server_is_a_config_error(calls: Calls) -> None:
    from tamesu.errors import TargetError

    with pytest.raises(TargetError, match=r"livekit\.url") as err:
        await calls.target({"type": "sip", "to": "+15550199", "trunk_id": "ST_x"})
    assert err.value.kind == "config" and err.value.retryable is False


async def test_an_unknown_trunk_is_refused_by_the_sip_api(server: LivekitServer, calls: Calls) -> None:
    from tamesu.errors import TargetError

    with pytest.raises(TargetError, match="ST_missing"):
        await phone(calls, server, None, trunk_id="ST_missing")
