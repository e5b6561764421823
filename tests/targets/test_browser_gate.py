"""The allowed domains hold for what Playwright's routing does not see, against a hostile site on
loopback (127.0.0.1 is allowed, 127.0.0.2 is another host): a redirect followed by the browser,
a websocket, and WebRTC's STUN over UDP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("playwright.async_api", reason="pip install 'tamesu[browser]'")

from aiohttp import web

from tamesu.errors import TargetError
from tamesu.kernel.events import BrowserBlocked, BrowserDownload, BrowserPopup
from tamesu.targets.browser.browser_session import close_shared_browsers

from .conftest import Harness
from .test_browser import Page, events_of, steps_of

pytestmark = pytest.mark.integration

HOME = """<html><body><h1>home</h1><a id="away" href="/go">go</a><script>
window.socket = new Promise((resolve) => {
  const ws = new WebSocket("ws://127.0.0.2:" + location.port + "/ws");
  ws.onopen = () => resolve("open");
  ws.onclose = () => resolve("closed");
});
</script></body></html>"""


class Site:
    """One app on two loopback hosts; ``hits`` are the requests the other host got."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.port = 0

    def app(self) -> web.Application:
        async def home(request: web.Request) -> web.Response:
            return web.Response(text=HOME, content_type="text/html")

        async def go(request: web.Request) -> web.Response:
            raise web.HTTPFound(f"http://127.0.0.2:{self.port}/evil")

        async def evil(request: web.Request) -> web.Response:
            self.hits.append(request.path)
            return web.Response(text="<html><body>elsewhere</body></html>", content_type="text/html")

        async def ws(request: web.Request) -> web.WebSocketResponse:
            self.hits.append(request.path)
            sock = web.WebSocketResponse()
            await sock.prepare(request)
            await sock.close()
            return sock

        async def big(request: web.Request) -> web.StreamResponse:
            self.hits.append(request.path)
            headers = {
                "Content-Type": "application/octet-stream",
                "Content-Disposition": "attachment; filename=big.bin",
            }
            response = web.StreamResponse(headers=headers)
            await response.prepare(request)
            try:
                for _ in range(200):  # 200 MB unless the browser stops reading
                    await response.write(b"\0" * 1_000_000)
            except (ConnectionError, RuntimeError):
                pass
            return response

        async def child(request: web.Request) -> web.Response:
            return web.Response(text="<html>child</html>", content_type="text/html")

        app = web.Application()
        app.router.add_get("/", home)
        app.router.add_get("/big", big)
        app.router.add_get("/child", child)
        app.router.add_get("/go", go)
        app.router.add_get("/evil", evil)
        app.router.add_get("/ws", ws)
        return app


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()
    runner = web.AppRunner(site.app(), access_log=None)
    await runner.setup()
    first = web.TCPSite(runner, "127.0.0.1", 0)
    await first.start()
    site.port = runner.addresses[0][1]
    await web.TCPSite(runner, "127.0.0.2", site.port).start()
    yield site
    await runner.cleanup()
    await close_shared_browsers()


async def test_a_redirect_to_another_host_fails_the_step_and_is_noted(
    harness: Harness, site: Site, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{site.port}/"
    steps = [{"action": {"navigate": "/go"}}, {"action": {"assert_text": "home"}}]
    page = Page(harness, {"url": url, "browser": {"recording": "off"}}, steps, tmp_path)
    out = await page.open()
    [step] = steps_of(out)
    assert not step["passed"] and "left the allowed domains" in step["message"]
    assert f"127.0.0.2:{site.port}/evil (a redirect from http://127.0.0.1:{site.port}/go)" in step["message"]
    redirects = [e for e in events_of(out, BrowserBlocked) if e.redirected_from]
    assert [(e.url, e.redirected_from) for e in redirects] == [
        (f"http://127.0.0.2:{site.port}/evil", f"http://127.0.0.1:{site.port}/go")
    ]
    [result] = page.adapter.results()
    assert not result.passed


async def test_a_first_page_that_redirects_elsewhere_is_an_error(
    harness: Harness, site: Site, tmp_path: Path
) -> None:
    page = Page(
        harness, {"url": f"http://127.0.0.1:{site.port}/go", "browser": {"recording": "off"}}, [], tmp_path
    )
    with pytest.raises(TargetError, match="led out of the allowed domains"):
        await page.adapter.start()


async def test_a_websocket_to_another_host_is_closed_before_it_connects(
    harness: Harness, site: Site, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{site.port}/"
    steps = [{"action": {"eval_js": "window.socket"}}]
    page = Page(harness, {"url": url, "browser": {"recording": "off"}}, steps, tmp_path)
    out = await page.open()
    [step] = steps_of(out)
    assert step["result"] == "closed"
    assert "/ws" not in site.hits
    assert [e.method for e in events_of(out, BrowserBlocked)] == ["WEBSOCKET"]


class Stun(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.packets = 0

    def datagram_received(self, data: bytes, addr: object) -> None:
        self.packets += 1


async def test_webrtc_sends_no_stun_to_another_host(harness: Harness, site: Site, tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    transport, stun = await loop.create_datagram_endpoint(Stun, local_addr=("127.0.0.2", 0))
    port = transport.get_extra_info("sockname")[1]
    gathered = f"""new Promise(async (resolve) => {{
      const pc = new RTCPeerConnection({{ iceServers: [{{ urls: "stun:127.0.0.2:{port}" }}] }});
      pc.createDataChannel("x");
      pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && resolve("complete");
      await pc.setLocalDescription(await pc.createOffer());
    }})"""
    url = f"http://127.0.0.1:{site.port}/"
    page = Page(
        harness, {"url": url, "browser": {"recording": "off"}}, [{"action": {"eval_js": gathered}}], tmp_path
    )
    try:
        [step] = steps_of(await page.open())
    finally:
        transport.close()
    assert step["result"] == "complete"
    assert stun.packets == 0


OPEN_AND_DOWNLOAD = """() => {
  const link = document.createElement("a");
  link.href = "/big";
  link.download = "big.bin";
  document.body.append(link);
  link.click();
  window.opened = [];
  for (let i = 0; i < 100; i++) window.opened.push(window.open("/child?" + i));
  return window.opened.filter(Boolean).length;
}"""
ALL_CLOSED = """new Promise((resolve) => {
  setTimeout(() => resolve("still open"), 10000);
  const check = () => (window.opened.every((w) => !w || w.closed) ? resolve("closed") : setTimeout(check, 20));
  check();
})"""
"""Waits until every popup is closed (or gives up after 10 s, so that a failure is a verdict)."""


async def test_popups_and_downloads_are_noted_and_nothing_is_written(
    harness: Harness, site: Site, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{site.port}/"
    steps = [{"action": {"eval_js": OPEN_AND_DOWNLOAD}}, {"action": {"eval_js": ALL_CLOSED}}]
    page = Page(harness, {"url": url, "browser": {"recording": "off"}}, steps, tmp_path)
    out = await page.open()
    opened, closed = steps_of(out)
    assert opened["result"] == 100 and closed["result"] == "closed", "tamesu closed every popup"
    popups = events_of(out, BrowserPopup)
    assert len(popups) == 100 and all("/child?" in p.url for p in popups)
    assert [(d.url, d.filename) for d in events_of(out, BrowserDownload)] == [(f"{url}big", "big.bin")]
    assert [p for p in tmp_path.rglob("*") if p.is_file() and p.stat().st_size > 1_000_000] == []
