"""What a run keeps of its agent is bounded: a turn's text, the raw answers a transcript stores,
and the run's own time limit, which ends an agent that never stops talking."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from tamesu.actors.graph import run_graph
from tamesu.actors.services import RunServices
from tamesu.config.target import parse_target
from tamesu.kernel.events import Truncated
from tamesu.limits import Limits

from ..targets.conftest import Serve, serve
from .agents import make_spec, register

__all__ = ["serve"]

register()


@pytest.fixture
async def services() -> AsyncIterator[RunServices]:
    svc = RunServices.create()
    yield svc
    await svc.aclose()


@pytest.mark.unit
async def test_a_turn_past_the_turn_text_limit_ends_the_run_with_its_text_cut(services: RunServices) -> None:
    spec = make_spec(say=["hi", "and then?"]).evolve(limits=Limits(turn_text=10))
    out = await run_graph(spec, services, encode_boundary=True)
    assert out.error_kind == "limit" and not out.retryable
    assert out.error == (
        "agent turn 1 gathered more than 10 characters of text (limits.turn_text in tamesu.yaml)"
    )
    agent = out.transcript.agent_turns()
    assert [t.text for t in agent] == ["You said: "]  # "You said: hi" cut at 10 characters
    assert len(out.transcript.user_turns()) == 1


@pytest.mark.unit
async def test_raw_answers_past_the_transcript_size_are_kept_as_truncation_marks(
    services: RunServices,
) -> None:
    spec = make_spec(say=["one", "two", "three"]).evolve(limits=Limits(transcript_size=200))
    out = await run_graph(spec, services, encode_boundary=True)
    assert out.error is None, out.error
    raws = [turn.raw[0] for turn in out.transcript.agent_turns()]
    assert raws[0]["reply"] == "You said: one" and raws[1]["reply"] == "You said: two"
    assert raws[2]["truncated"] is True and raws[2]["bytes"] > 0
    assert raws[2]["head"].startswith('{"reply":"You said: three"')
    assert [e.limit for e in out.transcript.events if isinstance(e, Truncated)] == [200]


@pytest.mark.integration
async def test_a_run_time_limit_ends_an_agent_that_streams_forever(
    services: RunServices, serve: Serve
) -> None:
    async def endless(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            while True:
                await resp.write(b'data: {"text": "x"}\n\n')
        except (ConnectionResetError, RuntimeError):
            return resp

    app = web.Application()
    app.router.add_post("/stream", endless)
    url = f"{await serve(app)}/stream"
    target = parse_target({"type": "rest", "url": url, "streaming": "sse", "response": {"text": "$.text"}})
    spec = make_spec(say=["hi"]).evolve(target=target)
    started = asyncio.get_running_loop().time()
    out = await run_graph(spec, services, timeout=1.0)
    took = asyncio.get_running_loop().time() - started
    assert out.error_kind == "timeout" and out.error == "the run took longer than 1s"
    assert took < 10


@pytest.mark.integration
async def test_a_turn_past_the_tool_call_limit_ends_the_run_keeping_the_first_calls(
    services: RunServices, serve: Serve
) -> None:
    async def flood(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"reply": "ok", "tools": [{"name": f"t{i}"} for i in range(5000)]})

    app = web.Application()
    app.router.add_post("/chat", flood)
    url = f"{await serve(app)}/chat"
    target = parse_target(
        {"type": "rest", "url": url, "response": {"text": "$.reply", "tool_calls": "$.tools[*]"}}
    )
    spec = make_spec(say=["hi"]).evolve(target=target, limits=Limits(tool_calls=100))
    out = await run_graph(spec, services)
    assert out.error_kind == "limit" and not out.retryable
    assert out.error == "agent turn 1 made more than 100 tool calls (limits.tool_calls in tamesu.yaml)"
    assert [(e.what, e.limit) for e in out.transcript.events if isinstance(e, Truncated)] == [
        ("tool_calls", 100)
    ]
    kept = [call.name for turn in out.transcript.agent_turns() for call in turn.tool_calls]
    assert kept == [f"t{i}" for i in range(100)]
