"""The livekit target against a real LiveKit server, when LIVEKIT_URL, LIVEKIT_API_KEY and
LIVEKIT_API_SECRET name one: our own text agent joins the room as kind agent and tamesu talks to it."""

from __future__ import annotations

import asyncio
import os
import secrets

import pytest

pytest.importorskip("livekit.rtc")

from tamesu.kernel.messages import AgentTurn, UserTurn
from tamesu.testing.livekit_agents import AgentLog, text_agent
from tamesu.testing.livekit_server import JobRequest

from ..voice.peers import Calls, calls, collect

__all__ = ["calls"]

URL, KEY, SECRET = (os.environ.get(n) for n in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"))
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not (URL and KEY and SECRET),
        reason="needs a LiveKit server: LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET",
    ),
]


async def test_a_text_turn_in_a_room_of_a_real_server(calls: Calls) -> None:
    from livekit import api

    assert URL and KEY and SECRET
    room = f"tamesu-it-{secrets.token_hex(4)}"
    identity = f"agent-{secrets.token_hex(4)}"
    grants = api.VideoGrants(room_join=True, room=room)
    token = (
        api.AccessToken(KEY, SECRET).with_identity(identity).with_kind("agent").with_grants(grants).to_jwt()
    )
    log = AgentLog()
    job = JobRequest(room=room, url=URL, token=token, agent_name="", dispatch_id="")
    agent = asyncio.ensure_future(text_agent(lambda t: f"echo {t}", log=log)(job))
    await asyncio.wait_for(log.joined.wait(), 30)
    target = await calls.target(
        {"type": "livekit", "url": URL, "api_key": KEY, "api_secret": "{{secrets.S}}", "room": room},
        secrets={"S": SECRET},
        turn_timeout=30,
    )
    last = (await collect(target, UserTurn(text="ping")))[-1]
    assert isinstance(last, AgentTurn) and last.text == "echo ping"
    await target.stop()
    await asyncio.wait_for(agent, 30)
