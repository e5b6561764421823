"""The pipecat target: its wire format against pipecat's own serializer, edge cases against a small
fake bot, and the real thing: the example Pipecat bot (websocket server transport, protobuf
serializer, RTVI, an OpenAI LLM service on tamesu's scripted model server; Silero, Whisper and
Piper in audio mode) started in the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tamesu.errors import TargetError
from tamesu.kernel.events import VoiceTurn
from tamesu.kernel.messages import AgentPartial, Event, RawResponse, ToolCall, ToolResult
from tamesu.targets.pipecat.pipecat_wire import (
    WireFrame,
    audio_frame,
    decode_frame,
    encode_frame,
    message_frame,
    rtvi,
    transcription_frame,
)
from tamesu.voice.voice_metrics import wer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
RTVI = "rtvi-ai"


def bot_module() -> Any:
    """examples/pipecat/bot.py as a module (examples/ is not a package)."""
    pytest.importorskip("pipecat")
    name = "tamesu_example_pipecat_bot"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "pipecat" / "bot.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level="ERROR")
    return sys.modules[name]


# The wire format.


@pytest.mark.unit
def test_frames_round_trip_through_our_codec() -> None:
    frame = decode_frame(audio_frame(b"\x01\x00\xff\x7f", 16000))
    assert frame == WireFrame(
        "audio", {"audio": b"\x01\x00\xff\x7f", "sample_rate": 16000, "num_channels": 1}
    )
    text = decode_frame(transcription_frame("héllo", user_id="u1", timestamp="2025-01-01T00:00:00Z"))
    assert text == WireFrame(
        "transcription", {"text": "héllo", "user_id": "u1", "timestamp": "2025-01-01T00:00:00Z"}
    )
    message = decode_frame(message_frame(rtvi("send-text", {"content": "hi"}, id="7")))
    assert message is not None and json.loads(message.get("data")) == {
        "label": RTVI,
        "type": "send-text",
        "id": "7",
        "data": {"content": "hi"},
    }
    assert decode_frame(encode_frame("interruption", id=300, name="InterruptionFrame#1")) == WireFrame(
        "interruption", {"id": 300, "name": "InterruptionFrame#1"}
    )
    assert decode_frame("a text frame") is None and decode_frame(b"\x0a\xff") is None


@pytest.mark.unit
def test_our_frames_are_pipecats_frames() -> None:
    pytest.importorskip("pipecat")
    from pipecat.frames.protobufs import frames_pb2

    ours = frames_pb2.Frame.FromString(audio_frame(b"\x00\x01" * 320, 16000))
    assert ours.WhichOneof("frame") == "audio"
    assert (ours.audio.sample_rate, ours.audio.num_channels, len(ours.audio.audio)) == (16000, 1, 640)
    said = frames_pb2.Frame.FromString(transcription_frame("where is A1", user_id="tamesu", timestamp="t"))
    assert (said.transcription.text, said.transcription.user_id) == ("where is A1", "tamesu")
    data = json.loads(frames_pb2.Frame.FromString(message_frame({"type": "x", "data": [1]})).message.data)
    assert data == {"type": "x", "data": [1]}

    theirs = frames_pb2.Frame()
    theirs.audio.id = 99
    theirs.audio.name = "OutputAudioRawFrame#3"
    theirs.audio.audio = b"\x10\x00" * 160
    theirs.audio.sample_rate = 24000
    theirs.audio.num_channels = 1
    theirs.audio.pts = 12345
    frame = decode_frame(theirs.SerializeToString())
    assert frame is not None and frame.kind == "audio"
    assert (frame.get("sample_rate"), frame.get("pts"), len(frame.get("audio"))) == (24000, 12345, 320)
    msg = frames_pb2.Frame()
    msg.message.data = json.dumps({"label": RTVI, "type": "bot-ready"})
    decoded = decode_frame(msg.SerializeToString())
    assert decoded is not None and json.loads(decoded.get("data"))["type"] == "bot-ready"


@pytest.mark.unit
async def test_pipecats_serializer_reads_what_tamesu_sends() -> None:
    pytest.importorskip("pipecat")
    from pipecat.frames.frames import InputAudioRawFrame, InputTransportMessageFrame, TranscriptionFrame
    from pipecat.serializers.protobuf import ProtobufFrameSerializer

    serializer = ProtobufFrameSerializer()
    audio = await serializer.deserialize(audio_frame(b"\x00\x10" * 160, 16000))
    assert isinstance(audio, InputAudioRawFrame) and audio.sample_rate == 16000 and len(audio.audio) == 320
    said = await serializer.deserialize(transcription_frame("hello", user_id="tamesu", timestamp="now"))
    assert isinstance(said, TranscriptionFrame) and said.text == "hello"
    ready = await serializer.deserialize(message_frame(rtvi("client-ready", {"version": "2.2.0"})))
    assert isinstance(ready, InputTransportMessageFrame) and ready.message["type"] == "client-ready"


# A small fake bot for the edges a real one rarely shows.

Script = Callable[[Any, Any], Awaitable[None]]


@contextlib.asynccontextmanager
async def fake_bot(script: Script) -> AsyncIterator[str]:
    """A websocket server speaking pipecat frames; ``script(ws, first_frame)`` plays the bot."""
    from websockets.asyncio.server import serve

    async def handle(ws: Any) -> None:
        with contextlib.suppress(Exception):
            await script(ws, decode_frame(await ws.recv()))
            await ws.wait_closed()

    async with serve(handle, "127.0.0.1", 0) as server:
        yield f"ws://127.0.0.1:{next(iter(server.sockets)).getsockname()[1]}"


async def send_rtvi(ws: Any, kind: str, data: Any = None) -> None:
    body: dict[str, Any] = {"label": RTVI, "type": kind}
    if data is not None:
        body["data"] = data
    await ws.send(message_frame(body))


async def next_message(ws: Any) -> dict[str, Any]:
    while True:
        frame = decode_frame(await ws.recv())
        if frame is not None and frame.kind == "message":
            return json.loads(frame.get("data"))


@pytest.mark.integration
async def test_a_bot_that_greets_speaks_first(harness) -> None:
    async def bot(ws: Any, ready: Any) -> None:
        await send_rtvi(ws, "bot-ready", {"version": "2.2.0"})
        for kind, data in [
            ("bot-llm-started", None),
            ("bot-llm-text", {"text": "Hi, Mochi here!"}),
            ("bot-llm-stopped", None),
        ]:
            await send_rtvi(ws, kind, data)
        sent = await next_message(ws)
        assert sent["type"] == "send-text"
        await send_rtvi(ws, "bot-llm-started")
        await send_rtvi(ws, "bot-llm-text", {"text": f"You said {sent['data']['content']}"})
        await send_rtvi(ws, "bot-llm-stopped")

    async with fake_bot(bot) as url:
        t = await harness.target({"type": "pipecat", "url": url, "idle": "500ms"})
        assert t.rtvi and t.agent_speaks_first
        greeting = await harness.say(t, None)
        answer = await harness.say(t, "hello")
    assert greeting[-1].text == "Hi, Mochi here!"
    assert answer[-1].text == "You said hello" and not answer[-1].done


@pytest.fixture
def fake_voice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller speaks a second of speech-like sound instead of TTS: the turn-taking is under test."""
    from tamesu.audio.synth import speech_like
    from tamesu.voice.speech import make_utterance

    async def render_speech(text: str, rate: int, **_: Any) -> Any:
        return make_utterance(speech_like(1.0, rate, seed=len(text)), rate, text=text)

    monkeypatch.setattr("tamesu.voice.caller.render_speech", render_speech)


