"""The pipecat target over Pipecat's small WebRTC transport: the example bot on
``SmallWebRTCTransport`` behind its request handler (text and audio), a small aiortc peer of our own
for what a real bot rarely sends, and offer endpoints that cannot be reached or answer nonsense.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from tamesu.errors import MissingExtraError, TargetError
from tamesu.kernel.events import VoiceTurn
from tamesu.kernel.messages import AgentPartial, Event, RawResponse, ToolCall, ToolResult
from tamesu.limits import Limits
from tamesu.voice.voice_metrics import wer

from .test_pipecat import bot_config, bot_module

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
pytest.importorskip("aiortc")

RTVI = "rtvi-ai"


@contextlib.asynccontextmanager
async def webrtc_bot(mode: str) -> AsyncIterator[tuple[str, Any]]:
    """The example bot's SmallWebRTC server on a free port, its LLM on a scripted model server;
    yields (offer url, model server). The target's connect retries wait for it to listen."""
    bot = bot_module()
    from tamesu.testing.model_server import serve_model_server

    async with serve_model_server() as server:
        port = bot.free_port()
        task = asyncio.create_task(
            bot.serve_webrtc(port=port, mode=mode, llm_base_url=server.base_url, model="scripted")
        )
        try:
            yield f"http://127.0.0.1:{port}/api/offer", server
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)


def webrtc_config(url: str, **extra: Any) -> dict[str, Any]:
    return bot_config(url, transport="webrtc", **extra)


@pytest.mark.integration
async def test_text_mode_over_the_data_channel_with_a_client_side_function_and_the_bot_ending_the_call(
    harness,
) -> None:
    from tamesu.testing.model_server import Reply

    async with webrtc_bot("text") as (url, llm):
        llm.queue(
            Reply(tool_calls=[("lookup_order", {"order_id": "A1"})]),
            Reply(text="Your order A1 has shipped."),
            Reply(text="Goodbye!", tool_calls=[("end_call", {})]),
        )
        t = await harness.target(webrtc_config(url), turn_timeout=20.0)
        assert t.rtvi and not t.agent_speaks_first and t.link.pc_id
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
    tool_messages = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert json.loads(tool_messages[0]["content"]) == {"order_id": "A1", "status": "shipped"}
    assert {"role": "user", "content": "Where is my order A1?"} in llm.requests[0]["messages"]
    bye = second[-1]
    assert bye.text == "Goodbye!" and bye.done  # the bot's pipeline ended and hung up


@pytest.mark.slow
async def test_audio_mode_speaks_to_the_bots_stt_over_webrtc_and_hears_its_tts(harness) -> None:
    from tamesu.testing.model_server import Reply

    async with webrtc_bot("audio") as (url, llm):
        # Every answer the same: on a loaded machine the bot's VAD may hear the question as two turns.
        llm.when(lambda request: True, Reply(text="Your order is on its way."))
        t = await harness.target(
            webrtc_config(url, mode="audio", idle="2s", transcript_source="stt"), turn_timeout=30.0
        )
        assert not t.agent_speaks_first  # the bot's silence on the track is not a greeting
        out = await harness.say(t, "Where is my order?")
        await t.stop()
    turn = out[-1]
    said = [
        m.body["data"]["text"]
        for m in harness.of_type(out, RawResponse)
        if isinstance(m.body, dict) and m.body.get("type") == "user-transcription"
    ]
    assert any(text.strip() for text in said), said  # the bot's STT heard speech from tamesu's voice
    assert wer("Your order is on its way.", turn.text) <= 0.5, turn.text  # our STT of its Piper voice
    assert [a for a in turn.audio if a.channel == "agent"]
    assert turn.first_audio_at is not None and turn.first_audio_at > turn.sent_at
    assert turn.end_at - turn.first_audio_at < 20  # ended by idle quiet, not by turn_timeout
    voice_turn = next(m.event for m in out if isinstance(m, Event) and isinstance(m.event, VoiceTurn))
    assert voice_turn.text_source == "stt"


# A peer of our own, for what a real bot rarely sends.

Script = Callable[[Any, str], None]


@contextlib.asynccontextmanager
async def fake_peer(serve, on_message: Script) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """An offer endpoint answering with an aiortc peer; ``on_message(channel, text)`` plays the bot.
    Yields (url, the offers it was sent)."""
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

    offers: list[dict[str, Any]] = []
    peers: list[Any] = []

    async def offer(request: web.Request) -> web.Response:
        body = await request.json()
        offers.append(body)
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        peers.append(pc)

        @pc.on("datachannel")
        def on_channel(channel: Any) -> None:
            channel.on("message", lambda text: on_message(channel, text))

        await pc.setRemoteDescription(RTCSessionDescription(sdp=body["sdp"], type=body["type"]))
        await pc.setLocalDescription(await pc.createAnswer())
        return web.json_response({"sdp": pc.localDescription.sdp, "type": "answer", "pc_id": "peer-1"})

    app = web.Application()
    app.router.add_post("/api/offer", offer)
    base = await serve(app)
    try:
        yield f"{base}/api/offer", offers
    finally:
        for pc in peers:
            await pc.close()


