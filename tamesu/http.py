"""The one HTTP client factory: httpx's API over an aiohttp transport (loaded when first needed).

httpx gives every adapter one readable API (and in-memory transports for tests); aiohttp underneath
keeps the hot path fast when a load test holds hundreds of conversations open at once. The client
never retries by itself: reaching the agent is retried by ``tamesu.wire.connect`` as the suite's
``connect:`` says, so every attempt is visible and counted.

A plain request whose whole answer is read at once (a JSON turn) may skip httpx and aiohttp:
``fast_lane(client)`` hands out lean HTTP/1.1 connections (``tamesu.http_lane``) that send the
client's headers with its TLS settings and limits and raise the same httpx exceptions. It is
offered only while nothing httpx-specific is in play (no auth, hooks, cookies, mounts, proxy).
"""

from __future__ import annotations

import codecs
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from http.cookiejar import CookieJar

    import httpx

    from tamesu.http_lane import Answer
    from tamesu.limits import Limits

__all__ = [
    "FastLane",
    "RunCookies",
    "charset_of",
    "describe_http_error",
    "fast_lane",
    "is_connect_error",
    "is_timeout",
    "make_client",
]

DEFAULT_MAX_CONNECTIONS = 1024
"""Room for a load test of ~1000 simultaneous conversations without queueing on the pool."""
DEFAULT_MAX_KEEPALIVE = 256


def _default_limits() -> httpx.Limits:
    import httpx

    return httpx.Limits(
        max_connections=DEFAULT_MAX_CONNECTIONS,
        max_keepalive_connections=DEFAULT_MAX_KEEPALIVE,
        keepalive_expiry=30.0,
    )


def make_client(
    *,
    timeout: float | None = None,
    limits: httpx.Limits | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.AsyncClient:
    """A pooled ``httpx.AsyncClient`` on the aiohttp transport; ``timeout=None`` waits forever.

    ``limits`` defaults to 1024 connections with 256 kept alive for 30s.
    Callers bound each request themselves (a turn's timeout), so the default has no timeout.
    The client must be used and closed (``aclose``) inside one event loop.
    """
    import httpx

    transport = _lane_transport()(limits=limits or _default_limits())
    return httpx.AsyncClient(
        transport=transport,
        timeout=httpx.Timeout(timeout),
        headers=headers,
        cookies=_keeps_nothing(),
        follow_redirects=False,
        trust_env=False,
    )


def _keeps_nothing() -> CookieJar:
    """The shared client's jar, which keeps no cookie: the client serves every run at once, and one
    conversation's session cookie must never reach another's (each run keeps its own: RunCookies)."""
    from http.cookiejar import CookieJar, DefaultCookiePolicy

    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


class RunCookies:
    """The cookies one run's agent set, sent back on that run's later requests, as a browser would
    send them (domain, path, expiry and ``Secure`` respected: the standard library's cookie jar)."""

    __slots__ = ("_jar",)

    def __init__(self) -> None:
        self._jar: CookieJar | None = None

    def header(self, url: str) -> str | None:
        """The ``Cookie`` header for a request to ``url`` (None: no cookie applies)."""
        if not self._jar:
            return None
        import httpx

        request = httpx.Request("GET", url)
        httpx.Cookies(self._jar).set_cookie_header(request)
        return request.headers.get("cookie")

    def keep(self, method: str, url: str, status: int, set_cookie: list[str]) -> None:
        """Keep what the ``Set-Cookie`` headers of an answer to ``method url`` say."""
        if not set_cookie:
            return
        import httpx

        if self._jar is None:
            from http.cookiejar import CookieJar

            self._jar = CookieJar()
        answer = httpx.Response(
            status, headers=[("set-cookie", v) for v in set_cookie], request=httpx.Request(method, url)
        )
        httpx.Cookies(self._jar).extract_cookies(answer)

    def __len__(self) -> int:
        return len(self._jar) if self._jar is not None else 0


@lru_cache(maxsize=256)
def charset_of(content_type: str | None) -> str:
    """The charset a Content-Type names when Python knows it, else utf-8 (what httpx decodes with)."""
    if not content_type or "charset" not in content_type.lower():
        return "utf-8"
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset":
            name = value.strip().strip("'\"")
            try:
                codecs.lookup(name)
            except LookupError:
                return "utf-8"
            return name
    return "utf-8"


class FastLane:
    """Sends plain requests on kept-alive HTTP/1.1 connections of its own (``tamesu.http_lane``)
    with the headers, TLS settings and limits of the httpx client it stands for."""

    def __init__(self, client: httpx.AsyncClient, transport: Any) -> None:
        from tamesu.http_lane import Pool

        self.client = client
        self.transport = transport
        self.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in client.headers.raw}
        """httpx's default headers (user agent, accept, accept-encoding), sent as httpx would."""
        self._lower = {k.lower() for k in self.headers}
        self._json_headers = {**self.headers, "Content-Type": "application/json"}
        limits = transport.limits
        self.pool = Pool(
            ssl_context=lambda: transport.ssl_context,
            max_connections=limits.max_connections,
            max_keepalive=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            connect_timeout=client.timeout.connect,
        )
        transport.lane_pool = self.pool

    def usable(self) -> bool:
        """Still nothing httpx-specific in play (cookies may have arrived through httpx since)."""
        client = self.client
        jar = client.cookies.jar
        return (
            not getattr(jar, "_cookies", jar)  # the stdlib jar's own dict: no iteration to see it is empty
            and not client.is_closed
            and client._transport is self.transport
        )

    def merged_headers(self, headers: dict[str, str], *, json_body: bool) -> dict[str, str]:
        """The client's headers overridden by the call's (names compare case-insensitively)."""
        if not headers:
            return self._json_headers if json_body else self.headers
        out = dict(self.headers)
        for key, value in headers.items():
            low = key.lower()
            if low in self._lower:
                for k in [k for k in out if k.lower() == low]:
                    del out[k]
            out[key] = value
        if json_body and not any(k.lower() == "content-type" for k in headers):
            out["Content-Type"] = "application/json"
        return out

    def exchange(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        data: bytes | None,
        *,
        on_status: Callable[[int], None] | None = None,
        limits: Limits | None = None,
    ) -> Awaitable[Answer]:
        """The whole answer (status, headers, decoded body); errors come as httpx exceptions, an
        answer over ``limits.answer_size`` as ``LimitExceeded``."""
        return self.pool.request(method, url, headers, data, on_status=on_status, limits=limits)