@pytest.mark.virtual_time
@pytest.mark.integration
async def test_a_bot_composing_its_answer_keeps_the_audio_turn_open_past_idle(harness, fake_voice) -> None:
    """Between ``bot-llm-started`` and ``bot-tts-stopped`` the bot is answering: a model or TTS slower than
    ``idle`` is thinking, not the end of the turn (a loaded machine made the real bot's turns end empty)."""
    from tamesu.audio.synth import speech_like

    async def bot(ws: Any, ready: Any) -> None:
        await send_rtvi(ws, "bot-ready", {"version": "2.2.0"})
        heard = 0
        while heard < 25:  # half a second of the caller's audio
            frame = decode_frame(await ws.recv())
            heard += frame is not None and frame.kind == "audio"
        await send_rtvi(ws, "user-stopped-speaking")
        await send_rtvi(ws, "bot-llm-started")
        await asyncio.sleep(2.0)  # a slow model: four times idle without a word
        await send_rtvi(ws, "bot-llm-text", {"text": "Your order is on its way."})
        await send_rtvi(ws, "bot-llm-stopped")
        await send_rtvi(ws, "bot-tts-started")
        await asyncio.sleep(1.5)  # a slow TTS
        await send_rtvi(ws, "bot-started-speaking")
        await send_rtvi(ws, "bot-tts-text", {"text": "Your order is on its way."})
        tone = speech_like(0.6, 16000, seed=3).tobytes()
        for i in range(0, len(tone), 640):
            await ws.send(audio_frame(tone[i : i + 640], 16000))
        await send_rtvi(ws, "bot-tts-stopped")
        await send_rtvi(ws, "bot-stopped-speaking")

    async with fake_bot(bot) as url:
        t = await harness.target(
            {"type": "pipecat", "url": url, "mode": "audio", "idle": "500ms", "transcript_source": "agent"},
            turn_timeout=20.0,
        )
        out = await harness.say(t, "Where is my order?")
        await t.stop()
    turn = out[-1]
    assert turn.text == "Your order is on its way."
    assert [a for a in turn.audio if a.channel == "agent"]


