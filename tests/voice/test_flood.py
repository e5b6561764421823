"""An agent that floods the call with audio: what waits to be played is bounded by time
(``limits.audio_ahead``), what arrives beyond is dropped and counted in the transcript, and the run
ends with an error naming the setting. Hostile peers on loopback: a voice websocket sending 1 MB
frames, and a SIP agent sending RTP thousands of packets a second."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from tamesu.audio.codec import ulaw_encode
from tamesu.errors import TargetError
from tamesu.kernel.events import AudioDropped
from tamesu.kernel.messages import AgentTurn, Event, UserTurn
from tamesu.limits import Limits
from tamesu.voice.transport import Playout

from .peers import Calls, calls, vowel

__all__ = ["calls"]

AHEAD = Limits(audio_ahead=2.0)


async def turn_until_error(adapter: Any, user: Any = None) -> tuple[list[Any], BaseException | None]:
    """The messages of one turn, and the error that ended it (None: it ended with an AgentTurn)."""
    got: list[Any] = []
    try:
        async for msg in adapter.turn(user):
            got.append(msg)
    except Exception as exc:
        return got, exc
    return got, None


async def socket(calls: Calls, handler: Any) -> str:
    """The ws:// URL of ``handler`` served on loopback."""
    app = web.Application()
    app.router.add_get("/call", handler)
    return f"{await calls.serve(app)}/call"


def dropped_events(messages: list[Any]) -> list[AudioDropped]:
    return [m.event for m in messages if isinstance(m, Event) and isinstance(m.event, AudioDropped)]


@pytest.mark.unit
def test_a_playout_keeps_at_most_its_limit_and_counts_the_rest() -> None:
    play = Playout(160, limit=800)
    play.write(np.ones(500, np.int16))
    play.mark("a")
    play.write(np.ones(500, np.int16))
    assert (play.buffered, play.dropped) == (800, 200)
    out = np.zeros(160, np.int16)
    assert play.read_into(out) == 160
    play.write(np.ones(300, np.int16))
    assert (play.buffered, play.dropped) == (800, 340)
    assert play.due_marks() == []
    for _ in range(5):
        play.read_into(np.zeros(160, np.int16))
    assert play.due_marks() == ["a"] and play.buffered == 0


@pytest.mark.unit
def test_a_playout_without_a_limit_keeps_everything() -> None:
    play = Playout(160)
    play.write(np.ones(10_000, np.int16))
    assert (play.buffered, play.dropped) == (10_000, 0)


@pytest.mark.integration
async def test_a_voice_agent_sending_megabyte_frames_ends_the_run_with_a_flood_error(calls: Calls) -> None:
    sent: list[int] = []

    async def flood(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        frame = np.tile(vowel(1.0, 16000), 32)[:500_000].tobytes()  # 1 MB, 31 s of speech
        for _ in range(40):
            await ws.send_bytes(frame)
            sent.append(len(frame))
        async for _ in ws:
            pass
        return ws

    phone = await calls.target(
        {"type": "voice", "url": await socket(calls, flood)}, limits=AHEAD, turn_timeout=20.0
    )
    got, error = await turn_until_error(phone)
    assert isinstance(error, TargetError) and error.kind == "limit" and not error.retryable, error
    assert "ahead of real time" in str(error) and "limits.audio_ahead" in str(error)
    [dropped] = dropped_events(got)
    assert dropped.seconds > 25.0 and dropped.samples == round(dropped.seconds * 16000)
    assert phone.session.call.buffered <= 2 * 16000
    assert not any(isinstance(m, AgentTurn) for m in got)


@pytest.mark.integration
async def test_an_agent_keeping_within_the_bound_is_not_cut(calls: Calls) -> None:
    async def burst(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_bytes(vowel(1.5, 16000).tobytes())  # a sentence at once, under the bound
        async for _ in ws:
            pass
        return ws

    url = await socket(calls, burst)
    phone = await calls.target({"type": "voice", "url": url, "idle": "400ms"}, limits=AHEAD)
    got, error = await turn_until_error(phone)
    assert error is None and isinstance(got[-1], AgentTurn)
    assert dropped_events(got) == [] and phone.session.call.dropped == 0


@pytest.mark.integration
@pytest.mark.slow
async def test_an_rtp_flood_from_a_sip_agent_is_dropped_beyond_the_bound(calls: Calls) -> None:
    from tamesu.testing.sip_agent import AgentCall, SipVoiceAgent

    packets: list[int] = [0]

    async def flood(line: AgentCall) -> None:
        loud = ulaw_encode(vowel(0.02, 8000)).tobytes()
        call = line.call
        while call is not None and call.state == "connected":
            for _ in range(200):
                call.rtp.send(loud)
            packets[0] += 200
            await asyncio.sleep(0.01)  # 20,000 packets a second: the flood's own pace

    agent = SipVoiceAgent(tts="test-vowel", stt="test-stt")
    agent_play = AgentCall.play
    AgentCall.play = flood  # type: ignore[assignment,method-assign]
    await agent.start()
    try:
        phone = await calls.target({"type": "sip", "to": agent.uri}, limits=AHEAD, turn_timeout=20.0)
        got, error = await turn_until_error(phone, UserTurn(text="hello"))
        assert isinstance(error, TargetError) and "limits.audio_ahead" in str(error), error
        [dropped] = dropped_events(got)
        assert dropped.seconds > 0 and phone.session.call.buffered <= 2 * 8000
        assert packets[0] * 0.02 > 2.0, "the agent sent more than the bound"
        await phone.stop()
    finally:
        AgentCall.play = agent_play  # type: ignore[method-assign]
        await agent.close()
