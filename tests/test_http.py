"""The shared client's fast lane: the same request on the wire as httpx, the same errors."""

from __future__ import annotations

import codecs
import gzip
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web

from tamesu.http import (
    RunCookies,
    charset_of,
    describe_http_error,
    fast_lane,
    is_connect_error,
    is_timeout,
    make_client,
)

pytestmark = pytest.mark.integration


@pytest.fixture
async def agent() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        seen.append({"headers": dict(request.headers), "body": body})
        return web.json_response({"reply": "héllo", "n": len(body)})

    async def zipped(request: web.Request) -> web.Response:
        return web.Response(
            body=gzip.compress(b'{"reply": "packed"}'),
            headers={"Content-Encoding": "gzip", "Content-Type": "application/json; charset=latin-1"},
        )

    app = web.Application()
    app.router.add_post("/chat", echo)
    app.router.add_get("/zipped", zipped)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}", seen
    await runner.cleanup()


async def test_the_fast_lane_sends_what_httpx_sends(agent: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = agent
    client = make_client()
    try:
        lane = fast_lane(client)
        assert lane is not None
        body = {"message": "hi ☃", "n": 1}
        await client.post(url + "/chat", json=body, headers={"X-Shop": "mochi"})
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        headers = lane.merged_headers({"x-shop": "mochi"}, json_body=True)
        answer = await lane.exchange("POST", url + "/chat", headers, data)
        assert answer.status == 200
        assert json.loads(answer.content) == {"reply": "héllo", "n": len(data)}
    finally:
        await client.aclose()
    via_httpx, via_lane = seen
    assert via_lane["body"] == via_httpx["body"]
    wire = {k.lower(): v for k, v in via_httpx["headers"].items()}
    assert {k.lower(): v for k, v in via_lane["headers"].items()} == wire
    assert wire["user-agent"].startswith("python-httpx/") and wire["x-shop"] == "mochi"


async def test_the_fast_lane_decompresses_and_reads_the_charset(
    agent: tuple[str, list[dict[str, Any]]],
) -> None:
    url, _ = agent
    client = make_client()
    try:
        lane = fast_lane(client)
        assert lane is not None
        answer = await lane.exchange("GET", url + "/zipped", lane.merged_headers({}, json_body=False), None)
        assert answer.content == b'{"reply": "packed"}'
        assert charset_of(answer.headers.get("content-type")) == "latin-1"
    finally:
        await client.aclose()


async def test_a_refused_connection_reads_as_it_does_through_httpx() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = make_client()
    try:
        lane = fast_lane(client)
        assert lane is not None
        with pytest.raises(httpx.ConnectError) as err:
            await lane.exchange("POST", f"http://127.0.0.1:{port}/chat", {}, b"{}")
        assert is_connect_error(err.value) and not is_timeout(err.value)
        assert describe_http_error(err.value, "the agent") == "connection refused at the agent"
        with pytest.raises(httpx.ConnectTimeout) as via_httpx:
            await client.post(f"http://127.0.0.1:{port}/chat", content=b"{}")
        assert is_connect_error(via_httpx.value) and not is_timeout(via_httpx.value)
        assert describe_http_error(via_httpx.value, "the agent") == "connection refused at the agent"
    finally:
        await client.aclose()


async def test_the_fast_lane_steps_aside_for_anything_httpx_specific() -> None:
    plain = httpx.AsyncClient()
    authed = make_client()
    authed.auth = ("user", "pass")
    hooked = make_client()
    hooked.event_hooks["request"].append(lambda request: None)
    cookies = make_client()
    try:
        assert fast_lane(plain) is None
        assert fast_lane(authed) is None
        assert fast_lane(hooked) is None
        assert fast_lane(cookies) is not None
        cookies.cookies.set("sid", "1", domain="127.0.0.1")
        assert fast_lane(cookies) is None
        await cookies.aclose()
        assert fast_lane(cookies) is None
    finally:
        for client in (plain, authed, hooked):
            await client.aclose()


def test_charset_of_falls_back_to_utf8() -> None:
    assert charset_of(None) == "utf-8"
    assert charset_of("application/json") == "utf-8"
    assert charset_of('text/plain; charset="ISO-8859-1"') == "ISO-8859-1"
    assert charset_of("text/plain; charset=no-such-codec") == "utf-8"
    assert charset_of("text/html; Charset=latin-1") == "latin-1"
    for content_type in (
        'text/plain; charset="ISO-8859-1"',
        "text/html; Charset=latin-1",
        "application/json",
    ):
        response = httpx.Response(200, headers={"content-type": content_type}, content=b"x")
        assert codecs.lookup(charset_of(content_type)) == codecs.lookup(response.encoding or "utf-8")


async def test_the_shared_client_keeps_no_cookie_and_run_cookies_keep_theirs() -> None:
    async def login(request: web.Request) -> web.Response:
        response = web.json_response({"reply": "hi", "cookie": request.headers.get("Cookie")})
        response.set_cookie("sid", "abc123", path="/")
        return response

    app = web.Application()
    app.router.add_post("/chat", login)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/chat"
    client = make_client()
    try:
        answer = await client.post(url, json={})
        assert answer.headers["set-cookie"].startswith("sid=abc123")
        assert not client.cookies, "shared by every run, the client keeps no cookie"
        assert fast_lane(client) is not None
        cookies = RunCookies()
        assert cookies.header(url) is None
        cookies.keep("POST", url, 200, answer.headers.get_list("set-cookie"))
        assert cookies.header(url) == "sid=abc123"
        assert cookies.header("http://elsewhere.example/chat") is None, "cookies keep to their domain"
    finally:
        await client.aclose()
        await runner.cleanup()


async def test_the_shared_client_trusts_ssl_cert_file_on_the_lane_and_through_aiohttp(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ssl

    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)

    async def hello(request: web.Request) -> web.Response:
        return web.json_response({"reply": "secure"})

    app = web.Application()
    app.router.add_route("*", "/chat", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_context).start()
    url = f"https://127.0.0.1:{runner.addresses[0][1]}/chat"
    client = make_client()
    try:
        lane = fast_lane(client)
        assert lane is not None
        answer = await lane.exchange("POST", url, {}, b"{}")
        assert answer.content == b'{"reply": "secure"}'
        async with client.stream("GET", url) as streamed:  # not the lane's: aiohttp, loaded now
            assert json.loads(await streamed.aread()) == {"reply": "secure"}
    finally:
        await client.aclose()
        await runner.cleanup()


def test_a_client_for_plain_turns_does_not_load_aiohttp() -> None:
    import subprocess
    import sys

    code = (
        "import sys, asyncio\n"
        "from tamesu.http import fast_lane, make_client\n"
        "async def main():\n"
        "    client = make_client()\n"
        "    assert fast_lane(client) is not None\n"
        "    await client.aclose()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'httpx_aiohttp')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
