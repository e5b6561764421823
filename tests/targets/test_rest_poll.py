"""The rest target's response.poll: the reply is fetched from another endpoint after each turn."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from tamesu.errors import TargetError

pytestmark = pytest.mark.integration


class ThreadAgent:
    """A chat API: the bot's reply to a message shows up only after ``lag`` more polls."""

    def __init__(self, *, lag: int = 1, replies_per_message: int = 1) -> None:
        self.thread: list[dict[str, Any]] = []
        self.pending: list[tuple[int, dict[str, Any]]] = []
        self.lag = lag
        self.replies_per_message = replies_per_message
        self.polls: list[str] = []

    async def open(self, request: web.Request) -> web.Response:
        return web.json_response({"conversationId": "conv-1"})

    async def send(self, request: web.Request) -> web.Response:
        body = await request.json()
        ts = f"{len(self.thread)}.0"
        self.thread.append({"from": "user", "text": body["text"], "ts": ts})
        for n in range(self.replies_per_message):
            reply = {"from": "bot", "text": f"reply {n + 1} to {body['text']}", "ts": ts}
            self.pending.append((self.lag + n, reply))
        return web.json_response({"ok": True, "ts": ts})

    def _tick(self) -> None:
        due = [r for left, r in self.pending if left <= 0]
        self.pending = [(left - 1, r) for left, r in self.pending if left > 0]
        self.thread.extend(due)

    async def activities(self, request: web.Request) -> web.Response:
        self.polls.append(request.path_qs)
        self._tick()
        since = int(request.query.get("watermark") or 0)
        return web.json_response({"activities": self.thread[since:], "watermark": str(len(self.thread))})

    async def replies(self, request: web.Request) -> web.Response:
        self.polls.append(request.path_qs)
        self._tick()
        ts = request.query["ts"]
        return web.json_response({"messages": [m for m in self.thread if m["ts"] == ts]})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/conversations", self.open)
        app.router.add_post("/conversations/{id}/activities", self.send)
        app.router.add_get("/conversations/{id}/activities", self.activities)
        app.router.add_get("/replies", self.replies)
        return app


def poll_config(url: str, **poll: Any) -> dict[str, Any]:
    return {
        "url": url + "/conversations/{{session.id}}/activities",
        "session": {"open": {"url": url + "/conversations", "capture": {"id": "$.conversationId"}}},
        "request": {"body": {"text": "{{message}}"}},
        "response": {
            "text": "$.activities[?(@.from=='bot')].text",
            "poll": {
                "url": url + "/conversations/{{session.id}}/activities?watermark={{cursor}}",
                "cursor": "$.watermark",
                "interval": "20ms",
                **poll,
            },
        },
    }


async def test_poll_with_cursor_accumulates_new_activities(serve, harness) -> None:
    agent = ThreadAgent(lag=2)
    url = await serve(agent.app())
    t = await harness.target(poll_config(url))
    first = await harness.say(t, "hello")
    assert first[-1].text == "reply 1 to hello" and first[-1].status == 200
    second = await harness.say(t, "again")
    assert second[-1].text == "reply 1 to again"
    assert agent.polls[0].endswith("watermark=")
    assert len(agent.polls) >= 6 and all("conv-1" in p for p in agent.polls)


async def test_poll_idle_gathers_several_messages(serve, harness) -> None:
    agent = ThreadAgent(lag=1, replies_per_message=3)
    url = await serve(agent.app())
    t = await harness.target(poll_config(url, idle="150ms"))
    out = await harness.say(t, "hi")
    assert out[-1].text == "reply 1 to hi\nreply 2 to hi\nreply 3 to hi"


@pytest.mark.parametrize("lag", [0, 1])
async def test_poll_without_cursor_reads_only_new_messages_after_the_sent_one(
    serve, harness, lag: int
) -> None:
    agent = ThreadAgent(lag=lag)
    url = await serve(agent.app())
    t = await harness.target(
        {
            "url": url + "/conversations/c/activities",
            "request": {"body": {"text": "{{message}}"}, "capture": {"ts": "$.ts"}},
            "response": {
                "text": "$.messages[*].text",
                "poll": {"url": url + "/replies?ts={{sent.ts}}", "interval": "20ms"},
            },
        }
    )
    first = await harness.say(t, "one")
    assert first[-1].text == "reply 1 to one"
    second = await harness.say(t, "two")
    assert second[-1].text == "reply 1 to two"
    assert "/replies?ts=0.0" in agent.polls and "/replies?ts=2.0" in agent.polls


async def test_poll_timeout(serve, harness) -> None:
    agent = ThreadAgent(lag=10_000)
    url = await serve(agent.app())
    t = await harness.target(poll_config(url, timeout="200ms"))
    with pytest.raises(TargetError, match=r"no reply within 200ms polling"):
        await harness.say(t, "anyone?")


async def test_poll_error_status_is_a_target_error(serve, harness) -> None:
    agent = ThreadAgent()
    url = await serve(agent.app())
    config = poll_config(url)
    config["response"]["poll"]["url"] = url + "/missing"
    t = await harness.target(config)
    with pytest.raises(TargetError, match=r"poll answered 404 at http://127.0.0.1:\d+/missing"):
        await harness.say(t, "x")
