"""The rest target's streaming transports: server-sent events, websocket, socket.io."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import WSMsgType, web

from tamesu.errors import TargetError
from tamesu.kernel.messages import AgentPartial, RawResponse, ToolCall

pytestmark = pytest.mark.integration


def sse_app(
    events: list[str], *, first_delay: float = 0.0, hold: asyncio.Event | None = None
) -> web.Application:
    """Streams ``events`` (raw data lines); ``hold`` keeps the stream open after the last one."""

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if first_delay:
            await asyncio.sleep(first_delay)  # the agent thinking before its first token
        for data in events:
            line = data if data.startswith(":") else f"event: message\ndata: {data}"
            await resp.write(f"{line}\n\n".encode())
        if hold is not None:
            await hold.wait()
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/stream", handle)
    return app


async def test_sse_partials_tools_done_and_first_event_timing(serve, harness) -> None:
    hold = asyncio.Event()
    events = [
        json.dumps({"type": "delta", "text": "Returns are "}),
        ": a comment line",
        json.dumps({"type": "delta", "text": "30 days."}),
        json.dumps({"type": "tool", "name": "lookup_policy", "args": {"topic": "returns"}}),
        json.dumps({"type": "end", "end_session": True}),
        "[DONE]",
    ]
    url = await serve(sse_app(events, first_delay=0.2, hold=hold))
    t = await harness.target(
        {
            "url": url + "/stream",
            "streaming": "sse",
            "response": {
                "text": "$[?(@.type=='delta')].text",
                "tool_calls": "$[?(@.type=='tool')]",
                "done": "$.end_session",
            },
        }
    )
    try:
        out = await harness.say(t, "policy?")
    finally:
        hold.set()
    assert [p.text for p in harness.of_type(out, AgentPartial)] == ["Returns are ", "30 days."]
    assert [(c.name, c.args) for c in harness.of_type(out, ToolCall)] == [
        ("lookup_policy", {"topic": "returns"})
    ]
    turn = out[-1]
    assert turn.text == "Returns are 30 days." and turn.done and turn.status == 200
    assert turn.first_byte_at - turn.sent_at >= 0.2
    assert len(harness.of_type(out, RawResponse)) == 4


async def test_sse_text_chunks_until_the_stream_ends(serve, harness) -> None:
    url = await serve(sse_app(["Hello", "world"]))
    t = await harness.target({"url": url + "/stream", "streaming": "sse"})
    out = await harness.say(t, "x")
    assert out[-1].text == "Helloworld"
    t2 = await harness.target({"url": url + "/stream", "streaming": "sse", "response": {"join": " "}})
    assert (await harness.say(t2, "x"))[-1].text == "Hello world"


async def test_sse_target_reads_a_plain_json_answer(serve, harness) -> None:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response({"reply": "not streamed"})

    app = web.Application()
    app.router.add_post("/stream", handle)
    url = await serve(app)
    t = await harness.target({"url": url + "/stream", "streaming": "sse", "response": {"text": "$.reply"}})
    assert (await harness.say(t, "x"))[-1].text == "not streamed"


class WsAgent:
    """A websocket agent whose behaviour per received message is scripted by the test."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.headers: dict[str, str] = {}
        self.on_connect: list[Any] = []

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        self.headers = dict(request.headers)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        for msg in self.on_connect:
            await ws.send_json(msg)
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            data = json.loads(frame.data)
            self.received.append(data)
            kind = data.get("type")
            if kind == "auth":
                await ws.send_json({"type": "noise"})
                await ws.send_json({"type": "authed", "session_key": f"key-for-{data['token'][-4:]}"})
            elif kind == "user" and data["text"] == "drop":
                await ws.send_json({"delta": "partial "})
                await ws.close(code=1011, message=b"agent crashed")
            elif kind == "user" and data["text"] == "abort":
                await ws.send_json({"delta": "partial "})
                request.transport.abort()
            elif kind == "user" and data["text"] == "bye":
                await ws.send_json({"delta": "Goodbye"})
                await ws.close()
            elif kind == "user" and data["text"] == "no-end":
                await ws.send_json({"delta": "one "})
                await ws.send_json({"delta": "two"})
            elif kind == "user":
                await ws.send_json({"delta": f"[{data.get('key')}] "})
                await ws.send_json({"delta": data["text"].upper()})
                await ws.send_json({"done": True, "calls": ["noted"]})
        return ws

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/ws", self.handle)
        return app