@pytest.mark.integration
async def test_without_rtvi_text_goes_as_a_transcription_frame_and_idle_ends_the_turn(harness) -> None:
    heard: list[Any] = []

    async def bot(ws: Any, ready: Any) -> None:
        frame = decode_frame(await ws.recv())
        heard.append(frame)
        await ws.send(encode_frame("text", text="echo: " + frame.get("text")))

    async with fake_bot(bot) as url:
        t = await harness.target({"type": "pipecat", "url": url, "idle": "200ms"})
        assert not t.rtvi and not t.agent_speaks_first
        out = await harness.say(t, "where is A1")
    assert heard[0].kind == "transcription" and heard[0].get("text") == "where is A1"
    assert heard[0].get("user_id") == "tamesu"
    assert out[-1].text == "echo: where is A1"


@pytest.mark.integration
async def test_a_fatal_bot_error_and_a_dropped_socket_are_target_errors(harness) -> None:
    async def failing(ws: Any, ready: Any) -> None:
        await send_rtvi(ws, "bot-ready", {})
        await next_message(ws)
        await send_rtvi(ws, "error", {"error": "LLM key sk-live-123456789 rejected", "fatal": True})

    async def dropping(ws: Any, ready: Any) -> None:
        await send_rtvi(ws, "bot-ready", {})
        await next_message(ws)
        await send_rtvi(ws, "bot-llm-started")
        await ws.close(1011, "pipeline crashed")

    async with fake_bot(failing) as url:
        t = await harness.target(
            {"type": "pipecat", "url": url, "idle": "200ms"}, secrets={"K": "sk-live-123456789"}
        )
        with pytest.raises(TargetError, match="fatal error") as caught:
            await harness.say(t, "hello")
    assert "sk-live-123456789" not in str(caught.value)
    async with fake_bot(dropping) as url:
        t = await harness.target({"type": "pipecat", "url": url, "idle": "200ms"})
        with pytest.raises(TargetError, match=r"mid-turn .*1011"):
            await harness.say(t, "hello")