def send_rtvi(channel: Any, kind: str, data: Any = None) -> None:
    channel.send(json.dumps({"label": RTVI, "type": kind, **({"data": data} if data is not None else {})}))


@pytest.mark.integration
async def test_what_the_bot_sends_on_the_data_channel_is_bounded_and_recorded(serve, harness) -> None:
    limits = Limits(answer_size=4096)

    def bot(channel: Any, text: str) -> None:
        message = json.loads(text)
        if message["type"] == "client-ready":
            send_rtvi(channel, "bot-ready", {"version": "2.2.0"})
        elif message["type"] == "send-text":
            channel.send("ping: 123")
            channel.send("{not json")
            channel.send("[" * 5000)  # over the size limit
            channel.send(json.dumps({"type": "signalling", "message": {"type": "renegotiate"}}))
            send_rtvi(channel, "bot-llm-started")
            send_rtvi(channel, "bot-llm-text", {"text": "You said " + message["data"]["content"]})
            send_rtvi(channel, "bot-llm-stopped")

    async with fake_peer(serve, bot) as (url, offers):
        t = await harness.target(
            {"type": "pipecat", "transport": "webrtc", "url": url, "idle": "500ms"}, limits=limits
        )
        out = await harness.say(t, "hello")
    assert t.rtvi and out[-1].text == "You said hello"
    bodies = [m.body for m in harness.of_type(out, RawResponse)]
    assert {"unparsed": "{not json"} in bodies
    assert {"dropped": "a data channel message of 5000 bytes (over 4096)"} in bodies
    assert {"type": "signalling", "message": {"type": "renegotiate"}} in bodies
    assert not any("ping" in str(b) for b in bodies)
    assert offers[0]["type"] == "offer" and "a=candidate" in offers[0]["sdp"]
    assert (offers[0]["pc_id"], offers[0]["restart_pc"]) == (None, False)
    assert "m=audio" not in offers[0]["sdp"]  # text mode offers only the data channel


@pytest.mark.integration
async def test_an_unreachable_offer_endpoint_is_an_infrastructure_error(harness, closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/api/offer"
    with pytest.raises(TargetError) as caught:
        await harness.target(
            {
                "type": "pipecat",
                "transport": "webrtc",
                "url": url,
                "connect": {"attempts": 2, "backoff": "10ms"},
            }
        )
    assert caught.value.retryable and "after 2 attempts" in str(caught.value)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, "<html>hello</html>", "answered without an SDP answer: <html>hello</html>"),
        (200, {"type": "answer", "sdp": "v=0 garbage"}, "SDP answer from .* is unusable"),
        (400, {"error": "Cannot create new connection with existing connection active"}, "answered 400"),
    ],
)
async def test_an_offer_endpoint_answering_nonsense_is_a_target_error(
    serve, harness, status: int, body: Any, expected: str
) -> None:
    async def offer(request: web.Request) -> web.Response:
        if isinstance(body, str):
            return web.Response(text=body, status=status)
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_post("/api/offer", offer)
    url = await serve(app) + "/api/offer"
    with pytest.raises(TargetError, match=expected) as caught:
        await harness.target({"type": "pipecat", "transport": "webrtc", "url": url})
    assert not caught.value.retryable


@pytest.mark.unit
def test_the_transport_key_takes_websocket_or_webrtc() -> None:
    from tamesu.config.target import parse_target
    from tamesu.errors import ConfigError

    assert parse_target({"type": "pipecat", "url": "ws://bot"}).transport == "websocket"
    assert (
        parse_target({"type": "pipecat", "url": "http://bot/api/offer", "transport": "webrtc"}).transport
        == "webrtc"
    )
    with pytest.raises((ConfigError, ValueError)):
        parse_target({"type": "pipecat", "url": "ws://bot", "transport": "sip"})


@pytest.mark.unit
def test_without_aiortc_the_webrtc_transport_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aiortc", None)
    monkeypatch.delitem(sys.modules, "tamesu.targets.pipecat.pipecat_webrtc", raising=False)
    with pytest.raises(MissingExtraError, match=r"tamesu\[webrtc\]"):
        importlib.import_module("tamesu.targets.pipecat.pipecat_webrtc")