WS_CONFIG: dict[str, Any] = {
    "streaming": "websocket",
    "headers": {"Authorization": "Bearer {{secrets.WS_TOKEN}}"},
    "request": {
        "open": {"type": "open", "session": "{{session}}"},
        "handshake": [
            {
                "send": {"type": "auth", "token": "{{secrets.WS_TOKEN}}"},
                "wait": "$[?(@.type=='authed')].type",
                "capture": {"key": "$[?(@.type=='authed')].session_key"},
                "timeout": "2s",
            }
        ],
        "body": {"type": "user", "text": "{{message}}", "key": "{{session.key}}"},
    },
    "response": {"text": "$.delta", "tool_calls": "$.calls[*]", "turn_done": "$.done", "idle": "150ms"},
}


async def test_websocket_open_handshake_capture_and_turn_done(serve, harness) -> None:
    agent = WsAgent()
    url = await serve(agent.app())
    t = await harness.target(
        {"url": url + "/ws", **WS_CONFIG}, secrets={"WS_TOKEN": "ws-secret-1234"}, session="s9"
    )
    out = await harness.say(t, "hello")
    assert out[-1].text == "[key-for-1234] HELLO"
    assert [p.text for p in harness.of_type(out, AgentPartial)] == ["[key-for-1234] ", "HELLO"]
    assert [c.name for c in harness.of_type(out, ToolCall)] == ["noted"]
    assert agent.headers["Authorization"] == "Bearer ws-secret-1234"
    assert agent.received[:2] == [
        {"type": "open", "session": "s9"},
        {"type": "auth", "token": "ws-secret-1234"},
    ]
    second = await harness.say(t, "again")
    assert second[-1].text == "[key-for-1234] AGAIN"


async def test_websocket_idle_ends_a_turn_without_marker(serve, harness) -> None:
    url = await serve(WsAgent().app())
    t = await harness.target({"url": url + "/ws", **WS_CONFIG}, secrets={"WS_TOKEN": "ws-secret-1234"})
    out = await harness.say(t, "no-end")
    assert out[-1].text == "one two"
    assert out[-1].end_at - out[-1].first_byte_at >= 0.15


@pytest.mark.parametrize(("text", "why"), [("drop", r"code 1011: agent crashed"), ("abort", r"code 1006")])
async def test_websocket_dropped_mid_turn(serve, harness, text: str, why: str) -> None:
    url = await serve(WsAgent().app())
    t = await harness.target({"url": url + "/ws", **WS_CONFIG}, secrets={"WS_TOKEN": "ws-secret-1234"})
    with pytest.raises(TargetError, match=rf"the websocket closed mid-turn \({why}"):
        await harness.say(t, text)


async def test_websocket_normal_close_after_content_ends_the_session(serve, harness) -> None:
    url = await serve(WsAgent().app())
    t = await harness.target({"url": url + "/ws", **WS_CONFIG}, secrets={"WS_TOKEN": "ws-secret-1234"})
    out = await harness.say(t, "bye")
    assert out[-1].text == "Goodbye" and out[-1].done
    with pytest.raises(TargetError, match=r"closed the websocket \(code 1000\) before this turn"):
        await harness.say(t, "still there?")


async def test_websocket_agent_speaks_first(serve, harness) -> None:
    agent = WsAgent()
    agent.on_connect = [{"delta": "Welcome to Mochi!"}, {"done": True}]
    url = await serve(agent.app())
    t = await harness.target(
        {"url": url + "/ws", "streaming": "websocket", "response": {"text": "$.delta", "turn_done": "$.done"}}
    )
    out = await harness.say(t, None)
    assert out[-1].text == "Welcome to Mochi!" and out[-1].sent_at is None


async def test_websocket_handshake_wait_times_out(serve, harness) -> None:
    url = await serve(WsAgent().app())
    config = {
        **WS_CONFIG,
        "request": {"handshake": [{"send": {"type": "hello"}, "wait": "$.never", "timeout": "200ms"}]},
    }
    with pytest.raises(TargetError, match=r"handshake step 1 \(\$.never\): no matching message within 200ms"):
        await harness.target({"url": url + "/ws", **config}, secrets={"WS_TOKEN": "ws-secret-1234"})


