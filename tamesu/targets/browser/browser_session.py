"""One Chromium per process, a fresh context per run, and the rules every request of a run obeys.

Starting Chromium takes about a second and a hundred megabytes; a context takes milliseconds. So
the browser is started lazily, once per event loop, and shared by every run of the process, while
each run gets its own context (cookies, storage, routes) that nothing else sees.

Every request of a context, navigations included, passes ``Gate``: a host outside the allowed
domains is aborted (and noted), a request a mock matches is answered by tamesu, and the rest go to
the network. Service workers are blocked, so no request escapes the gate. Routing does not see
what the browser does on its own, so the gate covers those too: a redirect's next hop is checked
as it is requested (one outside the domains is noted and fails the step that led there),
websockets are routed (one to another host is closed), and Chromium never sends WebRTC's UDP
(STUN, media) except through a proxy.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tamesu.errors import MissingExtraError, TargetError
from tamesu.extras import chromium_path

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        Download,
        Page,
        Playwright,
        Request,
        Route,
        WebSocketRoute,
    )

    from tamesu.targets.browser.settings import BrowserMock

__all__ = [
    "Gate",
    "close_shared_browsers",
    "domain_allowed",
    "shared_browser",
    "url_matches",
]

LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)
"""WebRTC sends STUN and media over UDP to any host a page names, past every route: only through
a proxy (and tamesu sets none), so a page cannot reach another host that way."""
MAX_NOTES = 200
"""The most blocked or mocked requests one run notes in its transcript."""


@dataclass
class _Shared:
    playwright: Playwright
    browser: Browser


_browsers: dict[asyncio.AbstractEventLoop, _Shared] = {}
_locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}


async def shared_browser() -> Browser:
    """This event loop's Chromium, started on first use (a crashed one is started again)."""
    loop = asyncio.get_running_loop()
    lock = _locks.setdefault(loop, asyncio.Lock())
    async with lock:
        shared = _browsers.get(loop)
        if shared is not None and shared.browser.is_connected():
            return shared.browser
        try:
            from playwright.async_api import async_playwright
        except ImportError:
            raise MissingExtraError("Playwright (for browser targets)", extra="browser") from None
        executable = chromium_path()
        playwright = await async_playwright().start()
        try:
            browser = await playwright.chromium.launch(executable_path=executable, args=list(LAUNCH_ARGS))
        except Exception as exc:
            await playwright.stop()
            raise TargetError(f"Chromium at {executable} did not start: {exc}", retryable=False) from None
        _browsers[loop] = _Shared(playwright, browser)
        return browser


async def close_shared_browsers() -> None:
    """Close this event loop's Chromium (tests and the end of a run; a later run starts another)."""
    loop = asyncio.get_running_loop()
    shared = _browsers.pop(loop, None)
    _locks.pop(loop, None)
    if shared is not None:
        try:
            await shared.browser.close()
        finally:
            await shared.playwright.stop()


def domain_allowed(url: str, domains: list[str]) -> bool:
    """Whether a request may go out: a page's own data and blob URLs always, an http(s) or ws(s)
    URL when its host is one of the domains or under one."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    host = (parts.hostname or "").lower().rstrip(".")
    for domain in domains:
        domain = domain.lower().strip().rstrip(".")
        if host == domain or host.endswith("." + domain):
            return True
    return False


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    """A URL glob as a regex: ``**`` crosses slashes, ``*`` stops at one; the rest is literal."""
    out = []
    for i, part in enumerate(pattern.split("**")):
        if i:
            out.append(".*")
        out.append("[^/]*".join(re.escape(p) for p in part.split("*")))
    return re.compile("^" + "".join(out) + "$")


def url_matches(pattern: str, url: str) -> bool:
    """A pattern with ``*`` is a glob on the full URL; any other is a substring of it."""
    if "*" in pattern:
        return _glob(pattern).match(url) is not None
    return pattern in url


@dataclass
class Gate:
    """The route handler of one run's context: allowed domains first, then the mocks (the latest
    added wins), then the network. What it blocked or answered is kept in ``notes``."""

    domains: list[str]
    mocks: list[BrowserMock] = field(default_factory=list)
    notes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    blocked: int = 0
    escapes: list[str] = field(default_factory=list)
    """Redirects the browser followed out of the allowed domains, not yet failed as a step."""

    def note(self, name: str, data: dict[str, Any]) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append((name, data))

    async def handle(self, route: Route) -> None:
        request = route.request
        url = request.url
        try:
            if not domain_allowed(url, self.domains):
                self.blocked += 1
                self.note("browser_blocked", {"url": url[:500], "method": request.method})
                await route.abort("blockedbyclient")
                return
            for mock in reversed(self.mocks):
                if (mock.method is None or mock.method == request.method) and url_matches(mock.url, url):
                    self.note(
                        "browser_mocked", {"url": url[:500], "method": request.method, "pattern": mock.url}
                    )
                    await _answer(route, mock)
                    return
            await route.continue_()
        except Exception:
            # the page went away while the request waited (a closed context): nothing to answer
            return

    def redirected(self, request: Request) -> None:
        """Every request of the context (an event, not a route): a redirect's next hop outside the
        domains is noted and kept in ``escapes``, since routing never sees it."""
        previous = request.redirected_from
        if previous is None or domain_allowed(request.url, self.domains):
            return
        self.blocked += 1
        data = {"url": request.url[:500], "method": request.method, "redirected_from": previous.url[:500]}
        self.note("browser_blocked", data)
        self.escapes.append(f"{request.url[:200]} (a redirect from {previous.url[:200]})")

    def take_escapes(self) -> list[str]:
        escapes, self.escapes = self.escapes, []
        return escapes

    async def socket(self, ws: WebSocketRoute) -> None:
        """A websocket of the page: to an allowed host it connects, to any other it is closed."""
        if domain_allowed(ws.url, self.domains):
            ws.connect_to_server()
            return
        self.blocked += 1
        self.note("browser_blocked", {"url": ws.url[:500], "method": "WEBSOCKET"})
        try:
            await ws.close(code=1008, reason="outside the allowed domains")
        except Exception:
            return

    async def popup(self, page: Page) -> None:
        """A window the page opened (the run's own page is opened before the gate watches): noted
        and closed, since no step can act in it."""
        self.note("browser_popup", {"url": page.url[:500]})
        try:
            await page.close()
        except Exception:
            return

    def download(self, download: Download) -> None:
        """A download the page started (the context accepts none, so nothing reaches the disk)."""
        self.note(
            "browser_download", {"url": download.url[:500], "filename": download.suggested_filename[:200]}
        )

    async def attach(self, context: BrowserContext) -> None:
        await context.route("**/*", self.handle)
        await context.route_web_socket(re.compile(".*"), self.socket)
        context.on("request", self.redirected)

    def watch(self, context: BrowserContext, page: Page) -> None:
        """Note the popups and downloads of ``page``, the run's page, from now on."""
        context.on("page", self.popup)
        page.on("download", self.download)


async def _answer(route: Route, mock: BrowserMock) -> None:
    if mock.delay_ms:
        await asyncio.sleep(mock.delay_ms / 1000)
    if mock.abort:
        await route.abort("failed")
        return
    headers = {str(k): str(v) for k, v in (mock.headers or {}).items()}
    if isinstance(mock.body, str) or mock.body is None:
        body = mock.body or ""
    else:
        body = json.dumps(mock.body)
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json"
    await route.fulfill(status=mock.status, headers=headers, body=body)
