"""The realtime target against a loopback server replaying recorded Realtime API event sequences.

The server checks every event the target sends against the ``openai`` package's event models of
the dialect (and the recordings' own events too), so ``session.problems`` is empty only when both
sides spoke the documented shapes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tamesu.audio.codec import decode
from tamesu.errors import TargetError
from tamesu.kernel.events import VoiceTurn
from tamesu.kernel.messages import AgentPartial, Event, RawResponse, ToolCall, ToolResult
from tamesu.secrets import REDACTED
from tamesu.targets.realtime.adapter import model_url
from tamesu.targets.realtime.realtime_events import Dialect, canonical, deep_merge
from tamesu.testing.realtime_server import check_event, load_recording, rejection, serve_realtime_server
from tamesu.voice.voice_metrics import wer

from ..stored import stored_transcripts

FIXTURES = Path(__file__).parent / "fixtures" / "realtime"
KEY = "sk-test-SECRET-0123456789"


def recording(name: str) -> list[dict[str, Any]]:
    return load_recording(FIXTURES / name)


async def audio_target(
    harness: Any, config: dict[str, Any], *, idle: str = "400ms", turn_timeout: float = 10.0
) -> Any:
    """A started audio-mode realtime target whose turns end after ``idle`` of quiet (default 2s)."""
    from tamesu.config.target import parse_target
    from tamesu.targets.realtime.adapter import RealtimeAdapter

    cfg = parse_target({"type": "realtime", "mode": "audio", **config}).model_copy(update={"idle": idle})
    t = RealtimeAdapter(cfg, harness.context(turn_timeout=turn_timeout))
    harness.started.append(t)
    await t.start()
    return t


@pytest.mark.unit
def test_model_is_added_to_the_url_as_a_query_parameter() -> None:
    assert model_url("wss://api.openai.com/v1/realtime", "gpt-realtime") == (
        "wss://api.openai.com/v1/realtime?model=gpt-realtime"
    )
    assert (
        model_url("https://proxy.example/rt?model=old&x=1", "new") == "wss://proxy.example/rt?x=1&model=new"
    )
    assert model_url("http://127.0.0.1:9/rt", None) == "ws://127.0.0.1:9/rt"


@pytest.mark.unit
def test_session_update_merges_into_the_dialects_session_shape() -> None:
    ga = Dialect("ga", mode="audio", audio_format="g711_alaw").session_update(
        {
            "instructions": "Be brief",
            "audio": {"output": {"voice": "marin"}, "input": {"turn_detection": None}},
        }
    )
    assert ga["session"]["type"] == "realtime" and ga["session"]["output_modalities"] == ["audio"]
    assert ga["session"]["audio"]["output"] == {"format": {"type": "audio/pcma"}, "voice": "marin"}
    assert ga["session"]["audio"]["input"] == {"format": {"type": "audio/pcma"}, "turn_detection": None}
    assert not Dialect("ga", mode="audio").server_vad(ga["session"])
    beta = Dialect("beta", mode="text").session_update({"tools": [{"type": "function", "name": "x"}]})
    assert beta["session"] == {"modalities": ["text"], "tools": [{"type": "function", "name": "x"}]}
    assert Dialect("beta").headers() == {"OpenAI-Beta": "realtime=v1"} and Dialect("ga").headers() == {}
    assert deep_merge({"a": {"b": 1, "c": [1]}}, {"a": {"c": [2]}}) == {"a": {"b": 1, "c": [2]}}


@pytest.mark.unit
@pytest.mark.parametrize("dialect", ["ga", "beta"])
@pytest.mark.parametrize("mode", ["text", "audio"])
@pytest.mark.parametrize("fmt", ["pcm16", "g711_ulaw", "g711_alaw"])
def test_every_client_event_written_is_a_documented_event(dialect: Any, mode: Any, fmt: str) -> None:
    pytest.importorskip("openai")
    d = Dialect(dialect, mode=mode, audio_format=fmt)
    events = [
        d.session_update({"instructions": "hi"}),
        d.user_text("hello"),
        d.response_create(),
        d.function_output("call_1", '{"ok": true}'),
        d.append(b"\x00\x01" * 160),
        d.commit(),
    ]
    assert [check_event(e, dialect, "client") for e in events] == [None] * len(events)


@pytest.mark.unit
def test_beta_event_names_read_as_ga_names() -> None:
    assert canonical("response.audio_transcript.done") == "response.output_audio_transcript.done"
    assert canonical("response.text.delta") == "response.output_text.delta"
    assert canonical("response.done") == "response.done"


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.jsonl")))
def test_recordings_hold_only_documented_server_events(name: str) -> None:
    pytest.importorskip("openai")
    dialect = "beta" if name.startswith("beta") else "ga"
    for step in recording(name):
        if "type" in step:
            event = {"event_id": "evt", **step}
            if isinstance(event.get("delta"), dict):
                event["delta"] = "AAAA"
            assert check_event(event, dialect, "server") is None, step


@pytest.mark.integration
async def test_ga_text_turns_tool_results_and_the_done_tool(harness) -> None:
    async with serve_realtime_server(recording("ga_text_tools.jsonl"), api_key=KEY) as server:
        t = await harness.target(
            {
                "type": "realtime",
                "url": server.url,
                "model": "gpt-realtime",
                "headers": {"Authorization": "Bearer {{secrets.OPENAI_API_KEY}}"},
                "session_update": {"instructions": "You are the Mochi Shoes support agent."},
                "tool_results": {"lookup_order": {"id": "{{args.order_id}}", "status": "shipped"}},
            },
            secrets={"OPENAI_API_KEY": KEY},
        )
        first = await harness.say(t, "What is your return window?")
        second = await harness.say(t, "Where is order A1?")
        third = await harness.say(t, "Thanks, bye")
        with pytest.raises(TargetError, match="already ended"):
            await harness.say(t, "hello?")
        await t.stop()
    session = server.sessions[0]
    assert session.problems == []
    assert session.path == "/v1/realtime?model=gpt-realtime"
    assert session.headers["Authorization"] == f"Bearer {KEY}" and "OpenAI-Beta" not in session.headers
    update = session.of_type("session.update")[0]["session"]
    assert update["instructions"] == "You are the Mochi Shoes support agent."
    assert update["output_modalities"] == ["text"]

    turn = first[-1]
    assert turn.text == "You can return shoes within 30 days." and not turn.done
    assert [p.text for p in harness.of_type(first, AgentPartial)] == [
        "You can return shoes ",
        "within 30 days.",
    ]
    raw_types = [m.body["type"] for m in harness.of_type(first, RawResponse)]
    assert raw_types[:2] == ["session.created", "session.updated"] and "response.done" in raw_types
    assert not [k for k in raw_types if k.endswith(".delta")]
    assert turn.sent_at <= turn.first_byte_at <= turn.end_at

    assert [(c.name, c.args, c.id) for c in harness.of_type(second, ToolCall)] == [
        ("lookup_order", {"order_id": "A1"}, "call_A1")
    ]
    assert [r.result for r in harness.of_type(second, ToolResult)] == [{"id": "A1", "status": "shipped"}]
    assert second[-1].text == "Order A1 has shipped."
    outputs = [e["item"] for e in session.received if e.get("item", {}).get("type") == "function_call_output"]
    assert outputs[0] == {
        "type": "function_call_output",
        "call_id": "call_A1",
        "output": json.dumps({"id": "A1", "status": "shipped"}),
    }

    assert third[-1].done and third[-1].text == "Glad I could help, goodbye!"
    assert [(c.name, c.args) for c in harness.of_type(third, ToolCall)] == [
        ("end_session", {"reason": "resolved"})
    ]
    assert [r.result for r in harness.of_type(third, ToolResult)] == [{"ok": True}]
    assert len(session.of_type("response.create")) == 4


@pytest.mark.unit
def test_flat_session_keys_move_to_where_each_dialect_has_them() -> None:
    flat = {
        "voice": "alloy",
        "modalities": ["text", "audio"],
        "input_audio_format": "g711_ulaw",
        "turn_detection": {"silence_duration_ms": 400},
        "max_response_output_tokens": 200,
    }
    ga = Dialect("ga").session_shape(flat)
    assert ga == {
        "output_modalities": ["audio"],
        "max_output_tokens": 200,
        "audio": {
            "output": {"voice": "alloy"},
            "input": {
                "format": {"type": "audio/pcmu"},
                "turn_detection": {"type": "server_vad", "silence_duration_ms": 400},
            },
        },
    }
    assert Dialect("beta").session_shape(ga) == {
        **flat,
        "turn_detection": ga["audio"]["input"]["turn_detection"],
    }
    assert Dialect("beta").session_shape(flat) == flat
    both = {"voice": "alloy", "audio": {"output": {"voice": "marin"}}, "type": "realtime"}
    assert Dialect("ga").session_shape(both) == {"audio": {"output": {"voice": "marin"}}, "type": "realtime"}
    assert Dialect("beta").session_shape(both) == {"voice": "alloy"}


@pytest.mark.unit
def test_the_server_rejects_a_key_the_session_does_not_have_as_the_api_does() -> None:
    pytest.importorskip("openai")
    event = {"type": "session.update", "session": {"type": "realtime", "voice": "alloy"}}
    assert rejection(event, "ga", "client") == (
        "unknown_parameter",
        "session.voice",
        "Unknown parameter: 'session.voice'.",
    )
    assert rejection(Dialect("ga").session_update({"voice": "alloy"}), "ga", "client") is None


@pytest.mark.integration
async def test_the_references_flat_session_keys_are_accepted_by_the_ga_api(harness) -> None:
    async with serve_realtime_server(recording("ga_session_keys.jsonl")) as server:
        t = await harness.target(
            {
                "type": "realtime",
                "url": server.url,
                "session_update": {
                    "instructions": "You are the support agent",
                    "voice": "alloy",
                    "modalities": ["text"],
                    "input_audio_format": "g711_ulaw",
                    "output_audio_format": "g711_ulaw",
                    "turn_detection": {"type": "server_vad", "silence_duration_ms": 400},
                },
            }
        )
        out = await harness.say(t, "Hi")
        await t.stop()
    assert server.sessions[0].problems == []
    assert out[-1].text == "Hello."
    assert (
        server.sessions[0].of_type("session.update")[0]["session"]["instructions"]
        == "You are the support agent"
    )


@pytest.mark.integration
async def test_beta_tool_calls_are_named_from_their_output_item(harness) -> None:
    async with serve_realtime_server(recording("beta_text_tools.jsonl"), dialect="beta") as server:
        t = await harness.target(
            {
                "type": "realtime",
                "url": server.url,
                "protocol": "beta",
                "tool_results": {"lookup_order": {"order": "{{args.order_id}}", "eta": "Friday"}},
            }
        )
        out = await harness.say(t, "Where is order C3?")
        await t.stop()
    assert server.sessions[0].problems == []
    assert [(c.name, c.args, c.id) for c in harness.of_type(out, ToolCall)] == [
        ("lookup_order", {"order_id": "C3"}, "call_C1")
    ]
    assert [r.result for r in harness.of_type(out, ToolResult)] == [{"order": "C3", "eta": "Friday"}]
    assert not [m for m in harness.of_type(out, RawResponse) if m.body.get("event") == "unknown_tool"]
    assert out[-1].text == "Order C3 arrives on Friday."


@pytest.mark.integration
async def test_fuzz_tools_replace_the_configured_result(harness) -> None:
    from tamesu.config.target import parse_target
    from tamesu.targets.realtime.adapter import RealtimeAdapter

    async with serve_realtime_server(recording("ga_text_tools.jsonl")) as server:
        ctx = harness.context()
        ctx.fuzz = {"lookup_order": "error"}
        config = {
            "type": "realtime",
            "url": server.url,
            "tool_results": {"lookup_order": {"status": "shipped"}},
        }
        t = RealtimeAdapter(parse_target(config), ctx)
        harness.started.append(t)
        await t.start()
        await harness.say(t, "What is your return window?")
        out = await harness.say(t, "Where is order A1?")
        await t.stop()
    assert [r.result for r in harness.of_type(out, ToolResult)] == [
        {"error": "internal server error", "code": 500, "tool": "lookup_order"}
    ]
    assert {"event": "fuzz", "tool": "lookup_order", "mode": "error"} in [
        m.body for m in harness.of_type(out, RawResponse)
    ]
    sent = [
        e["item"]["output"]
        for e in server.sessions[0].of_type("conversation.item.create")
        if "output" in e["item"]
    ]
    assert json.loads(sent[0])["code"] == 500


@pytest.mark.integration
async def test_beta_dialect_sends_the_beta_header_and_reads_text_events(harness) -> None:
    async with serve_realtime_server(recording("beta_text.jsonl"), dialect="beta") as server:
        t = await harness.target(
            {
                "type": "realtime",
                "url": server.url,
                "protocol": "beta",
                "session_update": {"instructions": "Be brief."},
            }
        )
        out = await harness.say(t, "Do you ship to Lisbon?")
        await t.stop()
    session = server.sessions[0]
    assert session.problems == []
    assert session.headers["OpenAI-Beta"] == "realtime=v1"
    assert session.of_type("session.update")[0]["session"] == {
        "modalities": ["text"],
        "instructions": "Be brief.",
    }
    assert out[-1].text == "Yes, we ship to Lisbon."
    assert [p.text for p in harness.of_type(out, AgentPartial)] == ["Yes, we ship ", "to Lisbon."]


@pytest.mark.timing
@pytest.mark.virtual_time
@pytest.mark.integration
async def test_ga_audio_turn_with_server_vad_and_the_apis_transcript(harness, fake_voice) -> None:
    async with serve_realtime_server(recording("ga_audio.jsonl")) as server:
        t = await audio_target(harness, {"url": server.url})
        out = await harness.say(t, "Where is my order?")
        await t.stop()
    session = server.sessions[0]
    assert session.problems == []
    appends = session.of_type("input_audio_buffer.append")
    assert {len(base64.b64decode(e["audio"])) for e in appends} == {
        2 * 24000 // 50
    }  # 20 ms of pcm16 at 24 kHz
    assert not session.of_type("input_audio_buffer.commit") and not session.of_type("response.create")
    turn = out[-1]
    assert turn.text == "Your order shipped yesterday."
    agent = [a for a in turn.audio if a.channel == "agent"]
    caller = [a for a in turn.audio if a.channel == "caller"]
    assert caller and agent and agent[0].start > caller[-1].end  # the agent answered after the caller
    assert 0.4 <= sum(a.end - a.start for a in agent) <= 0.8  # three 200 ms tone deltas, played
    assert turn.sent_at is not None and turn.first_audio_at is not None and turn.first_audio_at > turn.sent_at
    kinds = [m.body["type"] for m in harness.of_type(out, RawResponse)]
    assert "conversation.item.input_audio_transcription.completed" in kinds
    heard = [m.event for m in out if isinstance(m, Event) and isinstance(m.event, VoiceTurn)]
    assert heard[-1].caller_heard == "Where is my order?"  # the API's transcript of the caller (attribution)
    assert "input_audio_buffer.speech_stopped" in kinds and not [k for k in kinds if k.endswith(".delta")]


@pytest.mark.virtual_time
@pytest.mark.integration
async def test_a_response_in_progress_keeps_the_audio_turn_open_past_idle(harness, fake_voice) -> None:
    """Between response.created and response.done the model is answering: a model slower than idle is
    still answering, not finished."""
    steps = recording("ga_audio.jsonl")
    created = next(i for i, s in enumerate(steps) if s.get("type") == "response.created")
    steps.insert(created + 1, {"sleep_ms": 2000})  # five times idle before the first word
    async with serve_realtime_server(steps) as server:
        t = await audio_target(harness, {"url": server.url})
        out = await harness.say(t, "Where is my order?")
        await t.stop()
    assert server.sessions[0].problems == []
    assert out[-1].text == "Your order shipped yesterday."


@pytest.mark.timing
@pytest.mark.virtual_time
@pytest.mark.integration
async def test_beta_audio_in_g711_ulaw_with_a_call_and_the_done_tool(harness, fake_voice) -> None:
    async with serve_realtime_server(recording("beta_audio_ulaw.jsonl"), dialect="beta") as server:
        t = await audio_target(
            harness,
            {
                "url": server.url,
                "protocol": "beta",
                "audio_format": "g711_ulaw",
                "done_tool": "hang_up",
                "tool_results": {"lookup_order": {"order": "{{args.order_id}}", "eta": "tomorrow"}},
            },
        )
        out = await harness.say(t, "Where is order B7?")
        await t.stop()
    session = server.sessions[0]
    assert session.problems == []
    appended = b"".join(base64.b64decode(e["audio"]) for e in session.of_type("input_audio_buffer.append"))
    assert {len(base64.b64decode(e["audio"])) for e in session.of_type("input_audio_buffer.append")} == {160}
    assert np.abs(decode(appended, "mulaw")).max() > 1000  # speech, one mu-law byte per sample at 8 kHz
    assert [c.name for c in harness.of_type(out, ToolCall)] == ["lookup_order", "hang_up"]
    assert harness.of_type(out, ToolResult)[0].result == {"order": "B7", "eta": "tomorrow"}
    outputs = [e["item"] for e in session.of_type("conversation.item.create")]
    assert outputs[0]["call_id"] == "call_B1" and json.loads(outputs[0]["output"])["order"] == "B7"
    turn = out[-1]
    assert turn.done and turn.text == "Order B7 is on its way. Goodbye!"
    assert 0.4 <= sum(a.end - a.start for a in turn.audio if a.channel == "agent") <= 0.8


@pytest.mark.timing
@pytest.mark.virtual_time
@pytest.mark.integration
async def test_audio_with_turn_detection_off_commits_and_asks_for_the_response(harness, fake_voice) -> None:
    steps = [
        s
        for s in recording("ga_audio.jsonl")
        if s.get("type") not in ("input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped")
    ]
    steps[1] = {
        "expect": "session.update",
        "match": {"session": {"audio": {"input": {"turn_detection": None}}}},
    }
    steps[3] = {"expect": "input_audio_buffer.commit"}
    steps.insert(4, {"expect": "response.create"})
    async with serve_realtime_server(steps) as server:
        t = await audio_target(
            harness, {"url": server.url, "session_update": {"audio": {"input": {"turn_detection": None}}}}
        )
        out = await harness.say(t, "Where is my order?")
        await t.stop()
    assert server.sessions[0].problems == []
    assert out[-1].text == "Your order shipped yesterday."


@pytest.mark.integration
async def test_a_refused_session_update_is_an_error_without_the_key(harness) -> None:
    async with serve_realtime_server(recording("ga_errors.jsonl")) as server:
        with pytest.raises(TargetError) as caught:
            await harness.target(
                {"type": "realtime", "url": server.url, "headers": {"Authorization": "Bearer {{secrets.K}}"}},
                secrets={"K": KEY},
            )
    message = str(caught.value)
    assert "invalid_request_error (invalid_value)" in message and "unknown voice" in message
    assert KEY not in message and REDACTED in message
    assert not caught.value.retryable


@pytest.mark.integration
async def test_a_wrong_key_refused_at_the_handshake_is_redacted(harness) -> None:
    async with serve_realtime_server(recording("ga_text_tools.jsonl"), api_key="sk-the-right-one") as server:
        with pytest.raises(TargetError) as caught:
            await harness.target(
                {"type": "realtime", "url": server.url, "headers": {"Authorization": "Bearer {{secrets.K}}"}},
                secrets={"K": KEY},
            )
    assert "answered 401" in str(caught.value) and KEY not in str(caught.value)
    assert not caught.value.retryable


@pytest.mark.integration
async def test_a_failed_response_is_a_retryable_error(harness) -> None:
    async with serve_realtime_server(recording("ga_failed_response.jsonl")) as server:
        t = await harness.target({"type": "realtime", "url": server.url})
        with pytest.raises(TargetError, match=r"response failed \(server_error: internal_error\)") as caught:
            await harness.say(t, "hello")
        await t.stop()
    assert caught.value.retryable


@pytest.mark.integration
async def test_no_response_within_turn_timeout(harness) -> None:
    steps = recording("beta_text.jsonl")[:3]
    async with serve_realtime_server(steps, dialect="beta") as server:
        t = await harness.target(
            {"type": "realtime", "url": server.url, "protocol": "beta"}, turn_timeout=0.3
        )
        with pytest.raises(TargetError, match=r"no response\.done within 300ms"):
            await harness.say(t, "hello")
        await t.stop()


@pytest.mark.integration
async def test_an_unreachable_api_is_retried_then_reported(harness, closed_port) -> None:
    with pytest.raises(TargetError, match=r"connection refused .* after 2 attempts") as caught:
        await harness.target(
            {
                "type": "realtime",
                "url": f"ws://127.0.0.1:{closed_port}/v1/realtime",
                "connect": {"attempts": 2, "backoff": "10ms"},
            }
        )
    assert caught.value.retryable


@pytest.fixture
def fresh_speech(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Piper draws its voice's noise from its model session's generator, which moves on with every
    line said, so a line sounds different after other tests have spoken (and Whisper may hear it
    differently): fresh engines and empty caches make this test's speech the same in any order."""
    from tamesu.audio import engines
    from tamesu.voice import speech

    engines.shutdown()
    engines.configure_cache()
    monkeypatch.setattr(speech, "_caches", type(speech._caches)())
    yield
    engines.shutdown()


