"""The transcript's events are typed, and a transcript of any results format up to this one is read."""

from __future__ import annotations

import json
import typing

import msgspec
import pytest

from tamesu.errors import UsageError
from tamesu.kernel import events as ev
from tamesu.kernel.transcript import FORMAT, Transcript, Turn

pytestmark = pytest.mark.unit

SAMPLES: list[ev.TranscriptEvent] = [
    ev.SessionStarted(session="s-1", at=0.01),
    ev.RunError(kind="timeout", message="timed out after 3s", at=3.0),
    ev.IncompleteTurn(at=2.5),
    ev.DtmfSent(digits="12#", direction="received", at=1.0),
    ev.Interrupted(at=3.4),
    ev.AgentDone(turn=2, at=4.0),
    ev.Captured(name="order", turn=1, at=1.2),
    ev.CaptureSkipped(name="mood", reason="invalid regex: x", at=1.3),
    ev.HandoffSignalFailed(message="bad path", at=2.0),
    ev.Truncated(what="raw", limit=200, at=2.2),
    ev.VoiceCall(encoding="mulaw", rate=8000, recording="recordings/a.wav", channels=["caller", "agent"]),
    ev.VoiceTurn(turn=1, caller_end=1.4, first_audio_at=2.0, end_at=3.4, interrupted=True, stt="hi", at=3.4),
    ev.AgentCleared(reason="interrupted", at=3.5),
    ev.AudioDropped(samples=16000, seconds=1.0, at=3.6),
    ev.BrowserPopup(url="http://shop.example/child", at=3.7),
    ev.BrowserDownload(url="http://shop.example/big", filename="big.bin", at=3.8),
    ev.DtmfUnsupported(digits="5", at=0.5),
    ev.SipTrace(
        direction="received",
        line="REFER sip:tamesu@127.0.0.1:5070 SIP/2.0",
        cseq="2 REFER",
        detail="<sip:billing@pbx.example.com>",
        at=4.1,
    ),
    ev.CallEnded(by="busy", detail="486 Busy Here", at=0.3),
    ev.CallTransferred(to="sip:billing@pbx.example.com", at=4.1),
    ev.CallHeld(held=True, at=2.0),
    ev.RemoteMessage(agent="billing", direction="received", text="refund ORD-1", data=[{"order": "ORD-1"}]),
    ev.Resubscribed(task="t-1", reason="stream closed", at=2.5),
    ev.BrowserStep(
        step=0, action="assert_text", passed=False, message="no 'Sold out'", details={"expected": "x"}
    ),
    ev.BrowserAction(action="click", ok=False, error="not found", details={"role": "button", "name": "Buy"}),
    ev.BrowserRecording(format="webm", path="browser/run/recording.webm", at=0.1),
    ev.BrowserBlocked(url="http://elsewhere/api", method="POST"),
    ev.BrowserMocked(url="http://shop/api/stock", pattern="**/api/stock*"),
    ev.Tactic(turn=2, tactic="reframe", source="simulator", at=1.1),
    ev.DetectorSkipped(detector="judge_leak", reason="no judge model", at=5.0),
    ev.CustomEvent(name="room_joined", data={"room": "r1", "peers": 2}, at=0.2),
]


def test_samples_cover_every_event_type_and_tags_are_unique() -> None:
    kinds = typing.get_args(ev.TranscriptEvent)
    assert {type(s) for s in SAMPLES} == set(kinds)
    tags = [k.__struct_config__.tag for k in kinds]
    assert len(tags) == len(set(tags))


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_every_event_survives_a_transcript_file_and_a_process_boundary(event: ev.TranscriptEvent) -> None:
    t = Transcript(run_id="r", events=[event])
    assert Transcript.from_json(t.to_json()).events == [event]
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(t), type=Transcript).events == [event]


def test_a_transcript_file_says_its_results_format() -> None:
    assert json.loads(Transcript(run_id="r").to_json())["format"] == FORMAT == 4