# The example bot, for real.


@contextlib.asynccontextmanager
async def running_bot(mode: str, *, forever: bool = False) -> AsyncIterator[tuple[str, Any]]:
    """The example bot on a free port with its LLM on a scripted model server; yields (url, server).

    ``forever``: one session after another, as ``bot.py`` serves from the command line.
    """
    bot = bot_module()
    from tamesu.testing.model_server import serve_model_server

    serve = bot.serve_forever if forever else bot.serve_once
    async with serve_model_server() as server:
        port = bot.free_port()
        task = asyncio.create_task(
            serve(port=port, mode=mode, llm_base_url=server.base_url, model="scripted")
        )
        try:
            yield f"ws://127.0.0.1:{port}", server
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)


def bot_config(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "pipecat",
        "url": url,
        "idle": "300ms",
        "connect": {"attempts": 30, "backoff": "100ms", "max_backoff": "200ms"},
        "tool_results": {"lookup_order": {"order_id": "{{args.order_id}}", "status": "shipped"}},
        **extra,
    }


@pytest.mark.integration
async def test_text_mode_with_a_client_side_function_and_the_bot_ending_the_call(harness) -> None:
    from tamesu.testing.model_server import Reply

    async with running_bot("text") as (url, llm):
        llm.queue(
            Reply(tool_calls=[("lookup_order", {"order_id": "A1"})]),
            Reply(text="Your order A1 has shipped."),
            Reply(text="Goodbye!", tool_calls=[("end_call", {})]),
        )
        t = await harness.target(bot_config(url))
        assert t.rtvi and not t.agent_speaks_first
        first = await harness.say(t, "Where is my order A1?")
        second = await harness.say(t, "Thanks, bye")
        await t.stop()
    turn = first[-1]
    assert turn.text == "Your order A1 has shipped." and not turn.done
    assert "".join(p.text for p in harness.of_type(first, AgentPartial)) == "Your order A1 has shipped."
    assert [(c.name, c.args) for c in harness.of_type(first, ToolCall)] == [
        ("lookup_order", {"order_id": "A1"})
    ]
    assert [r.result for r in harness.of_type(first, ToolResult)] == [{"order_id": "A1", "status": "shipped"}]
    assert turn.sent_at < turn.first_byte_at <= turn.end_at
    tool_messages = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert json.loads(tool_messages[0]["content"]) == {"order_id": "A1", "status": "shipped"}
    assert {"role": "user", "content": "Where is my order A1?"} in llm.requests[0]["messages"]

    bye = second[-1]
    assert bye.text == "Goodbye!" and bye.done
    assert [
        (c.name, r.result)
        for c, r in zip(harness.of_type(second, ToolCall), harness.of_type(second, ToolResult))
    ] == [("end_call", {"ended": True})]
    kinds = [m.body.get("type") for m in harness.of_type(second, RawResponse) if isinstance(m.body, dict)]
    assert "llm-function-call-stopped" in kinds


@pytest.mark.integration
async def test_fuzz_tools_change_what_the_bots_llm_gets_back(harness) -> None:
    from tamesu.config.target import parse_target
    from tamesu.targets.pipecat.adapter import PipecatAdapter
    from tamesu.testing.model_server import Reply

    async with running_bot("text") as (url, llm):
        llm.queue(
            Reply(tool_calls=[("lookup_order", {"order_id": "A1"})]), Reply(text="Sorry, I cannot see it.")
        )
        ctx = harness.context()
        ctx.fuzz = {"lookup_order": "null"}
        t = PipecatAdapter(parse_target(bot_config(url)), ctx)
        harness.started.append(t)
        await t.start()
        out = await harness.say(t, "Where is A1?")
        await t.stop()
    assert [r.result for r in harness.of_type(out, ToolResult)] == [None]
    assert {"event": "fuzz", "tool": "lookup_order", "mode": "null"} in [
        m.body for m in harness.of_type(out, RawResponse)
    ]
    tool_messages = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] in ("null", '"null"')
    assert out[-1].text == "Sorry, I cannot see it."


