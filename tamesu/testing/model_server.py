"""A scripted model server speaking the real OpenAI wire format, for tests that need a model.

It answers ``POST /v1/chat/completions`` (plain and streamed, tool calls, JSON output) and
``POST /v1/embeddings`` from rules and a queue you give it, records every request, and can fail on
purpose (429, 500, a hang) so retries and fallbacks are tested over real HTTP. Point any
OpenAI-compatible client (or a tamesu model reference) at ``server.base_url``.

    async with serve_model_server() as server:
        server.when("rubric", Reply(json={"passed": True, "reason": "states the policy"}))
        server.queue(Reply(text="Hi, I bought shoes 40 days ago"))
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["ModelServer", "Reply", "serve_model_server"]


@dataclass
class Reply:
    """One scripted answer: text, tool calls or a JSON object; or a failure."""

    text: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    json: Any = None
    status: int = 200
    error: str = "scripted failure"
    delay: float = 0.0
    usage: tuple[int, int] | None = None
    """(prompt tokens, completion tokens); estimated from the text when unset."""

    def content(self) -> str | None:
        if self.json is not None:
            return json.dumps(self.json)
        return self.text


Matcher = Callable[[dict[str, Any]], bool]


@dataclass
class _Rule:
    match: Matcher
    reply: Reply | Callable[[dict[str, Any]], Reply]
    times: int | None


def _regex_matcher(pattern_text: str) -> Matcher:
    pattern = re.compile(pattern_text, re.I | re.S)
    return lambda req: bool(pattern.search(_text_of(req)))


def _text_of(request: dict[str, Any]) -> str:
    parts = []
    for m in request.get("messages", []):
        c = m.get("content")
        if isinstance(c, list):
            c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
        parts.append(str(c or ""))
    return "\n".join(parts)


class ModelServer:
    """Rules first (in order), then the queue, then ``default``."""

    def __init__(self, *, default: Reply | None = None, dimensions: int = 64) -> None:
        self.default = default or Reply(text="OK")
        self.dimensions = dimensions
        self.requests: list[dict[str, Any]] = []
        self._rules: list[_Rule] = []
        self._queue: list[Reply] = []
        self._failures: list[Reply] = []
        self.base_url = ""
        self._counter = 0

    def when(
        self,
        match: str | Matcher,
        reply: Reply | Callable[[dict[str, Any]], Reply],
        *,
        model: str | None = None,
        times: int | None = None,
    ) -> None:
        """Answer requests whose messages match ``match`` (a regex, or a predicate on the request)."""
        base: Matcher = _regex_matcher(match) if isinstance(match, str) else match

        def matcher(req: dict[str, Any]) -> bool:
            return (model is None or req.get("model") == model) and base(req)

        self._rules.append(_Rule(matcher, reply, times))

    def queue(self, *replies: Reply) -> None:
        self._queue.extend(replies)

    def fail_next(self, n: int = 1, *, status: int = 429, delay: float = 0.0) -> None:
        """The next ``n`` requests of any kind fail with ``status`` (or hang for ``delay``)."""
        self._failures.extend(Reply(status=status, delay=delay) for _ in range(n))

    def _pick(self, request: dict[str, Any]) -> Reply:
        if self._failures:
            return self._failures.pop(0)
        for rule in self._rules:
            if rule.times == 0 or not rule.match(request):
                continue
            if rule.times is not None:
                rule.times -= 1
            return rule.reply(request) if callable(rule.reply) else rule.reply
        if self._queue:
            return self._queue.pop(0)
        return self.default

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        reply = self._pick(body)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status >= 400:
            return web.json_response(
                {"error": {"message": reply.error, "type": "scripted", "code": reply.status}},
                status=reply.status,
            )
        self._counter += 1
        cid = f"chatcmpl-{self._counter}"
        content = reply.content()
        calls = [
            {
                "id": f"call_{self._counter}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
        prompt_tokens, completion_tokens = reply.usage or (
            max(1, len(_text_of(body)) // 4),
            max(1, len(content or json.dumps([c["function"] for c in calls])) // 4),
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        finish = "tool_calls" if calls else "stop"
        model = body.get("model", "scripted")
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = calls
            return web.json_response(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            )
        return await self._stream(request, body, cid, model, content, calls, finish, usage)

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        cid: str,
        model: str,
        content: str | None,
        calls: list[dict[str, Any]],
        finish: str,
        usage: dict[str, int],
    ) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        async def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> None:
            data = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
                **extra,
            }
            await resp.write(f"data: {json.dumps(data)}\n\n".encode())

        await chunk({"role": "assistant", "content": ""})
        for piece in re.findall(r"\S+\s*|\s+", content or ""):
            await chunk({"content": piece})
        for i, call in enumerate(calls):
            head = {
                "index": i,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            await chunk({"tool_calls": [head]})
            await chunk(
                {"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}
            )
        await chunk({}, finish)
        if body.get("stream_options", {}).get("include_usage"):
            data = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": usage,
            }
            await resp.write(f"data: {json.dumps(data)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    def embed(self, text: str) -> list[float]:
        """A deterministic bag-of-words embedding: texts sharing words point the same way."""
        vec = [0.0] * self.dimensions
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
            vec[h % self.dimensions] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        if self._failures:
            failure = self._failures.pop(0)
            if failure.delay:
                await asyncio.sleep(failure.delay)
            return web.json_response({"error": {"message": failure.error}}, status=failure.status)
        inputs = body.get("input", [])
        inputs = [inputs] if isinstance(inputs, str) else inputs
        data = [{"object": "embedding", "index": i, "embedding": self.embed(t)} for i, t in enumerate(inputs)]
        tokens = sum(len(t) // 4 + 1 for t in inputs)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "scripted"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        return app


@asynccontextmanager
async def serve_model_server(
    server: ModelServer | None = None, *, port: int = 0
) -> AsyncIterator[ModelServer]:
    """Run a ModelServer on 127.0.0.1 for the duration of the block; ``server.base_url`` ends in /v1."""
    server = server or ModelServer()
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    sock = site._server.sockets[0]  # type: ignore[union-attr]
    server.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    try:
        yield server
    finally:
        await runner.cleanup()
