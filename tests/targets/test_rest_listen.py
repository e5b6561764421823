"""The rest target's response.listen: the agent answers by calling an API tamesu serves."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tamesu.errors import TargetError

pytestmark = pytest.mark.integration


class CallbackAgent:
    """A bot that acknowledges each message, then answers through ``reply_to`` (the listener)."""

    def __init__(self, *, parts: int = 1, silent: bool = False, order: list[str] | None = None) -> None:
        self.parts = parts
        self.silent = silent
        self.order = order
        """Wait until these chat ids all wrote in, then answer them in this order."""
        self.waiting: dict[str, dict[str, Any]] = {}
        self.answers: list[tuple[int, Any]] = []
        self.tasks: set[asyncio.Task[None]] = set()

    async def message(self, request: web.Request) -> web.Response:
        body = await request.json()
        if not self.silent:
            self.waiting[body["chat_id"]] = body
            if self.order is None:
                self._spawn(self._answer(body))
            elif set(self.order) <= set(self.waiting):
                self._spawn(self._answer_in_order())
        return web.json_response({"accepted": True})

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer_in_order(self) -> None:
        for chat in self.order or []:
            await self._answer(self.waiting[chat])

    async def _answer(self, body: dict[str, Any]) -> None:
        async with aiohttp.ClientSession() as http:
            async with http.post(
                body["reply_to"] + "/bot7/sendChatAction", json={"chat_id": body["chat_id"]}
            ) as r:
                self.answers.append((r.status, await r.json()))
            for n in range(self.parts):
                text = f"{body['text'].upper()} ({n + 1})" if self.parts > 1 else body["text"].upper()
                payload = {"chat_id": body["chat_id"], "text": text}
                async with http.post(body["reply_to"] + "/bot7/sendMessage", json=payload) as r:
                    self.answers.append((r.status, await r.json()))

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/message", self.message)
        return app


def listen_config(url: str, **listen: Any) -> dict[str, Any]:
    return {
        "url": url + "/message",
        "request": {"body": {"chat_id": "{{session}}", "text": "{{message}}", "reply_to": "{{listen.url}}"}},
        "response": {
            "text": "$.text",
            "listen": {"path": "POST /bot*/sendMessage", "session": "$.chat_id", **listen},
        },
    }


async def test_listen_reads_the_agents_call_and_answers_it(serve, harness) -> None:
    agent = CallbackAgent()
    url = await serve(agent.app())
    t = await harness.target(
        listen_config(url, reply={"ok": True, "result": {"chat": "{{session}}"}}, status=201),
        session="chat-1",
    )
    out = await harness.say(t, "hello")
    assert out[-1].text == "HELLO" and out[-1].status == 200
    assert out[-1].sent_at <= out[-1].first_byte_at <= out[-1].end_at
    await asyncio.gather(*list(agent.tasks))  # the agent reads our answer after the turn has it
    assert (201, {"ok": True, "result": {"chat": "chat-1"}}) in agent.answers
    assert len(agent.answers) == 2


async def test_listen_routes_concurrent_sessions_by_id(serve, harness) -> None:
    agent = CallbackAgent(order=["chat-b", "chat-a"])
    url = await serve(agent.app())
    a = await harness.target(listen_config(url), session="chat-a")
    b = await harness.target(listen_config(url), session="chat-b")
    assert a.listener.url == b.listener.url
    out_a, out_b = await asyncio.gather(harness.say(a, "from a"), harness.say(b, "from b"))
    assert out_a[-1].text == "FROM A" and out_b[-1].text == "FROM B"
    assert out_b[-1].end_at is not None


async def test_listen_idle_collects_several_messages(serve, harness) -> None:
    agent = CallbackAgent(parts=3)
    url = await serve(agent.app())
    t = await harness.target(listen_config(url, idle="150ms"), session="chat-9")
    out = await harness.say(t, "hi")
    assert out[-1].text == "HI (1)\nHI (2)\nHI (3)"


async def test_listen_timeout(serve, harness) -> None:
    url = await serve(CallbackAgent(silent=True).app())
    t = await harness.target(listen_config(url, timeout="200ms"))
    with pytest.raises(TargetError, match=r"no reply within 200ms on http://127.0.0.1:\d+"):
        await harness.say(t, "anyone?")


async def test_listener_stops_with_its_last_session(serve, harness) -> None:
    url = await serve(CallbackAgent().app())
    t = await harness.target(listen_config(url))
    listen_url = t.listener.url
    await t.stop()
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectorError):
            await http.post(listen_url + "/x", json={})
