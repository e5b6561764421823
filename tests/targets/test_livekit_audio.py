"""The livekit target in audio mode: a published microphone, the agent's track heard, on the loopback server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("livekit.rtc")
pytest.importorskip("aiortc")

from tamesu.kernel.events import VoiceTurn
from tamesu.kernel.messages import AgentTurn, Dtmf, Event, Interrupt, UserTurn
from tamesu.testing.livekit_agents import AgentLog, voice_agent
from tamesu.testing.livekit_server import LivekitServer, serve_livekit_server
from tamesu.voice.voice_metrics import wer

from ..voice.peers import Calls, calls, collect, metrics_of, spec_with

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


async def call(calls: Calls, server: LivekitServer, *, spec: Any = None, **extra: Any) -> Any:
    context: dict[str, Any] = {"spec": spec} if spec is not None else {}
    return await calls.target(
        audio_config(server, **extra), secrets={"LK_SECRET": server.api_secret}, turn_timeout=20, **context
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


async def test_the_agents_transcript_of_the_caller_is_kept_apart_from_its_answer(
    server: LivekitServer, calls: Calls
) -> None:
    server.register_agent("", vowel_agent(AgentLog()))
    target = await call(calls, server)
    await collect(target, None)
    answer = await collect(target, UserTurn(text="where is my order"))
    [turn] = [m.event for m in answer if isinstance(m, Event) and isinstance(m.event, VoiceTurn)]
    assert turn.caller_heard is not None and turn.caller_heard.startswith("heard ")  # the agent's STT of us
    [said] = [m for m in answer if isinstance(m, AgentTurn)]
    assert said.text == "Your order ships today."  # not mixed into the agent's own words


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


LONG_GREETING = " ".join(["welcome"] * 16)  # four seconds of speech: time to talk over it
INTERRUPTING = spec_with({"behaviors": {"interrupt_probability": 1.0}})


async def test_the_caller_barges_in_and_the_agent_stops(server: LivekitServer, calls: Calls) -> None:
    log = AgentLog()
    server.register_agent("", vowel_agent(log, greeting=LONG_GREETING))
    target = await call(calls, server, spec=INTERRUPTING)
    greeting = await collect(target, None)
    assert any(isinstance(m, Interrupt) for m in greeting), "the caller decides to barge in on the greeting"
    end = greeting[-1]
    assert isinstance(end, AgentTurn) and end.end_at is not None
    answer = await collect(target, UserTurn(text="sorry to cut in"))
    assert log.barged >= 1, "the agent heard the caller over its greeting and stopped"
    metrics = metrics_of(answer)
    assert metrics["barge_ins"] >= 1 and metrics["interruptions"] >= 1
    assert 0 < metrics["barge_in_ms_p95"] < 800
    last = answer[-1]
    assert isinstance(last, AgentTurn) and last.text == "Your order ships today."


async def test_an_agent_that_talks_over_the_caller_is_not_interrupted(
    server: LivekitServer, calls: Calls
) -> None:
    log = AgentLog()
    server.register_agent("", vowel_agent(log, greeting=LONG_GREETING, stops_on_barge_in=False))
    target = await call(calls, server, spec=INTERRUPTING)
    await collect(target, None)
    metrics = metrics_of(await collect(target, UserTurn(text="sorry to cut in")))
    assert log.barged == 0
    assert metrics["barge_ins"] >= 1 and metrics["interruptions"] == 0
    assert metrics["talk_over_ms"] > 300


def _speech_engines_installed() -> bool:
    from tamesu.audio.engines import available

    engines = available()
    return bool(engines["tts"]["piper"]["installed"] and engines["stt"]["whisper"]["installed"])


@pytest.mark.skipif(not _speech_engines_installed(), reason="needs the voice extra (Piper and Whisper)")
async def test_real_speech_both_ways_piper_and_whisper(server: LivekitServer, calls: Calls) -> None:
    log = AgentLog()

    def reply(heard: str) -> str:
        return "Your order ships on Friday."  # whatever its STT made of our voice: that is not under test

    server.register_agent("", voice_agent(reply, log=log, greeting=None))  # Piper and Whisper
    target = await calls.target(
        audio_config(server, transcript_source="stt"),
        secrets={"LK_SECRET": server.api_secret},
        turn_timeout=60,
        tts_engine="piper",
        stt_engine="whisper",
    )
    answer = (await collect(target, UserTurn(text="Where is my order?")))[-1]
    assert log.heard and log.heard[-1].strip(), log.heard  # the agent's Whisper heard speech from our Piper
    assert isinstance(answer, AgentTurn)
    assert wer("Your order ships on Friday.", answer.text) <= 0.5, answer.text  # our Whisper of its Piper
    assert answer.first_audio_at is not None and answer.sent_at is not None
    assert answer.first_audio_at > answer.sent_at
