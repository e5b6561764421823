"""The demo support agent and the echo agent, driven through the rest target over every transport."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tamesu.kernel.messages import Handoff, ToolCall
from tamesu.testing import EchoAgent, serve_echo_agent

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

JSON = {"text": "$.reply", "tool_calls": "$.tool_calls[*]", "done": "$.end_session"}
HANDOFF = {"tool": "transfer_to_human", "to": "department", "summary": "summary"}


async def test_demo_json_policy_orders_handoff_and_bye(demo_url, harness) -> None:
    t = await harness.target({"url": demo_url + "/chat", "response": JSON, "handoff": HANDOFF})
    late = await harness.say(t, "Can I return shoes I bought 40 days ago?")
    assert late[-1].text == (
        "I'm sorry, returns are accepted within 30 days of delivery, so a return after 40 days is not possible."
    )
    order = await harness.say(t, "Where is ORD-1001?")
    assert [(c.name, c.args) for c in harness.of_type(order, ToolCall)] == [
        ("lookup_order", {"order_id": "ORD-1001"})
    ]
    assert "ORD-1001" in order[-1].text
    human = await harness.say(t, "I want to talk to a human about a refund")
    [handoff] = harness.of_type(human, Handoff)
    assert handoff.to == "billing" and "refund" in (handoff.summary or "")
    bye = await harness.say(t, "ok bye")
    assert bye[-1].done and not human[-1].done


async def test_demo_sse(demo_url, harness) -> None:
    t = await harness.target(
        {
            "url": demo_url + "/chat/stream",
            "streaming": "sse",
            "response": {
                "text": "$[?(@.type=='delta')].text",
                "tool_calls": "$[?(@.type=='tool_call')]",
                "done": "$.end_session",
            },
        }
    )
    out = await harness.say(t, "Status of ORD-42 please")
    assert out[-1].text == "Your order ORD-42 is out for delivery."
    assert [c.name for c in harness.of_type(out, ToolCall)] == ["lookup_order"]


async def test_demo_websocket(demo_url, harness) -> None:
    t = await harness.target(
        {
            "url": demo_url + "/ws",
            "streaming": "websocket",
            "request": {
                "open": {"type": "open", "session_id": "{{session}}"},
                "handshake": [{"wait": "$[?(@.type=='ready')].type", "capture": {"sid": "$.session_id"}}],
                "body": {"type": "user", "text": "{{message}}"},
            },
            "response": {
                "text": "$[?(@.type=='delta')].text",
                "tool_calls": "$[?(@.type=='done')].tool_calls[*]",
                "done": "$[?(@.type=='done')].end_session",
                "turn_done": "$[?(@.type=='done')].type",
            },
        },
        session="demo-1",
    )
    assert t.ctx.scope.lookup("session.sid") == "demo-1"
    out = await harness.say(t, "Can I return them after 10 days?")
    assert out[-1].text.startswith("Good news: returns are accepted within 30 days")
    assert [c.name for c in harness.of_type(out, ToolCall)] == ["lookup_policy"]
    assert (await harness.say(t, "bye"))[-1].done


async def test_demo_socketio(demo_url, harness) -> None:
    t = await harness.target(
        {
            "url": demo_url,
            "streaming": "websocket",
            "protocol": "socketio",
            "request": {"body": {"event": "user_message", "data": {"text": "{{message}}"}}},
            "response": {
                "text": "$[?(@.event=='bot_message')].data.reply",
                "turn_done": "$[?(@.event=='bot_message')].data.done",
            },
        }
    )
    assert (await harness.say(t, "hello"))[-1].text.startswith("Hi! I'm the Mochi Shoes assistant")


async def test_demo_poll(demo_url, harness) -> None:
    t = await harness.target(
        {
            "url": demo_url + "/conversations/{{session.conv}}/activities",
            "session": {
                "open": {"url": demo_url + "/conversations", "capture": {"conv": "$.conversationId"}}
            },
            "request": {"body": {"text": "{{message}}"}},
            "response": {
                "text": "$.activities[?(@.from=='bot')].reply",
                "poll": {
                    "url": demo_url + "/conversations/{{session.conv}}/activities?watermark={{cursor}}",
                    "cursor": "$.watermark",
                    "interval": "20ms",
                },
            },
        }
    )
    first = await harness.say(t, "hi")
    second = await harness.say(t, "ORD-7 status?")
    assert first[-1].text.startswith("Hi!") and second[-1].text == "Your order ORD-7 is delivered."


async def test_echo_agent_json_stream_and_websocket(harness) -> None:
    agent = EchoAgent(script=[{"reply": "scripted first"}])
    async with serve_echo_agent(agent) as url:
        t = await harness.target({"url": url + "/chat", "response": {"text": "$.reply"}}, session="e1")
        assert (await harness.say(t, "one"))[-1].text == "scripted first"
        assert (await harness.say(t, "two"))[-1].text == "echo: two"
        assert agent.requests[-1].body == {"session_id": "e1", "message": "two"}
        sse = await harness.target(
            {"url": url + "/stream", "streaming": "sse", "response": {"text": "$.text"}}
        )
        assert (await harness.say(sse, "a b"))[-1].text == "echo: a b "
        ws = await harness.target(
            {
                "url": url + "/ws",
                "streaming": "websocket",
                "response": {"text": "$.reply", "turn_done": "$.done"},
            }
        )
        assert (await harness.say(ws, "three"))[-1].text == "echo: three"


async def test_demo_agent_script_prints_its_url_first() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "examples" / "demo_agent" / "agent.py"),
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), timeout=20)).decode().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        from tamesu.http import make_client

        async with make_client(timeout=5) as http:
            resp = await http.post(line.split()[-1] + "/chat", json={"session_id": "x", "message": "bye"})
        body: dict[str, Any] = resp.json()
        assert body["end_session"] is True
    finally:
        proc.terminate()
        await proc.wait()


async def test_quickstart_suite_passes_against_the_demo_agent(demo_url, tmp_path, monkeypatch) -> None:
    from tamesu import run_async

    monkeypatch.setenv("AGENT_URL", demo_url)
    result = await run_async(
        [ROOT / "examples" / "quickstart" / "suite.yaml"], output=tmp_path, exclude_tags=["voice"]
    )
    problems = [
        (r.test_id, r.outcome, r.error, [a for a in r.assertions if not a.passed]) for r in result.results
    ]
    assert result.exit_code == 0, problems
    assert sorted(t.verdict for t in result.tests) == ["passed"] * 5
