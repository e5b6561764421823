"""The call pipeline against a real loopback agent speaking real audio over a websocket."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tamesu.errors import TargetError
from tamesu.kernel.events import AgentCleared, DtmfUnsupported, VoiceCall
from tamesu.kernel.messages import AgentTurn, Dtmf, Event, Interrupt, UserTurn
from tamesu.voice.recording import read_recording
from tamesu.voice.voice_metrics import wer

from .conftest import Calls
from .peers import AgentScript, collect, metrics_of, spec_with

pytestmark = [pytest.mark.integration, pytest.mark.timing, pytest.mark.virtual_time]

SAY = UserTurn(text="one two three four")
"""One second of the caller's voice (the test TTS speaks 0.25 s per word)."""


def voice_config(url: str, **extra: object) -> dict[str, object]:
    return {
        "type": "voice",
        "url": f"{url}/voice",
        "idle": "500ms",
        "messages": {
            "transcript": "$[?(@.type=='transcript')].text",
            "interrupted": "$[?(@.type=='interrupted')].type",
            "done": "$[?(@.type=='end')].type",
            "tool_calls": "$[?(@.type=='tool_calls')].calls[*]",
        },
        **extra,
    }


def turn_of(messages: list[object]) -> AgentTurn:
    last = messages[-1]
    assert isinstance(last, AgentTurn)
    return last


async def test_latency_is_measured_within_50ms_of_the_agents_delay(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=0.3, delay=0.7, reply=0.3))
    phone = await calls.target(voice_config(url, transcript_source="agent"))
    await collect(phone)
    latencies, first_audio = [], []
    for _ in range(2):
        messages = await collect(phone, UserTurn(text="one two"))
        turn = turn_of(messages)
        assert turn.sent_at is not None and turn.first_audio_at is not None
        latencies.append(turn.first_audio_at - turn.sent_at)
        first_audio.append(metrics_of(messages)["time_to_first_audio_ms_max"])
    assert len(agent.log.replies) == 2
    for latency in latencies:
        assert abs(latency - 0.7) <= 0.05, latencies
    metrics = metrics_of(messages)
    assert abs(metrics["turn_latency_ms_p50"] - 700) <= 50
    assert abs(metrics["turn_latency_ms_max"] - 1000 * max(latencies)) < 1
    assert abs(first_audio[-1] - 700) <= 50


async def test_the_caller_barges_in_and_the_agent_stops(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=4.0, delay=0.3, reply=0.5))
    spec = spec_with({"behaviors": {"interrupt_probability": 1.0}})
    phone = await calls.target(voice_config(url, transcript_source="agent"), spec=spec)
    greeting = await collect(phone)
    assert any(isinstance(m, Interrupt) for m in greeting), "the caller decides to barge in on the greeting"
    assert turn_of(greeting).end_at is not None and turn_of(greeting).end_at < 4.0
    answer = await collect(phone, SAY)
    metrics = metrics_of(answer)
    assert agent.log.barge_ins, "the agent heard the caller over its greeting"
    assert any(isinstance(m, Event) and isinstance(m.event, AgentCleared) for m in answer)
    assert metrics["barge_ins"] >= 1 and metrics["interruptions"] >= 1
    assert 0 < metrics["barge_in_ms_p95"] < 300
    assert metrics["talk_over_ms"] < 300


async def test_an_agent_that_talks_over_the_caller_is_measured(calls: Calls) -> None:
    _, url = await calls.agent(AgentScript(greeting=2.0, delay=0.3, reply=0.4, stop_on_barge_in=False))
    spec = spec_with({"behaviors": {"interrupt_probability": 1.0}})
    phone = await calls.target(voice_config(url, transcript_source="agent"), spec=spec)
    await collect(phone)
    metrics = metrics_of(await collect(phone, SAY))
    assert metrics["barge_ins"] == 1
    assert metrics["interruptions"] == 0
    assert metrics["talk_over_ms"] > 300


async def test_dtmf_steps_as_protocol_messages_and_as_tones(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.3))
    config = voice_config(url, transcript_source="agent")
    config["messages"]["dtmf"] = {"type": "dtmf", "digit": "{{digit}}"}  # type: ignore[index]
    tones_agent, url2 = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.3))
    by_message = await calls.target(config)
    by_tones = await calls.target(voice_config(url2, transcript_source="agent"))
    first, second = await asyncio.gather(
        collect(by_message, UserTurn(data={"dtmf": "12#"})), collect(by_tones, UserTurn(data={"dtmf": "47"}))
    )
    assert agent.log.dtmf_events == ["1", "2", "#"]
    assert [m.digits for m in first if isinstance(m, Dtmf)] == ["12#"]
    assert not any(isinstance(m, Event) and isinstance(m.event, DtmfUnsupported) for m in first)
    assert "".join(tones_agent.log.dtmf_tones) == "47"
    assert any(isinstance(m, Event) and isinstance(m.event, DtmfUnsupported) for m in second)