@pytest.mark.timing
@pytest.mark.virtual_time
@pytest.mark.slow
async def test_audio_with_real_speech_both_ways_and_our_transcription(harness, fresh_speech: None) -> None:
    """Piper speaks the caller, server VAD hears it; the API's audio (Piper too) is transcribed by Whisper."""
    steps, spoken = [], False
    for step in recording("ga_audio.jsonl"):
        kind = str(step.get("type"))
        if "transcript" in kind or (kind == "response.output_audio.delta" and spoken):
            continue
        if kind == "response.output_audio.delta":
            step, spoken = {**step, "delta": {"$audio": {"say": "Your order shipped yesterday."}}}, True
        steps.append(step)
    async with serve_realtime_server(steps) as server:
        t = await audio_target(
            harness, {"url": server.url, "transcript_source": "stt"}, idle="1s", turn_timeout=30
        )
        out = await harness.say(t, "Hello, where is my order?")
        await t.stop()
    assert server.sessions[0].problems == []
    assert wer("Your order shipped yesterday.", out[-1].text) <= 0.5, out[-1].text  # our Whisper of its Piper
    turn_event = next(m.event for m in out if isinstance(m, Event) and isinstance(m.event, VoiceTurn))
    assert turn_event.text_source == "stt"


@pytest.mark.integration
async def test_the_example_suite_passes_and_the_key_is_nowhere_in_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu import run_async
    from tamesu.config.loader import load_suite

    suite = Path(__file__).resolve().parents[2] / "examples" / "realtime" / "suite.yaml"
    assert len(load_suite(suite).suite.tests) == 3
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    steps = recording("ga_text_tools.jsonl")
    echo = {  # a proxy that echoes the credential back in an event
        "type": "conversation.item.added",
        "previous_item_id": None,
        "item": {
            "id": "item_x",
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": f"key={KEY}"}],
        },
    }
    steps.insert(3, echo)
    async with serve_realtime_server(steps, api_key=KEY) as server:
        monkeypatch.setenv("REALTIME_URL", server.url)
        result = await run_async(suite, filter="order status and goodbye", output=tmp_path / "out")
    assert result.exit_code == 0, [
        (r.error, [a for a in r.assertions if not a.passed]) for r in result.results
    ]
    session = server.sessions[0]
    assert session.problems == [] and session.headers["Authorization"] == f"Bearer {KEY}"
    assert session.path == "/v1/realtime?model=gpt-realtime"
    update = session.of_type("session.update")[0]["session"]
    assert update["instructions"].startswith("You are the Mochi Shoes support agent.")
    assert [tool["name"] for tool in update["tools"]] == ["lookup_order", "end_session"]
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.name == "transcripts.jsonl" for p in written)
    assert not [p for p in written if KEY in p.read_text(encoding="utf-8", errors="replace")]
    [transcript] = stored_transcripts(next(p for p in written if p.name == "transcripts.jsonl").parent)
    raw = json.dumps(transcript["turns"][1]["raw"])
    assert "conversation.item.added" in raw and f"key={REDACTED}" in raw