@contextlib.contextmanager
def rejections() -> Any:
    """Counts the clients the bot's websocket server turns away (it logs each), and wakes waiters."""
    from loguru import logger

    seen: dict[str, Any] = {"count": 0, "changed": asyncio.Event()}

    def sink(message: Any) -> None:
        if "Rejecting client" in message.record["message"]:
            seen["count"] += 1
            seen["changed"].set()

    handler = logger.add(sink, level="WARNING")
    try:
        yield seen
    finally:
        logger.remove(handler)


async def rejected(seen: dict[str, Any], count: int) -> None:
    while seen["count"] < count:
        seen["changed"].clear()
        await asyncio.wait_for(seen["changed"].wait(), 20)


@pytest.mark.integration
async def test_a_bot_busy_with_another_client_is_retried_until_it_is_free(harness) -> None:
    """Pipecat's websocket server serves one client and closes the others with 1013 (Try Again Later)."""
    from tamesu.testing.model_server import Reply

    async with running_bot("text", forever=True) as (url, llm):
        llm.queue(Reply(text="Hello from the first session."), Reply(text="Hello from the second."))
        with rejections() as seen:
            first = await harness.target(bot_config(url))
            quick = {"attempts": 2, "backoff": "50ms"}
            with pytest.raises(TargetError) as caught:
                await harness.target(bot_config(url, connect=quick))
            await rejected(seen, 2)
            waiting = asyncio.create_task(
                harness.target(
                    bot_config(url, connect={"attempts": 60, "backoff": "100ms", "max_backoff": "300ms"})
                )
            )
            await rejected(seen, 3)
            assert not waiting.done()
            assert (await harness.say(first, "Hi"))[-1].text == "Hello from the first session."
            await first.stop()
            second = await asyncio.wait_for(waiting, 30)
            out = await harness.say(second, "Hi again")
            await second.stop()
    message = str(caught.value)
    assert (
        "refused the session (it closed the websocket with 1013 Try Again Later) after 2 attempts" in message
    )
    assert "--per-target 1" in message and caught.value.retryable
    assert out[-1].text == "Hello from the second."
    assert second.ctx.faults.counts["refused"] >= 1


@pytest.mark.integration
async def test_several_tests_against_one_bot_pass_at_the_default_concurrency(tmp_path: Path) -> None:
    from tamesu import run_async

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "suite: one-bot\n"
        "targets:\n"
        '  bot: { type: pipecat, url: "${BOT_URL}", idle: 300ms,\n'
        "         connect: { attempts: 60, backoff: 100ms, max_backoff: 300ms } }\n"
        "tests:\n"
        + "".join(
            f"  - {{ name: t{i}, target: bot, scenario: {{ script: [ {{ say: hello }} ] }}, assert: [ {{ contains: OK }} ] }}\n"
            for i in range(3)
        )
    )
    async with running_bot("text", forever=True) as (url, _llm):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BOT_URL", url)
            result = await run_async(suite, output=tmp_path / "runs")
    assert [r.outcome for r in result.results] == ["passed"] * 3, [r.error for r in result.results]
    assert result.exit_code == 0