def test_a_format_2_transcript_reads_as_it_was_written() -> None:
    written = Transcript(run_id="r", turns=[Turn(role="agent", text="hi")], events=[SAMPLES[0]])
    old = json.loads(written.to_json())
    old["format"] = 2
    read = Transcript.from_json(json.dumps(old))
    assert read.format == FORMAT and read.turns == written.turns and read.events == written.events


UNVERSIONED = {
    "run_id": "order status",
    "turns": [{"role": "agent", "text": "hello", "index": 1}],
    "events": [
        {"type": "voice_call", "at": 0.0, "recording": "recordings/call.wav", "rate": 8000},
        {"type": "voice_turn", "at": 4.2, "turn": 1, "caller_end": 1.4, "first_audio_at": 2.0,
         "interrupted": True, "text_source": "stt"},
        {"type": "error", "kind": "worker", "message": "the worker died"},
        {"type": "handoff_signal_failed", "message": "no such path"},
        {"type": "tactic", "at": 1.0, "turn": 1, "tactic": "role-play"},
        {"type": "barge_in_attempt", "at": 1.5, "by": "caller"},
        {"type": "captured", "at": 2.0, "name": "order"},
    ],
}  # fmt: skip


def test_an_unversioned_transcript_reads_its_events_as_their_classes() -> None:
    t = Transcript.from_json(json.dumps(UNVERSIONED))
    assert t.format == FORMAT and t.run_id == "order status" and t.agent_text() == "hello"
    call, turn, error, handoff, tactic, unknown, captured = t.events
    assert call == ev.VoiceCall(recording="recordings/call.wav", rate=8000, at=0.0)
    assert isinstance(turn, ev.VoiceTurn) and turn.interrupted and turn.caller_end == 1.4
    assert error == ev.RunError(kind="worker", message="the worker died")
    assert handoff == ev.HandoffSignalFailed(message="no such path")
    assert tactic == ev.Tactic(turn=1, tactic="role-play", at=1.0)
    assert unknown == ev.CustomEvent(name="barge_in_attempt", data={"by": "caller"}, at=1.5)
    assert captured == ev.CustomEvent(name="captured", data={"name": "order"}, at=2.0), "a field was missing"


def test_an_upgraded_transcript_is_written_in_this_format() -> None:
    again = json.loads(Transcript.from_json(json.dumps(UNVERSIONED)).to_json())
    assert again["format"] == FORMAT
    assert [e["type"] for e in again["events"]] == [
        "voice_call", "voice_turn", "error", "handoff_signal_failed", "tactic", "custom", "custom",
    ]  # fmt: skip


def test_a_transcript_of_a_newer_format_is_refused_by_name() -> None:
    with pytest.raises(
        UsageError, match="newer tamesu \\(results format 5\\); this one reads formats up to 4"
    ):
        Transcript.from_json(json.dumps({"format": 5, "run_id": "r", "events": [{"type": "warp"}]}))


def test_an_unversioned_event_keeps_what_its_class_has_no_field_for_in_its_details() -> None:
    step = ev.upgrade_event(
        {"type": "browser_step", "step": 1, "action": "a11y", "passed": True, "violations": 0}
    )
    assert step == ev.BrowserStep(step=1, action="a11y", details={"violations": 0})
    action = ev.upgrade_event({"type": "browser_action", "action": "press", "ok": "false", "key": "Tab"})
    assert action == ev.BrowserAction(action="press", ok=False, details={"key": "Tab"})


def test_every_kernel_struct_is_left_alone_by_the_cycle_collector() -> None:
    """Plain data that never refers back (tamesu.kernel's docstring): tracking it cost a tenth of a
    text run's CPU. A kernel value that could form a cycle belongs elsewhere."""
    import gc
    import inspect

    from tamesu.kernel import events, messages, outcome, transcript

    tracked = [
        f"{module.__name__}.{name}"
        for module in (events, messages, outcome, transcript)
        for name, cls in vars(module).items()
        if inspect.isclass(cls)
        and issubclass(cls, msgspec.Struct)
        and cls.__module__ == module.__name__
        and cls.__struct_config__.gc
    ]
    assert tracked == []
    assert not gc.is_tracked(Transcript(run_id="r", turns=[Turn(role="agent", text="hi")]))