@pytest.mark.integration
async def test_a_call_without_a_configured_result_gets_an_error_it_can_read(harness) -> None:
    async with serve_realtime_server(recording("ga_text_tools.jsonl")) as server:
        t = await harness.target({"type": "realtime", "url": server.url})
        await harness.say(t, "What is your return window?")
        out = await harness.say(t, "Where is order A1?")
        await t.stop()
    assert [r.result for r in harness.of_type(out, ToolResult)] == [
        {"error": "no result configured for lookup_order"}
    ]
    assert {"event": "unknown_tool", "name": "lookup_order"} in [
        m.body for m in harness.of_type(out, RawResponse)
    ]
    assert out[-1].text == "Order A1 has shipped."


@pytest.mark.unit
def test_the_tests_mode_overrides_the_targets(harness) -> None:
    from tamesu.config.suite import Test
    from tamesu.config.target import parse_target
    from tamesu.targets.pipecat.adapter import PipecatAdapter
    from tamesu.targets.realtime.adapter import RealtimeAdapter

    ctx = harness.context()
    ctx.test = Test.model_validate({"name": "t", "target": "api", "mode": "audio"})
    t = RealtimeAdapter(parse_target({"type": "realtime", "mode": "text"}), ctx)
    assert t.audio and t.dialect.base_session()["output_modalities"] == ["audio"]
    p = PipecatAdapter(parse_target({"type": "pipecat", "url": "ws://x", "mode": "text"}), ctx)
    assert p.audio