async def test_dtmf_the_agent_plays_is_received(calls: Calls) -> None:
    _, url = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.3, dtmf_reply="9#", paced=False))
    phone = await calls.target(
        voice_config(url, transcript_source="agent"), spec=spec_with(assertions=("dtmf_received",))
    )
    messages = await collect(phone, SAY)
    received = "".join(m.digits for m in messages if isinstance(m, Dtmf) and m.direction == "received")
    assert received == "9#"


async def test_transcript_source_agent_stt_and_auto(calls: Calls) -> None:
    async def call(source: str | None, *, transcripts: bool = True) -> list[object]:
        _, url = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.8, transcripts=transcripts))
        extra = {"transcript_source": source} if source else {}
        return await collect(await calls.target(voice_config(url, **extra)), SAY)

    by_agent, by_stt, auto = await asyncio.gather(call("agent"), call("stt"), call(None, transcripts=False))
    assert turn_of(by_agent).text == "Returns are accepted within 30 days."
    assert "wer_agent_transcript" not in metrics_of(by_agent)

    heard = turn_of(by_stt).text
    assert heard.startswith("heard ")
    expected = wer(heard, "Returns are accepted within 30 days.")
    assert expected > 1 and metrics_of(by_stt)["wer_agent_transcript"] == pytest.approx(expected, abs=1e-3)
    agent_spans = [a for a in turn_of(by_stt).audio if a.channel == "agent"]
    assert agent_spans and agent_spans[0].text == heard

    assert turn_of(auto).text.startswith("heard ")


@pytest.mark.parametrize("stall", [0.8, 1.5])
async def test_a_stalled_process_does_not_end_the_agents_turn_in_its_pause(
    calls: Calls, stall: float
) -> None:
    """The process stops (a long collection, a loaded machine) while the agent is in a breath
    between two sentences: the agent's audio waits in the socket meanwhile, so the stall is not
    the agent's silence, and the whole greeting is heard (below a second the frames are caught
    up, above it the pump starts afresh)."""
    agent, url = await calls.agent(AgentScript(greeting=3.0, gap=(1.0, 0.45)))
    phone = await calls.target(voice_config(url, transcript_source="stt"))
    loop = asyncio.get_running_loop()

    async def stall_in_the_pause() -> None:
        while not agent.logs:
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.4)
        loop.stall(stall)  # type: ignore[attr-defined]

    stalling = asyncio.ensure_future(stall_in_the_pause())
    greeting = turn_of(await collect(phone))
    await stalling
    heard = float(greeting.text.split()[1])
    assert heard >= 3.45, greeting.text
    assert greeting.end_at is not None and greeting.end_at >= 3.45
    agent_spans = [a for a in greeting.audio if a.channel == "agent"]
    assert sum(a.end - a.start for a in agent_spans) >= 2.9, agent_spans


async def test_the_recording_holds_both_sides_where_they_spoke(calls: Calls) -> None:
    _, url = await calls.agent(AgentScript(greeting=0.5, delay=0.3, reply=0.8))
    phone = await calls.target(voice_config(url, transcript_source="agent"))
    first = await collect(phone)
    announced = [m.event for m in first if isinstance(m, Event) and isinstance(m.event, VoiceCall)]
    assert announced and (announced[0].recording or "").startswith("recordings/")
    turn = turn_of(await collect(phone, SAY))
    await phone.stop()
    path = calls.out / (announced[0].recording or "")
    rate, caller, agent = read_recording(path)
    assert rate == 16000 and len(caller) == len(agent)
    duration = len(caller) / rate
    timeline = phone.session.timeline
    assert timeline.ended is not None and abs(duration - (timeline.ended - timeline.started)) < 0.1

    zero = announced[0].recording_starts_at or 0.0
    assert zero == phone.session.timeline.started

    def level(x: np.ndarray, a: float, b: float) -> float:
        seg = x[int((a - zero + 0.05) * rate) : int((b - zero - 0.05) * rate)].astype(np.float64)
        return float(np.sqrt(np.mean(seg**2)))

    you = next(a for a in turn.audio if a.channel == "caller")
    them = next(a for a in turn.audio if a.channel == "agent")
    assert level(caller, you.start, you.end) > 1000 and level(agent, you.start, you.end) < 50
    assert level(agent, them.start, them.end) > 1000 and level(caller, them.start, them.end) < 50


