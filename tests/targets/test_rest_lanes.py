"""A plain JSON turn reads the same on the fast lane as through httpx, errors included."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from aiohttp import web

from tamesu.errors import TargetError
from tamesu.http import fast_lane
from tamesu.kernel.messages import AgentTurn, RawResponse

from .conftest import Harness

pytestmark = pytest.mark.integration


def on_httpx(harness: Harness) -> Harness:
    """The harness's client with a cookie set, which keeps every request on httpx's own path."""
    harness.http.cookies.set("lane", "httpx", domain="example.invalid")
    assert fast_lane(harness.http) is None
    return harness


def shape(messages: list[Any]) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = []
    for m in messages:
        if isinstance(m, RawResponse):
            out.append(("raw", m.body, m.status))
        elif isinstance(m, AgentTurn):
            out.append(("turn", m.text, m.status))
        else:
            out.append((type(m).__name__, None, None))
    return out


async def test_json_text_4xx_and_charset_answers_read_the_same_on_both_lanes(serve, harness) -> None:
    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        text = body["message"]
        if text == "bad":
            return web.json_response({"error": "no"}, status=404)
        if text == "latin":
            return web.Response(body="café".encode("latin-1"), content_type="text/plain", charset="latin-1")
        return web.json_response({"reply": f"you said {text}", "tools": [{"name": "lookup"}]})

    app = web.Application()
    app.router.add_post("/chat", chat)
    url = await serve(app)
    config = {"url": url + "/chat", "response": {"tool_calls": "$.tools", "text": "$.reply"}}
    fast = await harness.target(config)
    assert fast_lane(harness.http) is not None
    answers = {text: shape(await harness.say(fast, text)) for text in ("hi", "bad")}
    plain = Harness()
    try:
        slow = await on_httpx(plain).target(config)
        assert {text: shape(await plain.say(slow, text)) for text in ("hi", "bad")} == answers
        text_config = {"url": url + "/chat"}
        fast_text = await harness.target(text_config)
        slow_text = await plain.target(text_config)
        assert shape(await harness.say(fast_text, "latin")) == shape(await plain.say(slow_text, "latin"))
        assert (await harness.say(fast_text, "latin"))[-1].text == "café"
    finally:
        await plain.close()
    assert answers["hi"][-1] == ("turn", "you said hi", 200)
    assert answers["bad"][0] == ("raw", {"error": "no"}, 404)


async def test_a_slow_answer_and_a_broken_body_fail_alike_on_both_lanes(serve, harness) -> None:
    release = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        await release.wait()
        return web.json_response({"reply": "late"})

    async def broken(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json", "Content-Length": "100"})
        await resp.prepare(request)
        await resp.write(b'{"reply": "cut')
        request.transport.close()  # type: ignore[union-attr]
        return resp

    app = web.Application()
    app.router.add_post("/slow", slow)
    app.router.add_post("/broken", broken)
    url = await serve(app)
    plain = Harness()
    try:
        on_httpx(plain)
        for h in (harness, plain):
            t = await h.target({"url": url + "/slow"}, turn_timeout=0.2)
            with pytest.raises(TargetError, match=r"^no answer within 200ms from .*/slow$"):
                await h.say(t, "x")
            t = await h.target({"url": url + "/broken"})
            with pytest.raises(TargetError, match=r"^the answer from .*/broken broke off: "):
                await h.say(t, "x")
    finally:
        release.set()
        await plain.close()


async def test_retries_on_the_fast_lane_count_every_attempt(serve, harness) -> None:
    calls = {"n": 0}

    async def flaky(request: web.Request) -> web.Response:
        calls["n"] += 1
        return web.Response(status=503, text="warming up " * 40)

    app = web.Application()
    app.router.add_post("/chat", flaky)
    url = await serve(app)
    t = await harness.target({"url": url + "/chat", "connect": {"attempts": 3, "backoff": "10ms"}})
    with pytest.raises(TargetError) as err:
        await harness.say(t, "x")
    assert calls["n"] == 3
    assert str(err.value).startswith("agent answered 503 after 3 attempts: warming up warming up")
    assert isinstance(harness.http, httpx.AsyncClient)


async def test_each_run_keeps_its_own_cookies_on_both_lanes(serve, harness) -> None:
    visitors = iter(range(1, 100))

    async def chat(request: web.Request) -> web.Response:
        who = request.cookies.get("visitor")
        response = web.json_response({"reply": f"visitor {who or 'new'}"})
        if who is None:
            response.set_cookie("visitor", str(next(visitors)), path="/")
        return response

    app = web.Application()
    app.router.add_post("/chat", chat)
    url = await serve(app)
    plain = Harness()
    try:
        on_httpx(plain)
        for h in (harness, plain):
            first = await h.target({"url": url + "/chat"})
            second = await h.target({"url": url + "/chat"})
            replies = [
                (await h.say(run, text))[-1].text
                for run, text in ((first, "a"), (second, "b"), (first, "c"), (second, "d"))
            ]
            assert replies[:2] == ["visitor new", "visitor new"]
            assert replies[2] != replies[3], "one run's session cookie never reaches another run"
            assert {replies[2], replies[3]} <= {f"visitor {n}" for n in range(1, 100)}
            assert len(first.ctx.cookies) == len(second.ctx.cookies) == 1
        assert fast_lane(harness.http) is not None, "the shared client kept no cookie"
        assert not harness.http.cookies
    finally:
        await plain.close()
