"""The mcp target against a hostile MCP server on stdio (tests/targets/fixtures/mcp_hostile.py):
a flood of tools (200,000 make a 20 MB line), answers far over ``limits.answer_size``, stderr without end, a stdout that is
not JSON-RPC and an answer that stalls half way; each ends in a clear error and bounded memory."""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tamesu.errors import TargetError
from tamesu.limits import LimitExceeded
from tamesu.targets.mcp import adapter as mcp_target
from tamesu.targets.mcp.mcp_wire import STDERR_KEPT
from tamesu.testing.model_server import Reply

from .test_mcp import Rig, model, rig

__all__ = ["model", "rig"]

pytestmark = pytest.mark.integration

HOSTILE = str(Path(__file__).parent / "fixtures" / "mcp_hostile.py")


def server(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [HOSTILE, *args]}


async def test_a_tool_list_over_answer_size_is_refused_before_it_is_parsed(rig: Rig) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(LimitExceeded) as err:
            await rig.target(server("flood", "200000"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "larger than 4 MB" in str(err.value) and "listing its tools" in str(err.value)
    assert peak < 40_000_000, f"{peak / 1e6:.0f} MB held while refusing a 20 MB tool list"
    assert rig.model.requests == [], "nothing was offered to the model"


async def test_more_tools_than_a_server_may_list_is_an_error(rig: Rig) -> None:
    with pytest.raises(TargetError, match="lists more than 1000 tools"):
        await rig.target(server("flood", "1500"))


async def test_more_tools_than_a_model_takes_must_be_picked_with_allow_tools(rig: Rig, harness: Any) -> None:
    with pytest.raises(TargetError, match="offers 200 tools; a model is given at most 128") as err:
        await rig.target(server("flood", "200"))
    assert err.value.kind == "config"
    rig.model.queue(Reply(text="fine"))
    t = await rig.target({**server("flood", "200"), "allow_tools": ["t00001", "t00002"]})
    await harness.say(t, "hi")
    assert rig.offered() == ["t00001", "t00002"]


async def test_a_tool_result_over_answer_size_is_skipped_unread(rig: Rig, harness: Any) -> None:
    rig.model.queue(Reply(tool_calls=[("dump", {})]))
    t = await rig.target(server("huge", "60"))
    tracemalloc.start()
    try:
        with pytest.raises(LimitExceeded) as err:
            await harness.say(t, "dump it")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "larger than 4 MB" in str(err.value) and "calling tool dump" in str(err.value)
    assert peak < 40_000_000, f"{peak / 1e6:.0f} MB held while skipping a 60 MB answer"


async def test_output_that_is_not_json_rpc_is_named_at_once(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_target, "OPEN_TIMEOUT", 20.0)
    began = time.monotonic()
    with pytest.raises(TargetError) as err:
        await rig.target(server("garbage"))
    assert time.monotonic() - began < 10, "no waiting for a handshake that cannot come"
    assert "its output is not JSON-RPC: 'Server starting... <not JSON-RPC>'" in str(err.value)
    assert not err.value.retryable


async def test_only_the_tail_of_a_noisy_stderr_is_kept(rig: Rig, harness: Any) -> None:
    rig.model.queue(Reply(tool_calls=[("dump", {})]), Reply(text="done"))
    t = await rig.target(server("noisy", "20"))
    out = await harness.say(t, "go")
    assert out[-1].text == "done"
    pipe = t.link.pipe  # type: ignore[attr-defined]
    assert sum(map(len, pipe.stderr)) <= STDERR_KEPT + 65_536
    assert pipe.stderr_text().endswith("noisy: ready\n")


async def test_an_answer_still_arriving_at_call_timeout_says_so(rig: Rig, harness: Any) -> None:
    rig.model.queue(Reply(tool_calls=[("dump", {})]))
    t = await rig.target({**server("slow"), "call_timeout": "1s"})
    with pytest.raises(TargetError) as err:
        await harness.say(t, "go")
    assert "the answer to tool dump took longer than call_timeout (1s) to read" in str(err.value)


async def test_a_json_answer_over_http_is_read_no_further_than_answer_size(
    rig: Rig, harness: Any, serve: Any
) -> None:
    """A streamable HTTP server answering tools/call with 60 MB of JSON: refused at 4 MB."""
    from aiohttp import web

    written = [0]

    async def mcp(request: web.Request) -> web.StreamResponse:
        message = await request.json()
        rid, method = message.get("id"), message.get("method")
        if rid is None:
            return web.Response(status=202)
        if method == "initialize":
            info = {"name": "hostile", "version": "1"}
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": info,
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "dump", "inputSchema": {"type": "object", "properties": {}}}]}
        elif method == "tools/call":
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            try:
                await response.write(
                    b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", "text": "' % rid
                )
                for _ in range(60):
                    await response.write(b"y" * 1_000_000)
                await response.write(b'"}]}}')
            except (ConnectionError, RuntimeError):
                pass
            return response
        else:
            return web.json_response(
                {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}}
            )
        return web.json_response(
            {"jsonrpc": "2.0", "id": rid, "result": result}, headers={"Mcp-Session-Id": "s1"}
        )

    async def no_stream(request: web.Request) -> web.Response:
        return web.Response(status=405)

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    app.router.add_get("/mcp", no_stream)
    app.router.add_delete("/mcp", no_stream)
    url = f"{await serve(app)}/mcp"
    rig.model.queue(Reply(tool_calls=[("dump", {})]))
    t = await rig.target({"url": url})
    with pytest.raises(LimitExceeded) as err:
        await harness.say(t, "dump it")
    assert "larger than 4 MB" in str(err.value) and "calling tool dump" in str(err.value)
    assert written[0] < 30, f"the server wrote {written[0]} MB before tamesu stopped reading"
