"""Mochi Shoes support: a small deterministic agent to try tamesu against.

    python examples/demo_agent/agent.py --port 8765

It speaks every rest transport tamesu reads: JSON (POST /chat), server-sent events
(POST /chat/stream), a websocket (/ws), socket.io (/socket.io/) and a polled conversation API
(/conversations). The answers come from a few rules, so tests against it are repeatable:
returns within 30 days, order status for ORD-<digits> (tool lookup_order), a handoff to a person
(tool transfer_to_human) and "bye" to end the session.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

RETURN_DAYS = 30
CONVERSATIONS = web.AppKey("conversations", dict)
IDS = web.AppKey("ids", itertools.count)
SOCKETS = web.AppKey("sockets", set)
STATUSES = ("processing", "shipped", "out for delivery", "delivered")


@dataclass
class Answer:
    reply: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    end_session: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"reply": self.reply, "tool_calls": self.tool_calls, "end_session": self.end_session}


def answer(message: str) -> Answer:
    """The agent's brain: the first rule that applies wins."""
    text = message.lower()
    if re.search(r"\b(human|agent|person|someone real)\b", text):
        department = "billing" if re.search(r"refund|charge|invoice|billing", text) else "support"
        summary = f"Customer asked for a person: {message.strip()}"
        return Answer(
            f"Of course. I'm transferring you to our {department} team now.",
            [{"name": "transfer_to_human", "args": {"department": department, "summary": summary}}],
        )
    if re.search(r"\b(bye|goodbye)\b", text):
        return Answer("Thanks for contacting Mochi Shoes. Goodbye!", end_session=True)
    order = re.search(r"\bORD-(\d+)\b", message, re.IGNORECASE)
    if order:
        order_id = f"ORD-{order.group(1)}"
        status = STATUSES[sum(map(int, order.group(1))) % len(STATUSES)]
        return Answer(
            f"Your order {order_id} is {status}.",
            [{"name": "lookup_order", "args": {"order_id": order_id}}],
        )
    if re.search(r"return|refund|send (it|them) back", text):
        days = re.search(r"(\d+)\s*days?", text)
        policy = f"returns are accepted within {RETURN_DAYS} days of delivery"
        if days and int(days.group(1)) > RETURN_DAYS:
            reply = f"I'm sorry, {policy}, so a return after {days.group(1)} days is not possible."
        elif days:
            reply = f"Good news: {policy}, so you can still return them. Start at mochishoes.example/returns."
        else:
            reply = f"Our policy: {policy}. How many days ago did your order arrive?"
        return Answer(reply, [{"name": "lookup_policy", "args": {"topic": "returns"}}])
    if re.search(r"\b(hi|hello|hey)\b", text):
        return Answer("Hi! I'm the Mochi Shoes assistant. How can I help you today?")
    return Answer(
        "I can help with returns, order status (tell me your ORD- number) or connect you to a person."
    )


def _chunks(reply: str) -> list[str]:
    """The reply in word-sized pieces, as a streaming model would send it."""
    return re.findall(r"\S+\s*", reply) or [reply]


async def _message_of(request: web.Request) -> str:
    body = await request.json()
    return str(body.get("message") or body.get("text") or "")


async def chat(request: web.Request) -> web.Response:
    return web.json_response(answer(await _message_of(request)).to_json())


async def chat_stream(request: web.Request) -> web.StreamResponse:
    result = answer(await _message_of(request))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    for piece in _chunks(result.reply):
        await resp.write(f"data: {json.dumps({'type': 'delta', 'text': piece})}\n\n".encode())
    for call in result.tool_calls:
        await resp.write(f"data: {json.dumps({'type': 'tool_call', **call})}\n\n".encode())
    await resp.write(f"data: {json.dumps({'type': 'done', 'end_session': result.end_session})}\n\n".encode())
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