def fast_lane(client: httpx.AsyncClient) -> FastLane | None:
    """The fast lane of ``client`` when it may be used now, else None (use httpx)."""
    lane: FastLane | None = getattr(client, "_tamesu_fast_lane", None)
    if lane is None:
        if getattr(client, "_tamesu_fast_lane_checked", False):
            return None
        lane = _make_lane(client)
        client._tamesu_fast_lane_checked = True  # type: ignore[attr-defined]
        client._tamesu_fast_lane = lane  # type: ignore[attr-defined]
        if lane is None:
            return None
    return lane if lane.usable() else None


def _make_lane(client: httpx.AsyncClient) -> FastLane | None:
    transport: Any = getattr(client, "_transport", None)
    if type(transport) is not _lane_transport():
        return None
    hooks = getattr(client, "_event_hooks", {})
    if (
        getattr(client, "_mounts", None)
        or client.auth is not None
        or hooks.get("request")
        or hooks.get("response")
        or client.follow_redirects
        or str(client.base_url)
        or client.params
        or transport.proxy is not None
        or transport.uds
        or transport.local_address
        or transport.socket_options
    ):
        return None
    return FastLane(client, transport)


@lru_cache(maxsize=1)
def _lane_transport() -> Any:
    """The shared client's transport class (it also closes its fast lane's connections)."""
    import httpx

    class LaneTransport(httpx.AsyncBaseTransport):
        """What the fast lane does not carry (streams, websockets' handshakes, auth, cookies, HEAD)
        goes through aiohttp (httpx-aiohttp), imported and set up at the first such request: a
        suite of plain JSON turns never loads aiohttp, a sixth of a ``tamesu run``'s start."""

        proxy = None
        uds = None
        local_address = None
        socket_options = ()

        def __init__(self, *, limits: httpx.Limits) -> None:
            self.limits = limits
            self.lane_pool: Any = None
            self._ssl: Any = None
            self._aiohttp: Any = None

        @property
        def ssl_context(self) -> Any:
            """httpx's verifying context (the one httpx-aiohttp would make), made on first use."""
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context(verify=True, cert=None, trust_env=True)
            return self._ssl

        def _inner(self) -> Any:
            if self._aiohttp is None:
                from httpx_aiohttp import AiohttpTransport

                self._aiohttp = AiohttpTransport(verify=self.ssl_context, limits=self.limits, retries=0)
            return self._aiohttp

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response: httpx.Response = await self._inner().handle_async_request(request)
            return response

        async def aclose(self) -> None:
            if self.lane_pool is not None:
                self.lane_pool.close()
            if self._aiohttp is not None:
                await self._aiohttp.aclose()

    return LaneTransport


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        out.append(cur)
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return out


def is_connect_error(exc: BaseException) -> bool:
    """The agent could not be reached at all (refused, unresolvable, reset before an answer).

    The aiohttp transport reports a refused connection as ``httpx.ConnectTimeout``, so the cause
    chain decides rather than the httpx class.
    """
    import httpx

    for e in _chain(exc):
        name = type(e).__name__
        if isinstance(e, (ConnectionRefusedError, ConnectionResetError, httpx.ConnectError)):
            return True
        if name in ("ClientConnectorError", "ClientConnectorDNSError", "ServerDisconnectedError"):
            return True
    return False


def is_timeout(exc: BaseException) -> bool:
    """A read or connect timeout (not a refused connection)."""
    import asyncio

    import httpx

    if is_connect_error(exc):
        return False
    return any(
        isinstance(e, (TimeoutError, asyncio.TimeoutError, httpx.TimeoutException)) for e in _chain(exc)
    )


def describe_http_error(exc: BaseException, url: str) -> str:
    """A short sentence saying what happened, for a TargetError (the caller redacts it)."""
    for e in _chain(exc):
        if isinstance(e, ConnectionRefusedError) or "refused" in str(e).lower():
            return f"connection refused at {url}"
    if is_connect_error(exc):
        inner = _chain(exc)[-1]
        return f"cannot connect to {url}: {inner}"
    if is_timeout(exc):
        return f"timed out talking to {url}"
    inner = _chain(exc)[-1]
    return f"request to {url} failed: {type(inner).__name__}: {inner}".rstrip(": ")
