from __future__ import annotations

import typing

import pytest

from tamesu.kernel import messages as m
from tamesu.kernel.events import VoiceTurn

pytestmark = pytest.mark.unit

SAMPLES: list[m.Message] = [
    m.SessionStart(run_id="r1", session="s1", at=0.5),
    m.SessionEnd(reason="max_turns"),
    m.Interrupt(at=1.25),
    m.ErrorMsg(message="503 from agent", kind="agent", retryable=False),
    m.UserTurn(
        text="hi",
        data={"order": "ORD-1"},
        files=[m.FileRef(path="invoice.pdf", mime="application/pdf")],
        source="simulator",
        reasoning="asks first",
    ),
    m.Listen(at=2.5),
    m.ToolCall(name="lookup", args={"q": [1, 2]}, id="c1"),
    m.ToolResult(name="lookup", result={"ok": True}, id="c1"),
    m.Handoff(to="billing", summary="double charge"),
    m.RawResponse(body={"reply": "x", "n": 1.5}, status=200),
    m.AgentPartial(text="Hel"),
    m.AgentTurn(text="Hello", done=True, status=201, sent_at=0.1, first_byte_at=0.2, end_at=0.3),
    m.AgentTurn(
        text="Hi",
        first_audio_at=0.25,
        audio=[
            m.AudioSpan(start=0.0, end=0.1, channel="caller", text="hey"),
            m.AudioSpan(start=0.25, end=1.0, channel="agent"),
        ],
    ),
    m.Event(event=VoiceTurn(turn=1, interrupted=True, at=2.0), at=2.0),
    m.Dtmf(digits="12#", direction="received"),
    m.MetricMsg(name="barge_in_ms", value=120.0),
    m.AudioFrame(seq=7, pcm=b"\x00\x01" * 160, sample_rate=8000, channel="agent", call=3),
    m.AudioBatch(seq=9, pcm=b"\x00\x01" * 320, rows=2, calls=(1,), sample_rate=8000, channel="agent"),
    m.Tick(seq=9, at=0.18),
    m.CallerSpoke(call=1, start=0.5, end=1.5, spans=[(0.52, 1.4)], stopped=True),
    m.AgentSpeech(call=1, kind="speech_start", at=2.25),
    m.AgentTones(call=1, digits="9#"),
    m.AgentMark(call=1, name="said-1"),
    m.AgentClear(call=1),
    m.MarksPlayed(call=1, names=["said-1"]),
]


def test_samples_cover_every_message_type() -> None:
    assert {type(s) for s in SAMPLES} == set(typing.get_args(m.Message))


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda s: type(s).__name__)
def test_every_message_survives_encode_and_decode(msg: m.Message) -> None:
    back = m.decode(m.encode(msg))
    assert type(back) is type(msg)
    assert back == msg


def test_tags_are_unique() -> None:
    tags = [t.__struct_config__.tag for t in typing.get_args(m.Message)]
    assert len(tags) == len(set(tags))


def test_control_messages_are_the_session_error_and_clear_ones() -> None:
    control = {type(s).__name__ for s in SAMPLES if m.is_control(s)}
    assert control == {"SessionStart", "SessionEnd", "Interrupt", "ErrorMsg", "AgentClear"}


def test_messages_are_frozen() -> None:
    with pytest.raises(AttributeError):
        m.AgentTurn(text="a").text = "b"  # type: ignore[misc]
