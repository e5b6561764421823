"""The livekit target in audio mode: a published microphone, the agent's track heard, on the loopback server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("livekit.rtc")
pytest.importorskip("aiortc")

from tamesu.kernel.messages import AgentTurn, Dtmf, UserTurn
from tamesu.testing.livekit_agents import AgentLog, voice_agent
from tamesu.testing.livekit_server import LivekitServer, serve_livekit_server

from ..voice.peers import Calls, calls, collect

__all__ = ["calls"]

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
async def server() -> AsyncIterator[LivekitServer]:
    async with serve_livekit_server() as s:
        yield s


def audio_config(server: LivekitServer, **extra: Any) -> dict[str, Any]:
    return {
        "type": "livekit",
        "url": server.url,
        "api_key": server.api_key,
        "api_secret": "{{secrets.LK_SECRET}}",
        "mode": "audio",
        **extra,
    }


async def call(calls: Calls, server: LivekitServer, **extra: Any) -> Any:
    return await calls.target(
        audio_config(server, **extra), secrets={"LK_SECRET": server.api_secret}, turn_timeout=20
    )


def vowel_agent(log: AgentLog, **kw: Any) -> Any:
    return voice_agent(
        lambda heard: "Your order ships today.", log=log, tts="test-vowel", stt="test-stt", **kw
    )


async def test_the_agent_greets_hears_the_caller_and_answers(server: LivekitServer, calls: Calls) -> None:
    log = AgentLog()
    server.register_agent("", vowel_agent(log))
    target = await call(calls, server)
    greeting = (await collect(target, None))[-1]
    assert isinstance(greeting, AgentTurn) and greeting.text == "Hello, how can I help?"
    assert greeting.first_audio_at is not None
    answer = (await collect(target, UserTurn(text="where is my order")))[-1]
    assert isinstance(answer, AgentTurn) and answer.text == "Your order ships today."
    assert log.heard and log.heard[-1].startswith("heard ")  # the agent's STT heard the caller's speech
    assert answer.first_audio_at is not None and answer.sent_at is not None
    assert answer.first_audio_at > answer.sent_at
    await target.stop()
    recordings = list((calls.out / "recordings").glob("*.wav"))
    assert len(recordings) == 1 and recordings[0].stat().st_size > 16000


async def test_transcript_source_stt_transcribes_the_agents_audio(
    server: LivekitServer, calls: Calls
) -> None:
    server.register_agent("", vowel_agent(AgentLog()))
    target = await call(calls, server, transcript_source="stt")
    greeting = (await collect(target, None))[-1]
    assert isinstance(greeting, AgentTurn) and greeting.text.startswith("heard ")


async def test_a_keypad_digit_reaches_the_agent_as_sip_dtmf(server: LivekitServer, calls: Calls) -> None:
    log = AgentLog()
    server.register_agent("", vowel_agent(log))
    target = await call(calls, server)
    await collect(target, None)
    messages = await collect(target, UserTurn(text="", data={"dtmf": "2"}))
    assert log.digits == ["2"]
    assert any(isinstance(m, Dtmf) and m.digits == "2" for m in messages)
    assert isinstance(messages[-1], AgentTurn) and messages[-1].text == "You pressed 2."
