"""An agent's answers are read within ``limits:`` on every lane, and a test's time limit ends
endless streams: each against a real loopback agent that misbehaves on purpose."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from tamesu.clock import within
from tamesu.errors import TargetError
from tamesu.limits import Limits

pytestmark = pytest.mark.integration

SMALL = Limits(answer_size=100_000, json_depth=16)
CHUNK = b"x" * 65536


async def endless_body(request: web.Request) -> web.StreamResponse:
    """A chunked body that never ends (until the client goes away)."""
    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    await resp.write(b'{"reply": "')
    while True:
        await resp.write(CHUNK)


async def declared_huge(request: web.Request) -> web.StreamResponse:
    """Says its body is a gigabyte, then sends a little of it."""
    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "application/json", "Content-Length": str(10**9)})
    await resp.prepare(request)
    await resp.write(b'{"reply": "')
    while True:  # a trickle, until the client hangs up
        await asyncio.sleep(0.05)
        await resp.write(b"x")


async def gzip_bomb(request: web.Request) -> web.Response:
    """Twenty kilobytes on the wire, twenty megabytes once inflated."""
    await request.read()
    body = gzip.compress(b'{"reply": "' + b"a" * 20_000_000 + b'"}')
    return web.Response(body=body, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})


async def deep_json(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(text="[" * 40_000 + "]" * 40_000, content_type="application/json")


def agent_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/endless", endless_body)
    app.router.add_post("/declared", declared_huge)
    app.router.add_post("/bomb", gzip_bomb)
    app.router.add_post("/deep", deep_json)
    return app


@pytest.fixture(params=["fast lane", "httpx"])
def lane(request: pytest.FixtureRequest, harness: Any) -> str:
    """Plain JSON turns go through the fast HTTP/1.1 lane, or through httpx when a client has hooks."""
    if request.param == "httpx":

        async def noop(_: Any) -> None:
            return None

        harness.http.event_hooks = {"request": [noop], "response": []}
    return str(request.param)


@pytest.mark.parametrize("path", ["/endless", "/declared", "/bomb"])
async def test_an_answer_over_the_answer_size_is_a_limit_error(serve, harness, lane: str, path: str) -> None:
    url = await serve(agent_app())
    t = await harness.target(
        {"url": url + path, "response": {"text": "$.reply"}}, limits=SMALL, turn_timeout=20
    )
    started = time.monotonic()
    with pytest.raises(TargetError) as caught:
        await harness.say(t, "hi")
    assert time.monotonic() - started < 10
    assert caught.value.kind == "limit" and not caught.value.retryable
    assert f"the answer from {url}{path} is larger than 100 KB" in str(caught.value)
    assert "limits.answer_size in tamesu.yaml" in str(caught.value)


async def test_json_nested_too_deep_is_a_limit_error(serve, harness, lane: str) -> None:
    url = await serve(agent_app())
    t = await harness.target({"url": url + "/deep", "response": {"text": "$.reply"}}, limits=SMALL)
    with pytest.raises(TargetError, match=r"nests deeper than 16 levels \(limits.json_depth") as caught:
        await harness.say(t, "hi")
    assert caught.value.kind == "limit"


def sse_app(write: Any) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            await write(resp)
        except (ConnectionResetError, RuntimeError):
            pass
        return resp

    app = web.Application()
    app.router.add_post("/stream", handle)
    return app


async def endless_line(resp: web.StreamResponse) -> None:
    await resp.write(b"data: ")
    while True:
        await resp.write(CHUNK)


async def endless_event(resp: web.StreamResponse) -> None:
    while True:
        await resp.write(b"data: " + CHUNK + b"\n")


async def endless_events(resp: web.StreamResponse) -> None:
    while True:
        await resp.write(b'data: {"text": "x"}\n\n')
        await asyncio.sleep(0.001)


@pytest.mark.parametrize("write", [endless_line, endless_event], ids=["line", "event"])
async def test_an_event_over_the_answer_size_is_a_limit_error(serve, harness, write: Any) -> None:
    url = await serve(sse_app(write))
    t = await harness.target({"url": url + "/stream", "streaming": "sse"}, limits=SMALL, turn_timeout=20)
    with pytest.raises(TargetError, match=r"an event from .* is larger than 100 KB") as caught:
        await harness.say(t, "hi")
    assert caught.value.kind == "limit"


async def consume(adapter: Any, text: str) -> list[Any]:
    from tamesu.kernel.messages import UserTurn

    return [msg async for msg in adapter.turn(UserTurn(text=text))]


async def ends_in_time(adapter: Any, tries: int = 20) -> None:
    """The run's timeout cancels the turn: a stream whose next message is always at hand must
    not swallow that cancellation (Python 3.11's ``asyncio.wait_for`` did, now and then)."""
    for _ in range(tries):
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await within(consume(adapter, "hi"), 0.1)
        assert time.monotonic() - started < 2


async def test_a_time_limit_ends_an_endless_event_stream(serve, harness) -> None:
    url = await serve(sse_app(endless_events))
    t = await harness.target(
        {"url": url + "/stream", "streaming": "sse", "response": {"text": "$.text"}}, turn_timeout=4
    )
    await ends_in_time(t)


class WsFlood:
    """A websocket agent that answers each message with ``answer`` (called with the socket)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        answers: list[asyncio.Task[None]] = []
        async for _ in ws:  # read on while answering, so the client's close is seen
            answers.append(asyncio.get_running_loop().create_task(self.answer(ws)))
        for task in answers:
            task.cancel()
        await asyncio.gather(*answers, return_exceptions=True)
        return ws

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/ws", self.handle)
        return app


async def huge_message(ws: web.WebSocketResponse) -> None:
    await ws.send_str(json.dumps({"text": "x" * 300_000}))


async def endless_messages(ws: web.WebSocketResponse) -> None:
    while not ws.closed:
        await ws.send_str('{"text": "x"}')
        await asyncio.sleep(0)  # the agent shares the test's event loop


WS = {"streaming": "websocket", "response": {"text": "$.text", "idle": "30s"}}


async def test_a_websocket_message_over_the_answer_size_closes_with_a_clear_error(serve, harness) -> None:
    url = await serve(WsFlood(huge_message).app())
    t = await harness.target({"url": url + "/ws", **WS}, limits=SMALL)
    with pytest.raises(TargetError) as caught:
        await harness.say(t, "hi")
    message = str(caught.value)
    assert "code 1009" in message and "a message larger than 100 KB (limits.answer_size" in message


async def test_a_time_limit_ends_an_endless_websocket_stream(serve, harness) -> None:
    url = await serve(WsFlood(endless_messages).app())
    t = await harness.target({"url": url + "/ws", **WS}, turn_timeout=4)
    await ends_in_time(t)


@pytest.fixture
async def poll_agent(serve: Any) -> AsyncIterator[str]:
    async def send(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/send", send)
    app.router.add_get("/history", endless_body)
    yield await serve(app)


async def test_a_poll_reply_over_the_answer_size_is_a_limit_error(poll_agent: str, harness) -> None:
    t = await harness.target(
        {
            "url": poll_agent + "/send",
            "response": {"text": "$.reply", "poll": {"url": poll_agent + "/history"}},
        },
        limits=SMALL,
    )
    with pytest.raises(TargetError, match=r"/history is larger than 100 KB") as caught:
        await harness.say(t, "hi")
    assert caught.value.kind == "limit"


async def test_a_call_to_the_listener_over_the_answer_size_fails_the_turn(serve, harness) -> None:
    answered: list[int] = []
    calls: list[asyncio.Task[None]] = []

    async def message(request: web.Request) -> web.Response:
        body = await request.json()

        async def call_back() -> None:
            import aiohttp

            async with aiohttp.ClientSession() as http:
                payload = {"chat_id": body["chat_id"], "text": "y" * 300_000}
                async with http.post(body["reply_to"] + "/bot1/sendMessage", json=payload) as r:
                    answered.append(r.status)

        calls.append(asyncio.get_running_loop().create_task(call_back()))
        return web.json_response({"accepted": True})

    app = web.Application()
    app.router.add_post("/message", message)
    url = await serve(app)
    config = {
        "url": url + "/message",
        "request": {"body": {"chat_id": "{{session}}", "text": "{{message}}", "reply_to": "{{listen.url}}"}},
        "response": {"text": "$.text", "listen": {"path": "POST /bot*/sendMessage"}},
    }
    t = await harness.target(config, limits=SMALL)
    with pytest.raises(
        TargetError, match=r"POST /bot1/sendMessage to the listener is larger than 100 KB"
    ) as caught:
        await harness.say(t, "hi")
    assert caught.value.kind == "limit"
    await asyncio.gather(*calls)
    assert answered == [413]


async def test_a_realtime_event_over_the_answer_size_is_refused(serve, harness) -> None:
    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"type": "session.created", "session": {"instructions": "z" * 300_000}}))
        async for _ in ws:
            pass
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handle)
    url = await serve(app)
    with pytest.raises(TargetError, match=r"a message larger than 100 KB \(limits.answer_size"):
        await harness.target(
            {"type": "realtime", "url": url.replace("http", "ws") + "/v1/realtime"}, limits=SMALL
        )


async def test_a_call_socket_message_over_the_answer_size_ends_the_call_saying_why(serve, harness) -> None:
    from tamesu.wire.audio_socket import AudioSocket
    from tamesu.wire.connect import ConnectPolicy

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_bytes(b"\0" * 300_000)
        async for _ in ws:
            pass
        return ws

    app = web.Application()
    app.router.add_get("/media", handle)
    url = await serve(app)
    closed: asyncio.Future[tuple[int | None, str]] = asyncio.get_running_loop().create_future()
    socket = AudioSocket(
        harness.context(limits=SMALL),
        ConnectPolicy(attempts=1),
        url.replace("http", "ws") + "/media",
        on_text=lambda _: None,
        on_binary=lambda _: None,
        on_close=lambda code, reason: closed.set_result((code, reason)),
    )
    await socket.connect()
    try:
        code, reason = await within(closed, 5)
    finally:
        await socket.close()
    assert code == 1009 and "a message larger than 100 KB (limits.answer_size" in reason