async def websocket(request: web.Request) -> web.WebSocketResponse:
    """{type: open} greets; {type: user, text} gets deltas, then {type: done, tool_calls, end_session}."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    request.app[SOCKETS].add(ws)
    async for msg in ws:
        if msg.type != WSMsgType.TEXT:
            continue
        data = json.loads(msg.data)
        if data.get("type") == "open":
            await ws.send_json({"type": "ready", "session_id": data.get("session_id")})
        elif data.get("type") == "user":
            result = answer(str(data.get("text", "")))
            for piece in _chunks(result.reply):
                await ws.send_json({"type": "delta", "text": piece})
            await ws.send_json(
                {"type": "done", "tool_calls": result.tool_calls, "end_session": result.end_session}
            )
    request.app[SOCKETS].discard(ws)
    return ws


async def socketio(request: web.Request) -> web.WebSocketResponse:
    """Just enough Engine.IO v4 / socket.io v5: events ``user_message`` -> ``bot_message``."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    request.app[SOCKETS].add(ws)
    sid = f"demo{id(ws)}"
    await ws.send_str(
        "0" + json.dumps({"sid": sid, "upgrades": [], "pingInterval": 25000, "pingTimeout": 20000})
    )
    async for msg in ws:
        if msg.type != WSMsgType.TEXT:
            continue
        if msg.data.startswith("40"):
            await ws.send_str("40" + json.dumps({"sid": sid}))
        elif msg.data.startswith("42"):
            event, *args = json.loads(msg.data[2:])
            if event == "user_message":
                result = answer(str((args or [{}])[0].get("text", "")))
                await ws.send_str("42" + json.dumps(["bot_message", {**result.to_json(), "done": True}]))
    request.app[SOCKETS].discard(ws)
    return ws


async def open_conversation(request: web.Request) -> web.Response:
    conv_id = f"conv-{next(request.app[IDS])}"
    request.app[CONVERSATIONS][conv_id] = []
    return web.json_response({"conversationId": conv_id}, status=201)


async def post_activity(request: web.Request) -> web.Response:
    thread = request.app[CONVERSATIONS].get(request.match_info["conv"])
    if thread is None:
        return web.json_response({"error": "no such conversation"}, status=404)
    text = await _message_of(request)
    thread.append({"id": str(len(thread)), "from": "user", "text": text})
    result = answer(text)
    thread.append({"id": str(len(thread)), "from": "bot", "text": result.reply, **result.to_json()})
    return web.json_response({"id": str(len(thread) - 2)})


async def get_activities(request: web.Request) -> web.Response:
    thread = request.app[CONVERSATIONS].get(request.match_info["conv"])
    if thread is None:
        return web.json_response({"error": "no such conversation"}, status=404)
    since = int(request.query.get("watermark") or 0)
    return web.json_response({"activities": thread[since:], "watermark": str(len(thread))})


async def close_sockets(app: web.Application) -> None:
    """Open websockets would hold the shutdown until its timeout."""
    for ws in list(app[SOCKETS]):
        await ws.close(code=1001, message=b"server shutdown")


async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def create_app() -> web.Application:
    """The agent as an aiohttp app (tests serve it on a free port)."""
    app = web.Application()
    app[CONVERSATIONS] = {}
    app[IDS] = itertools.count(1)
    app[SOCKETS] = set()
    app.on_shutdown.append(close_sockets)
    app.router.add_post("/chat", chat)
    app.router.add_post("/chat/stream", chat_stream)
    app.router.add_get("/ws", websocket)
    app.router.add_get("/socket.io/", socketio)
    app.router.add_post("/conversations", open_conversation)
    app.router.add_post("/conversations/{conv}/activities", post_activity)
    app.router.add_get("/conversations/{conv}/activities", get_activities)
    app.router.add_get("/health", health)
    return app


async def serve(port: int, host: str = "127.0.0.1") -> None:
    runner = web.AppRunner(create_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    bound = runner.addresses[0][1]
    print(f"listening on http://{host}:{bound}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.port, args.host))
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
