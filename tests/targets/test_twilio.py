"""The twilio target against a real Twilio-protocol agent on loopback (Media Streams over a websocket)."""

from __future__ import annotations

import asyncio
import base64
import re

import numpy as np
import pytest

from tamesu.kernel.events import AgentCleared
from tamesu.kernel.messages import AgentTurn, Dtmf, Event, UserTurn
from tamesu.voice.recording import read_recording

from ..voice.peers import AgentScript, Calls, calls, collect, metrics_of, spec_with

__all__ = ["calls"]

pytestmark = [pytest.mark.integration, pytest.mark.timing, pytest.mark.virtual_time]


def twilio_config(url: str, **extra: object) -> dict[str, object]:
    return {"type": "twilio", "url": f"{url}/twilio", "idle": "500ms", **extra}


async def test_the_agent_sees_twilios_messages(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.3))
    phone = await calls.target(
        twilio_config(
            url,
            parameters={"caller_tier": "{{vars.tier}}", "token": "{{secrets.TOKEN}}"},
            headers={"X-Key": "{{secrets.TOKEN}}"},
            **{"from": "+15550100", "to": "+15550199"},
        ),
        secrets={"TOKEN": "s3cret-token"},
    )
    turn = (await collect(phone, UserTurn(text="hello there")))[-1]
    await phone.stop()
    await asyncio.wait_for(agent.log.closed.wait(), 5)
    log = agent.log
    first, start = log.messages[0], log.start
    assert first == {"event": "connected", "protocol": "Call", "version": "1.0.0"}
    assert start is not None and start["sequenceNumber"] == "1"
    body = start["start"]
    assert re.fullmatch(r"MZ[0-9a-f]{32}", body["streamSid"]) and start["streamSid"] == body["streamSid"]
    assert re.fullmatch(r"CA[0-9a-f]{32}", body["callSid"]) and re.fullmatch(
        r"AC[0-9a-f]{32}", body["accountSid"]
    )
    assert body["mediaFormat"] == {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
    assert body["customParameters"] == {
        "caller_tier": "gold",
        "token": "s3cret-token",
        "From": "+15550100",
        "To": "+15550199",
    }
    assert log.headers.get("X-Key") == "s3cret-token"
    assert log.messages[-1]["event"] == "stop" and log.messages[-1]["stop"]["callSid"] == body["callSid"]
    assert log.frames > 50 and isinstance(turn, AgentTurn) and turn.first_audio_at is not None


async def test_media_frames_are_20ms_of_mulaw_at_real_time(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=0.4))
    phone = await calls.target(twilio_config(url))
    await collect(phone)
    media = agent.log.media
    assert len(media) > 40
    chunks = [int(m["media"]["chunk"]) for _, m in media]
    assert chunks == list(range(1, len(media) + 1))
    assert [int(m["media"]["timestamp"]) for _, m in media] == [(c - 1) * 20 for c in chunks]
    assert all(
        m["media"]["track"] == "inbound" and m["streamSid"] == agent.log.start["streamSid"] for _, m in media
    )  # type: ignore[index]
    seqs = [int(m["sequenceNumber"]) for _, m in media]
    assert seqs[0] == 2 and seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(len(base64.b64decode(m["media"]["payload"])) == 160 for _, m in media)
    span = media[-1][0] - media[0][0]
    assert abs(span - 0.02 * (len(media) - 1)) < 0.06, "frames arrive at real time, not in bursts"


async def test_marks_are_echoed_once_their_audio_has_played(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(mark_audio=1.0))
    phone = await calls.target(twilio_config(url))
    await collect(phone)
    await phone.stop()
    # counted in the caller's 20 ms frames, which a loaded machine may send late but never out of step:
    # the echo leaves in the very frame that plays the last of the marked second of audio
    _, _, heard = read_recording(next((calls.out / "recordings").glob("*.wav")))
    sounding = np.flatnonzero(np.abs(heard.reshape(-1, 160)).max(axis=1))
    echo_frame = agent.log.marks_echoed_after["m1"] - 1
    assert echo_frame == sounding[-1]
    assert np.count_nonzero(heard) >= 8000 - 2 * 40, "the whole second (less its 5 ms ramps) was played first"


async def test_clear_drops_the_audio_and_echoes_pending_marks_at_once(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(mark_audio=3.0, clear_after=0.5))
    phone = await calls.target(twilio_config(url, transcript_source="stt"))
    messages = await collect(phone)
    log = agent.log
    assert log.cleared is not None
    assert 0 <= log.marks_echoed["m1"] - log.cleared < 0.1
    assert any(isinstance(m, Event) and isinstance(m.event, AgentCleared) for m in messages)
    turn = messages[-1]
    assert isinstance(turn, AgentTurn)
    spoken = [a for a in turn.audio if a.channel == "agent"]
    assert len(spoken) == 1 and spoken[0].end - spoken[0].start < 1.0
    await phone.stop()
    _, _, heard = read_recording(next((calls.out / "recordings").glob("*.wav")))
    after = heard[int((spoken[0].end - phone.session.timeline.started + 0.05) * 8000) :]
    assert len(after) > 2000 and int(np.abs(after).max()) == 0


async def test_dtmf_steps_are_twilio_dtmf_events(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=None, delay=0.2, reply=0.3))
    phone = await calls.target(twilio_config(url))
    messages = await collect(phone, UserTurn(data={"dtmf": "5*"}))
    assert agent.log.dtmf_events == ["5", "*"]
    assert [(m.digits, m.direction) for m in messages if isinstance(m, Dtmf)] == [("5*", "sent")]
    assert any(m.get("event") == "dtmf" and m["dtmf"]["track"] == "inbound_track" for m in agent.log.messages)


async def test_barge_in_on_a_twilio_agent_that_clears(calls: Calls) -> None:
    agent, url = await calls.agent(AgentScript(greeting=3.0, delay=0.3, reply=0.4))
    phone = await calls.target(
        twilio_config(url), spec=spec_with({"behaviors": {"interrupt_probability": 1.0}})
    )
    await collect(phone)
    answer = await collect(phone, UserTurn(text="one two three"))
    metrics = metrics_of(answer)
    assert agent.log.barge_ins
    assert metrics["interruptions"] >= 1 and metrics["barge_in_ms_p95"] < 300
    text = answer[-1]
    assert isinstance(text, AgentTurn) and text.text.startswith("heard "), (
        "twilio has no transcript channel: STT"
    )