@pytest.mark.integration
async def test_a_bot_that_serves_one_session_gets_one_at_a_time_without_any_connect_settings(
    tmp_path: Path,
) -> None:
    """The bot's websocket server turns the second client away with 1013: tamesu lowers the
    target's concurrency to one, queues its runs and reports the concurrency it held."""
    from tamesu import run_async

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "suite: one-bot\n"
        "targets:\n"
        '  bot: { type: pipecat, url: "${BOT_URL}", idle: 300ms }\n'
        "tests:\n"
        + "".join(
            f"  - {{ name: t{i}, target: bot, scenario: {{ script: [ {{ say: hello }} ] }}, assert: [ {{ contains: OK }} ] }}\n"
            for i in range(3)
        )
    )
    report = tmp_path / "report.json"
    async with running_bot("text", forever=True) as (url, _llm):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BOT_URL", url)
            result = await run_async(suite, output=tmp_path / "runs", json=report)
    assert [r.outcome for r in result.results] == ["passed"] * 3, [
        (r.error, [a.message for a in r.assertions if not a.passed], r.turns) for r in result.results
    ]
    assert [r.attempt for r in result.results] == [1, 1, 1]
    assert result.exit_code == 0
    [held] = result.capacity
    assert (held["target"], held["concurrency"]) == ("bot", 4) and held["refusals"] >= 1
    assert 1 <= held["held"] < 4, "lowered; to one unless the sessions happened not to overlap again"
    assert json.loads(report.read_text())["capacity"] == result.capacity


@pytest.mark.slow
@pytest.mark.parametrize("source", ["agent", "stt"])
async def test_audio_mode_speaks_to_the_bots_vad_and_stt_and_hears_its_tts(harness, source: str) -> None:
    from tamesu.testing.model_server import Reply

    async with running_bot("audio") as (url, llm):
        llm.queue(
            Reply(tool_calls=[("lookup_order", {"order_id": "A1"})]), Reply(text="Your order is on its way.")
        )
        t = await harness.target(
            bot_config(url, mode="audio", idle="2s", transcript_source=source), turn_timeout=30.0
        )
        out = await harness.say(t, "Where is my order?")
        await t.stop()
    turn = out[-1]
    said = [
        m.body["data"]["text"]
        for m in harness.of_type(out, RawResponse)
        if isinstance(m.body, dict) and m.body.get("type") == "user-transcription"
    ]
    assert any(text.strip() for text in said), said  # the bot's own STT heard speech from tamesu's voice
    heard = [m.event for m in out if isinstance(m, Event) and isinstance(m.event, VoiceTurn)]
    assert heard and (heard[-1].caller_heard or "").strip(), "kept as its transcript of the caller"
    assert [c.name for c in harness.of_type(out, ToolCall)] == ["lookup_order"]
    if source == "agent":
        assert turn.text == "Your order is on its way."  # the bot's bot-tts-text
    else:
        assert wer("Your order is on its way.", turn.text) <= 0.5, turn.text  # our STT of its Piper voice
    agent = [a for a in turn.audio if a.channel == "agent"]
    assert agent and turn.first_audio_at is not None and turn.first_audio_at > turn.sent_at
    voice_turn = next(m.event for m in out if isinstance(m, Event) and isinstance(m.event, VoiceTurn))
    assert voice_turn.text_source == source


@pytest.mark.unit
def test_the_example_suite_validates() -> None:
    from tamesu.config.loader import load_suite

    loaded = load_suite(ROOT / "examples" / "pipecat" / "suite.yaml")
    assert {t.target for t in loaded.suite.tests} == {"bot", "bot_audio"}


@pytest.mark.integration
async def test_the_example_suite_passes_against_the_example_bot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu import run_async
    from tamesu.testing.model_server import Reply

    async with running_bot("text") as (url, llm):
        llm.queue(
            Reply(tool_calls=[("lookup_order", {"order_id": "A1"})]),
            Reply(text="Order A1 has shipped and arrives tomorrow."),
            Reply(text="Goodbye!", tool_calls=[("end_call", {})]),
        )
        monkeypatch.setenv("BOT_URL", url)
        result = await run_async(
            ROOT / "examples" / "pipecat" / "suite.yaml", filter="client-side tool", output=tmp_path / "out"
        )
    assert result.exit_code == 0, [
        (r.test_id, r.error, [a for a in r.assertions if not a.passed]) for r in result.results
    ]
    assert [r.outcome for r in result.results] == ["passed"]