async def test_websocket_rejected_and_refused(serve, harness, closed_port) -> None:
    async def reject(request: web.Request) -> web.Response:
        return web.Response(status=403, text="forbidden")

    app = web.Application()
    app.router.add_get("/ws", reject)
    url = await serve(app)
    with pytest.raises(
        TargetError, match=r"websocket handshake at ws://127.0.0.1:\d+/ws answered 403: forbidden"
    ):
        await harness.target({"url": url + "/ws", "streaming": "websocket"})
    with pytest.raises(
        TargetError, match=rf"connection refused at ws://127.0.0.1:{closed_port}/ws after 2 attempts"
    ):
        await harness.target(
            {
                "url": f"http://127.0.0.1:{closed_port}/ws",
                "streaming": "websocket",
                "connect": {"attempts": 2, "backoff": "10ms"},
            }
        )


@pytest.fixture
async def sio_url(serve) -> str:
    """A real python-socketio server that pings every 100ms and answers after 500ms of thinking."""
    import socketio

    sio = socketio.AsyncServer(async_mode="aiohttp", ping_interval=0.1, ping_timeout=0.2)
    app = web.Application()
    sio.attach(app)
    keys: dict[str, str] = {}

    @sio.on("client.start")
    async def start(sid: str, data: dict[str, Any]) -> None:
        keys[sid] = f"k-{data['userID']}"
        await sio.emit("client.started", {"sessionKey": keys[sid]}, to=sid)

    @sio.on("user_message")
    async def user_message(sid: str, data: dict[str, Any]) -> None:
        if data.get("key") != keys.get(sid):
            await sio.emit("error", {"reason": "bad key"}, to=sid)
            return
        await asyncio.sleep(0.5)  # longer than ping interval + timeout: unanswered pings would drop us
        for word in ("Hello", " ", data["text"]):
            await sio.emit("bot_message", {"text": word}, to=sid)
        await sio.emit("bot_done", {}, to=sid)

    return await serve(app)


async def test_socketio_handshake_events_and_pings(sio_url, harness) -> None:
    t = await harness.target(
        {
            "url": sio_url,
            "streaming": "websocket",
            "protocol": "socketio",
            "request": {
                "handshake": [
                    {
                        "send": {"event": "client.start", "data": {"userID": "{{session}}"}},
                        "wait": "$[?(@.event=='client.started')].event",
                        "capture": {"key": "$[?(@.event=='client.started')].data.sessionKey"},
                    }
                ],
                "body": {"event": "user_message", "data": {"text": "{{message}}", "key": "{{session.key}}"}},
            },
            "response": {
                "text": "$[?(@.event=='bot_message')].data.text",
                "turn_done": "$[?(@.event=='bot_done')].event",
            },
        },
        session="u7",
    )
    first = await harness.say(t, "Marta")
    assert first[-1].text == "Hello Marta"
    raw = [m.body for m in harness.of_type(first, RawResponse)]
    assert raw[-1] == {"event": "bot_done", "data": {}}
    second = await harness.say(t, "again")
    assert second[-1].text == "Hello again"


async def test_a_cookie_from_session_open_rides_on_the_websocket_handshake(serve, harness) -> None:
    seen: dict[str, str | None] = {}

    async def login(request: web.Request) -> web.Response:
        response = web.json_response({"conversation": "c-1"})
        response.set_cookie("sid", "s3cr3t-session", path="/")
        return response

    async def chat(request: web.Request) -> web.WebSocketResponse:
        seen["cookie"] = request.headers.get("Cookie")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            await ws.send_json({"delta": f"got {msg.json()['text']}", "done": True})
        return ws

    app = web.Application()
    app.router.add_post("/login", login)
    app.router.add_get("/ws", chat)
    url = await serve(app)
    t = await harness.target(
        {
            "url": url + "/ws",
            "streaming": "websocket",
            "session": {"open": {"url": url + "/login", "capture": {"conversation": "$.conversation"}}},
            "request": {"body": {"text": "{{message}}"}},
            "response": {"text": "$.delta", "turn_done": "$.done"},
        }
    )
    out = await harness.say(t, "hi")
    assert out[-1].text == "got hi"
    assert seen["cookie"] == "sid=s3cr3t-session"