async def test_a_refused_connection_is_retried_then_an_error(calls: Calls) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    phone = await calls.target(
        {
            "type": "voice",
            "url": f"ws://127.0.0.1:{port}/voice",
            "connect": {"attempts": 2, "backoff": "10ms"},
        },
        start=False,
    )
    with pytest.raises(TargetError, match=r"refused.*after 2 attempts"):
        await phone.start()


async def test_a_dropped_call_and_a_silent_agent_are_errors(calls: Calls) -> None:
    async def dropped() -> None:
        _, url = await calls.agent(AgentScript(greeting=None, drop_after=0))
        phone = await calls.target(voice_config(url, transcript_source="agent"))
        with pytest.raises(TargetError, match="dropped the call"):
            await collect(phone, SAY)

    async def silent() -> None:
        _, url = await calls.agent(AgentScript(silent=True))
        quiet = await calls.target(voice_config(url, transcript_source="agent"), turn_timeout=1.0)
        greeting = turn_of(await collect(quiet))
        assert greeting.text == "" and greeting.first_audio_at is None
        with pytest.raises(TargetError, match="no audio from the agent within 1s"):
            await collect(quiet, SAY)

    await asyncio.gather(dropped(), silent())


async def test_the_agent_ending_the_call_is_done(calls: Calls) -> None:
    _, url = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.4, end_after=1))
    phone = await calls.target(voice_config(url, transcript_source="agent"))
    turn = turn_of(await collect(phone, SAY))
    assert turn.done
    with pytest.raises(TargetError, match="the call has ended"):
        await collect(phone, SAY)


async def test_the_callers_habits_noise_line_and_pause(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=None, delay=0.3, reply=0.4))
    habits = {
        "background_noise": "white",
        "background_noise_snr_db": 25,
        "line_quality": "mobile_poor",
        "silence_after_turn_ms": [400, 400],
    }
    phone = await calls.target(
        voice_config(url, transcript_source="agent"), spec=spec_with({"behaviors": habits})
    )
    called = phone.ctx.clock.now()
    turn = turn_of(await collect(phone, SAY))
    await phone.stop()
    you = next(a for a in turn.audio if a.channel == "caller")
    line_delay = phone.session.call.line_latency
    assert line_delay > 0, "the 8 kHz line on a 16 kHz wire resamples"
    assert you.start - called - line_delay == pytest.approx(0.4), "the caller pauses 400 ms before speaking"
    assert agent.log.caller_ends, "the agent heard the caller through noise and a poor line"
    rate, caller, _ = read_recording(next((calls.out / "recordings").glob("*.wav")))
    at = you.start - phone.session.timeline.started
    pause = caller[int((at - 0.35) * rate) : int((at - 0.05) * rate)].astype(np.float64)
    noise_dbfs = 20 * np.log10(np.sqrt(np.mean((pause / 32768) ** 2)))
    assert -52 < noise_dbfs < -38, (
        "noise 25 dB under the voice, through the line's +10 dB microphone and band-pass"
    )


async def test_the_callers_voice_is_rendered_during_its_pause_not_after(
    calls: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu.audio.synth import speech_like
    from tamesu.voice.speech import make_utterance

    async def slow_render(text: str, rate: int, **_: object) -> object:
        await asyncio.sleep(0.3)  # a TTS that takes 300 ms
        return make_utterance(speech_like(1.0, rate, seed=1), rate, text=text)

    monkeypatch.setattr("tamesu.voice.caller.render_speech", slow_render)
    _, url = await calls.agent(AgentScript(greeting=None, delay=0.3, reply=0.4))
    phone = await calls.target(
        voice_config(url, transcript_source="agent"),
        spec=spec_with({"behaviors": {"silence_after_turn_ms": [400, 400]}}),
    )
    called = phone.ctx.clock.now()
    turn = turn_of(await collect(phone, SAY))
    await phone.stop()
    you = next(a for a in turn.audio if a.channel == "caller")
    start = you.start - called - phone.session.call.line_latency
    assert 0.4 <= start < 0.55, "the pause (and the voice's own lead-in), not the pause plus the rendering"


async def test_a_finished_call_is_freed_without_the_cycle_collector(calls: Calls) -> None:
    import gc
    import weakref

    _, url = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.3))
    phone = await calls.target(voice_config(url, transcript_source="agent"))
    assert turn_of(await collect(phone, SAY)).text
    await phone.stop()
    calls.started.remove(phone)
    refs = [weakref.ref(phone), weakref.ref(phone.session), weakref.ref(phone.session.call)]
    gc.disable()
    try:
        del phone
        assert [ref() for ref in refs] == [None, None, None], "no reference cycle keeps a call alive"
    finally:
        gc.enable()
