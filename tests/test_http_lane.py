"""The fast lane's HTTP/1.1 connections against real servers on loopback, byte by byte."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from aiohttp import web

from tamesu.http import is_connect_error, make_client
from tamesu.http_lane import Pool

pytestmark = pytest.mark.integration

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawAgent:
    """A TCP server that answers with whatever bytes a test wants, counting its connections."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed = asyncio.Event()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        body = await reader.readexactly(length) if length else b""
        self.requests.append(head + body)
        return head + body


@pytest.fixture
async def raw() -> AsyncIterator[Callable[[Handler], Awaitable[tuple[str, RawAgent]]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> tuple[str, RawAgent]:
        agent = RawAgent()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            agent.connections += 1
            try:
                await handler(reader, writer)
            finally:
                writer.close()
                agent.closed.set()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}", agent

    yield start
    for server in servers:
        server.close()


def answering(agent_ref: list[RawAgent], *answers: bytes, then_close: bool = False) -> Handler:
    """A handler that reads one request per answer and writes that answer."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for answer in answers:
            if await agent_ref[0].read_request(reader) is None:
                return
            writer.write(answer)
            await writer.drain()
        if not then_close:
            await reader.read()  # keep the connection until the client closes it

    return handler


async def start_answering(raw, *answers: bytes, then_close: bool = False) -> tuple[str, RawAgent]:  # type: ignore[no-untyped-def]
    ref: list[RawAgent] = []
    url, agent = await raw(answering(ref, *answers, then_close=then_close))
    ref.append(agent)
    return url, agent


OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"a": true}'


async def test_a_kept_alive_connection_carries_the_next_request(raw) -> None:  # type: ignore[no-untyped-def]
    url, agent = await start_answering(raw, OK, OK)
    pool = Pool()
    try:
        first = await pool.request("POST", url + "/chat?x=1", {"X-Shop": "mochi"}, b'{"m":1}')
        second = await pool.request("GET", url + "/state", {}, None)
    finally:
        pool.close()
    assert first.status == second.status == 200 and first.content == b'{"a": true}'
    assert first.headers["content-type"] == "application/json"
    assert agent.connections == 1
    head = agent.requests[0].decode()
    assert head.startswith("POST /chat?x=1 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert "X-Shop: mochi\r\n" in head and "Content-Length: 7\r\n" in head and head.endswith('{"m":1}')
    assert agent.requests[1].startswith(b"GET /state HTTP/1.1") and b"Content-Length" not in agent.requests[1]


async def test_chunked_and_close_delimited_bodies_are_read_whole(raw) -> None:  # type: ignore[no-untyped-def]
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    until_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthe whole rest"
    url, agent = await start_answering(raw, chunked, until_close, then_close=True)
    pool = Pool()
    try:
        first = await pool.request("GET", url, {}, None)
        second = await pool.request("GET", url, {}, None)
        third = await pool.request("GET", url, {}, None)
    finally:
        pool.close()
    assert first.content == b"hello world" and first.headers.getall("set-cookie") == ["a=1", "b=2"]
    assert second.content == b"the whole rest"
    assert third.status == 200 and agent.connections == 2, "a closed connection is not used again"


async def test_an_interim_answer_is_skipped_and_the_status_is_seen_before_the_body(raw) -> None:  # type: ignore[no-untyped-def]
    seen: list[int] = []
    status_seen, body_sent = asyncio.Event(), asyncio.Event()
    ref: list[RawAgent] = []

    def on_status(status: int) -> None:
        seen.append(status)
        status_seen.set()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await ref[0].read_request(reader)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\n")
        await writer.drain()
        await status_seen.wait()  # the client reports the status before the body exists
        body_sent.set()
        writer.write(b"done")
        await reader.read()

    url, agent = await raw(handler)
    ref.append(agent)
    pool = Pool()
    try:
        answer = await asyncio.wait_for(pool.request("POST", url, {}, b"x", on_status=on_status), timeout=10)
    finally:
        pool.close()
    assert seen == [201] and body_sent.is_set() and answer.content == b"done"


async def test_a_stale_kept_alive_connection_is_retried_only_when_that_is_safe(raw) -> None:  # type: ignore[no-untyped-def]
    # the agent answers once per connection and then closes without saying so (no Connection: close)
    url, agent = await start_answering(raw, OK, then_close=True)
    pool = Pool()
    try:
        await pool.request("GET", url, {}, None)
        await agent.closed.wait()
        agent.closed.clear()
        again = await pool.request("GET", url, {}, None)
        assert again.status == 200, "GET is sent again on a fresh connection"
        await agent.closed.wait()
        with pytest.raises(httpx.RemoteProtocolError) as err:
            await pool.request("POST", url, {}, b"{}")
    finally:
        pool.close()
    assert is_connect_error(err.value), "a POST nobody answered is retried by the connect policy"


async def test_a_broken_or_cut_answer_is_a_protocol_error(raw) -> None:  # type: ignore[no-untyped-def]
    url, _ = await start_answering(raw, b"SMTP ready\r\n\r\n")
    cut_url, _ = await start_answering(
        raw, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", then_close=True
    )
    pool = Pool()
    try:
        with pytest.raises(httpx.RemoteProtocolError, match="not valid HTTP"):
            await pool.request("GET", url, {}, None)
        with pytest.raises(httpx.RemoteProtocolError, match="middle of its answer") as cut:
            await pool.request("POST", cut_url, {}, b"{}")
    finally:
        pool.close()
    assert not is_connect_error(cut.value)


async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent(raw) -> None:  # type: ignore[no-untyped-def]
    url, agent = await start_answering(raw, OK)
    pool = Pool()
    try:
        with pytest.raises(httpx.LocalProtocolError):
            await pool.request("GET", url, {"X-Evil": "a\r\nX-Admin: yes"}, None)
    finally:
        pool.close()
    assert agent.requests == []
    with pytest.raises(ValueError, match="HEAD"):
        await Pool().request("HEAD", url, {}, None)


async def test_a_cancelled_exchange_closes_its_connection(raw) -> None:  # type: ignore[no-untyped-def]
    arrived = asyncio.Event()
    ref: list[RawAgent] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await ref[0].read_request(reader)
        arrived.set()
        await reader.read()  # never answers; returns when the client closes

    url, agent = await raw(handler)
    ref.append(agent)
    pool = Pool()
    try:
        pending = asyncio.ensure_future(pool.request("POST", url, {}, b"{}"))
        await arrived.wait()
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        await agent.closed.wait()
    finally:
        pool.close()
    assert agent.connections == 1


async def test_the_connection_limit_queues_requests(raw) -> None:  # type: ignore[no-untyped-def]
    in_flight = 0
    most = 0
    release = asyncio.Event()
    ref: list[RawAgent] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight, most
        while await ref[0].read_request(reader) is not None:
            in_flight += 1
            most = max(most, in_flight)
            if in_flight == 2:
                release.set()
            await release.wait()
            in_flight -= 1
            writer.write(OK)
            await writer.drain()

    url, agent = await raw(handler)
    ref.append(agent)
    pool = Pool(max_connections=2)
    try:
        answers = await asyncio.wait_for(
            asyncio.gather(*(pool.request("GET", url, {}, None) for _ in range(6))), timeout=10
        )
    finally:
        pool.close()
    assert [a.status for a in answers] == [200] * 6
    assert most == 2 and agent.connections == 2


async def test_tls_is_verified_with_the_clients_context() -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)

    async def hello(request: web.Request) -> web.Response:
        return web.json_response({"reply": "secure"})

    app = web.Application()
    app.router.add_post("/chat", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_context).start()
    url = f"https://127.0.0.1:{runner.addresses[0][1]}/chat"
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    trusting, default = Pool(ssl_context=client_context), Pool()
    try:
        answer = await trusting.request("POST", url, {}, b"{}")
        assert answer.content == b'{"reply": "secure"}'
        with pytest.raises(httpx.ConnectError, match="TLS"):
            await default.request("POST", url, {}, b"{}")
    finally:
        trusting.close()
        default.close()
        await runner.cleanup()


async def test_closing_the_client_closes_the_lanes_connections(raw) -> None:  # type: ignore[no-untyped-def]
    from tamesu.http import fast_lane

    url, agent = await start_answering(raw, OK)
    client = make_client()
    lane = fast_lane(client)
    assert lane is not None
    await lane.exchange("GET", url, {}, None)
    await client.aclose()
    await asyncio.wait_for(agent.closed.wait(), timeout=10)
    assert lane.pool.closed


def test_a_run_in_an_application_on_uvloop_takes_the_lane(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """uvloop (which many services embed tamesu under) has no ``happy_eyeballs_delay``."""
    uvloop = pytest.importorskip("uvloop")
    from tamesu import run_async
    from tamesu.testing import EchoAgent, serve_echo_agent

    suite = tmp_path / "suite.yaml"

    async def main() -> tuple[int, str]:
        agent = EchoAgent()
        async with serve_echo_agent(agent) as url:
            suite.write_text(
                "suite: on-uvloop\n"
                f"targets: {{ api: {{ type: rest, url: '{url}/chat', request: {{ body: {{ message: '{{{{message}}}}' }} }}, response: {{ text: $.reply }} }} }}\n"
                "tests: [ { name: hi, target: api, scenario: { max_turns: 1, script: [ { say: hi } ] }, assert: [ { contains: 'echo: hi' } ] } ]\n"
            )
            result = await run_async([suite], output=tmp_path / "runs")
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        return result.exit_code, str([r.error for r in result.results])

    code, errors = uvloop.run(main())
    assert code == 0, errors
