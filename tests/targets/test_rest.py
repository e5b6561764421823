"""The rest target with plain JSON answers: reading, session.open, connect retries, errors, handoff."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web

from tamesu.errors import TargetError
from tamesu.kernel.messages import AgentTurn, Handoff, RawResponse, ToolCall

pytestmark = pytest.mark.integration


def json_app(answer: Any, *, seen: list[dict[str, Any]] | None = None, status: int = 200) -> web.Application:
    """An agent answering every POST with ``answer`` (a value, or a function of the request body)."""

    async def handle(request: web.Request) -> web.Response:
        raw = await request.text()
        if seen is not None:
            seen.append({"path": request.path_qs, "headers": request.headers.copy(), "raw": raw})
        body = json.loads(raw) if raw.startswith(("{", "[")) else raw
        value = answer(body) if callable(answer) else answer
        return web.json_response(value, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def text_app(text: str, *, status: int = 200, content_type: str = "text/plain") -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(status=status, text=text, content_type=content_type)

    app = web.Application()
    app.router.add_post("/chat", handle)
    return app


async def test_reply_text_status_raw_and_rendered_request(serve, harness) -> None:
    seen: list[dict[str, Any]] = []
    url = await serve(json_app(lambda b: {"reply": f"you said {b['text']}", "n": 1}, seen=seen))
    t = await harness.target(
        {
            "url": url + "/chat",
            "headers": {"Authorization": "Bearer {{secrets.TOKEN}}", "X-Shop": "{{vars.shop}}"},
            "request": {"body": {"sid": "{{session}}", "text": "{{message}}", "n": "{{vars.n}}"}},
            "response": {"text": "$.reply"},
        },
        secrets={"TOKEN": "tok-123456"},
        vars={"shop": "Mochi", "n": "7"},
        session="s-42",
    )
    out = await harness.say(t, "hello")
    raw = harness.of_type(out, RawResponse)
    assert raw == [RawResponse(body={"reply": "you said hello", "n": 1}, status=200, at=raw[0].at)]
    turn = out[-1]
    assert turn.text == "you said hello" and turn.status == 200 and not turn.done
    assert turn.sent_at is not None and turn.first_byte_at is not None and turn.end_at is not None
    assert turn.sent_at <= turn.first_byte_at <= turn.end_at
    assert json.loads(seen[0]["raw"]) == {"sid": "s-42", "text": "hello", "n": "7"}
    assert seen[0]["headers"]["Authorization"] == "Bearer tok-123456"
    assert seen[0]["headers"]["X-Shop"] == "Mochi"


async def test_default_body_and_string_body(serve, harness) -> None:
    seen: list[dict[str, Any]] = []
    url = await serve(json_app({"reply": "ok"}, seen=seen))
    t = await harness.target({"url": url, "response": {"text": "$.reply"}}, session="abc")
    await harness.say(t, "hi")
    assert json.loads(seen[0]["raw"]) == {"session_id": "abc", "message": "hi"}
    t2 = await harness.target({"url": url, "request": {"body": "say {{message}} now"}})
    await harness.say(t2, "hey")
    assert seen[1]["raw"] == "say hey now"


async def test_several_matches_join(serve, harness) -> None:
    url = await serve(json_app({"messages": [{"text": "Hi."}, {"text": "How can I help?"}]}))
    joined = await harness.target({"url": url, "response": {"text": "$.messages[*].text", "join": "\n"}})
    assert (await harness.say(joined, "x"))[-1].text == "Hi.\nHow can I help?"
    plain = await harness.target({"url": url, "response": {"text": "$.messages[*].text"}})
    assert (await harness.say(plain, "x"))[-1].text == "Hi.How can I help?"


async def test_tool_calls_in_every_shape_and_done(serve, harness) -> None:
    answer = {
        "reply": "done",
        "calls": [
            "lookup_policy",
            {"name": "lookup_order", "args": {"order_id": "ORD-1"}},
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "refund", "arguments": '{"amount": 5}'},
            },
        ],
        "end": True,
    }
    url = await serve(json_app(answer))
    t = await harness.target(
        {"url": url, "response": {"text": "$.reply", "tool_calls": "$.calls[*]", "done": "$.end"}}
    )
    out = await harness.say(t, "x")
    calls = harness.of_type(out, ToolCall)
    assert [(c.name, c.args, c.id) for c in calls] == [
        ("lookup_policy", {}, None),
        ("lookup_order", {"order_id": "ORD-1"}, None),
        ("refund", {"amount": 5}, "call_9"),
    ]
    assert out[-1].done is True


async def test_4xx_is_recorded_not_raised_nor_retried(serve, harness) -> None:
    seen: list[dict[str, Any]] = []
    url = await serve(json_app({"error": "bad request"}, seen=seen, status=422))
    t = await harness.target({"url": url, "response": {"text": "$.reply"}})
    out = await harness.say(t, "x")
    assert out[-1].status == 422 and out[-1].text == ""
    assert harness.of_type(out, RawResponse)[0].body == {"error": "bad request"}
    assert len(seen) == 1


async def test_4xx_html_is_recorded(serve, harness) -> None:
    url = await serve(text_app("<h1>nope</h1>", status=404, content_type="text/html"))
    t = await harness.target({"url": url + "/chat", "response": {"text": "$.reply"}})
    out = await harness.say(t, "x")
    assert out[-1].status == 404 and out[-1].text == ""
    assert harness.of_type(out, RawResponse)[0].body == "<h1>nope</h1>"


async def test_non_json_reply_is_a_target_error(serve, harness) -> None:
    url = await serve(text_app("<html>maintenance</html>", content_type="text/html"))
    t = await harness.target({"url": url + "/chat", "response": {"text": "$.reply"}})
    with pytest.raises(TargetError, match=r"agent answered non-JSON \(text/html\): <html>maintenance</html>"):
        await harness.say(t, "x")


async def test_text_reply_without_paths_is_the_text(serve, harness) -> None:
    url = await serve(text_app("plain answer"))
    t = await harness.target({"url": url + "/chat"})
    assert (await harness.say(t, "x"))[-1].text == "plain answer"


async def test_session_open_captures_render_in_later_templates(serve, harness) -> None:
    seen: list[dict[str, Any]] = []

    async def open_conv(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append({"open": body, "auth": request.headers.get("Authorization")})
        return web.json_response({"conversationId": "c-7", "token": "tk-abcdef"})

    async def chat(request: web.Request) -> web.Response:
        seen.append({"path": request.path, "auth": request.headers.get("Authorization")})
        return web.json_response({"reply": "hi"})

    app = web.Application()
    app.router.add_post("/conversations", open_conv)
    app.router.add_post("/conversations/{id}/chat", chat)
    url = await serve(app)
    t = await harness.target(
        {
            "url": url + "/conversations/{{session.id}}/chat",
            "headers": {"Authorization": "Bearer {{session.token}}"},
            "session": {
                "open": {
                    "url": url + "/conversations",
                    "headers": {"Authorization": "Bearer {{secrets.KEY}}"},
                    "body": {"user": "{{session}}"},
                    "capture": {"id": "$.conversationId", "token": "$.token"},
                }
            },
            "response": {"text": "$.reply"},
        },
        secrets={"KEY": "master-key-1"},
        session="u-1",
    )
    assert (await harness.say(t, "x"))[-1].text == "hi"
    assert seen[0] == {"open": {"user": "u-1"}, "auth": "Bearer master-key-1"}
    assert seen[1] == {"path": "/conversations/c-7/chat", "auth": "Bearer tk-abcdef"}


async def test_session_open_missing_capture_fails_the_start(serve, harness) -> None:
    url = await serve(json_app({"other": 1}))
    with pytest.raises(TargetError, match=r"session.open answer has nothing at \$.token \(capture token\)"):
        await harness.target({"url": url, "session": {"open": {"url": url, "capture": {"token": "$.token"}}}})


async def test_refused_connection_after_attempts(harness, closed_port) -> None:
    url = f"http://127.0.0.1:{closed_port}/chat"
    t = await harness.target(
        {"url": url, "connect": {"attempts": 3, "backoff": "10ms", "max_backoff": "20ms"}}
    )
    with pytest.raises(TargetError, match=rf"^connection refused at {url} after 3 attempts$"):
        await harness.say(t, "x")


async def test_503_then_200_succeeds_on_retry(serve, harness) -> None:
    calls = {"n": 0}

    async def flaky(request: web.Request) -> web.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return web.Response(status=503, text="warming up")
        return web.json_response({"reply": "ready"})

    app = web.Application()
    app.router.add_post("/chat", flaky)
    url = await serve(app)
    t = await harness.target(
        {"url": url + "/chat", "connect": {"backoff": "10ms"}, "response": {"text": "$.reply"}}
    )
    out = await harness.say(t, "x")
    assert out[-1].text == "ready" and out[-1].status == 200 and calls["n"] == 2


@pytest.mark.parametrize(("status", "tries"), [(503, 2), (429, 2), (400, 1)])
async def test_which_statuses_are_retried(serve, harness, status: int, tries: int) -> None:
    seen: list[dict[str, Any]] = []
    url = await serve(json_app({"error": "x" * 300}, seen=seen, status=status))
    t = await harness.target({"url": url, "connect": {"attempts": 2, "backoff": "10ms"}})
    if tries == 1:
        assert (await harness.say(t, "x"))[-1].status == status
    else:
        with pytest.raises(TargetError) as err:
            await harness.say(t, "x")
        first_200 = ('{"error": "' + "x" * 300)[:200]
        assert str(err.value) == f"agent answered {status} after 2 attempts: {first_200}…"
    assert len(seen) == tries


@pytest.mark.timing
@pytest.mark.parametrize("status", [429, 503])
async def test_a_full_agent_is_a_capacity_refusal_and_its_retry_after_is_waited(
    serve, harness, status: int
) -> None:
    from tamesu.errors import CapacityRefused

    seen: list[float] = []

    async def full(request: web.Request) -> web.Response:
        seen.append(asyncio.get_running_loop().time())
        return web.Response(status=status, text="no room", headers={"Retry-After": "1"})

    app = web.Application()
    app.router.add_post("/chat", full)
    url = await serve(app)
    t = await harness.target({"url": url + "/chat", "connect": {"attempts": 2, "backoff": "10ms"}})
    with pytest.raises(CapacityRefused) as err:
        await harness.say(t, "x")
    assert str(err.value) == f"agent answered {status} after 2 attempts: no room"
    assert (err.value.retry_after, err.value.kind) == (1.0, "capacity")
    assert len(seen) == 2 and seen[1] - seen[0] >= 1.0, "the second try waited for Retry-After"


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    import time
    from email.utils import formatdate

    from tamesu.wire.connect import retry_after_seconds

    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("86400") == 600.0, "bounded"
    later = retry_after_seconds(formatdate(time.time() + 30, usegmt=True))
    assert later is not None and 25 <= later <= 30
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


async def test_slow_agent_is_a_timeout(serve, harness) -> None:
    release = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        await release.wait()
        return web.json_response({"reply": "late"})

    app = web.Application()
    app.router.add_post("/chat", slow)
    url = await serve(app)
    t = await harness.target({"url": url + "/chat"}, turn_timeout=0.3)
    try:
        with pytest.raises(TargetError, match=r"no answer within 300ms"):
            await harness.say(t, "x")
    finally:
        release.set()


async def test_secrets_never_appear_in_errors(serve, harness, closed_port) -> None:
    secret = "sk-live-SECRET-99"
    t = await harness.target(
        {
            "url": f"http://127.0.0.1:{closed_port}/chat?key={{{{secrets.TOKEN}}}}",
            "headers": {"Authorization": "Bearer {{secrets.TOKEN}}"},
            "connect": {"attempts": 1},
        },
        secrets={"TOKEN": secret},
    )
    with pytest.raises(TargetError) as refused:
        await harness.say(t, "x")
    assert secret not in str(refused.value) and "key=***" in str(refused.value)

    async def leaky(request: web.Request) -> web.Response:
        return web.Response(
            text=f"<p>bad token {request.headers['Authorization']}</p>", content_type="text/html"
        )

    app = web.Application()
    app.router.add_post("/chat", leaky)
    url = await serve(app)
    t2 = await harness.target(
        {
            "url": url + "/chat",
            "headers": {"Authorization": "{{secrets.TOKEN}}"},
            "response": {"text": "$.r"},
        },
        secrets={"TOKEN": secret},
    )
    with pytest.raises(TargetError) as non_json:
        await harness.say(t2, "x")
    assert secret not in str(non_json.value) and "bad token ***" in str(non_json.value)


async def test_handoff_by_tool_once_per_session(serve, harness) -> None:
    answer = {
        "reply": "Transferring you now",
        "calls": [
            {"name": "transfer_to_human", "args": {"department": "billing", "summary": "double charge"}}
        ],
    }
    url = await serve(json_app(answer))
    t = await harness.target(
        {
            "url": url,
            "response": {"text": "$.reply", "tool_calls": "$.calls[*]"},
            "handoff": {"tool": "transfer_to_human", "to": "department", "summary": "summary"},
        }
    )
    first = await harness.say(t, "human please")
    handoffs = harness.of_type(first, Handoff)
    assert [(h.to, h.summary) for h in handoffs] == [("billing", "double charge")]
    assert first.index(handoffs[0]) == len(first) - 2
    assert harness.of_type(await harness.say(t, "again"), Handoff) == []


async def test_handoff_by_json_path(serve, harness) -> None:
    answers = iter(
        [{"reply": "a", "handoff": False}, {"reply": "b", "handoff": {"to": "sales", "note": "wants 50"}}]
    )
    url = await serve(json_app(lambda _: next(answers)))
    t = await harness.target(
        {
            "url": url,
            "response": {"text": "$.reply"},
            "handoff": {"json_path": "$.handoff", "to": "$.handoff.to", "summary": "$.handoff.note"},
        }
    )
    assert harness.of_type(await harness.say(t, "x"), Handoff) == []
    found = harness.of_type(await harness.say(t, "y"), Handoff)
    assert [(h.to, h.summary) for h in found] == [("sales", "wants 50")]


async def test_handoff_by_regex(serve, harness) -> None:
    url = await serve(json_app({"reply": "Please hold, transferring you to Billing."}))
    t = await harness.target(
        {"url": url, "response": {"text": "$.reply"}, "handoff": {"regex": r"(?i)transferring you to (\w+)"}}
    )
    found = harness.of_type(await harness.say(t, "x"), Handoff)
    assert [(h.to, h.summary) for h in found] == [("Billing", None)]


async def test_plain_agent_cannot_speak_first(serve, harness) -> None:
    seen: list[dict[str, Any]] = []
    url = await serve(json_app({"reply": "x"}, seen=seen))
    t = await harness.target({"url": url})
    out = await harness.say(t, None)
    assert out == [AgentTurn(text="", sent_at=None, end_at=out[0].end_at, at=out[0].at)]
    assert seen == []


async def test_bad_jsonpath_fails_the_start(serve, harness) -> None:
    url = await serve(json_app({}))
    with pytest.raises(TargetError, match="bad JSONPath"):
        await harness.target({"url": url, "response": {"text": "$[?(@.a=="}})
