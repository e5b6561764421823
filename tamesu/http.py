"""The one HTTP client factory: httpx's API over an aiohttp transport.

httpx gives every adapter one readable API (and in-memory transports for tests); aiohttp underneath
keeps the hot path fast when a load test holds hundreds of conversations open at once. The client
never retries by itself: reaching the agent is retried by ``tamesu.targets.connect`` as the suite's
``connect:`` says, so every attempt is visible and counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

__all__ = ["describe_http_error", "is_connect_error", "is_timeout", "make_client"]

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
    from httpx_aiohttp import AiohttpTransport

    transport = AiohttpTransport(limits=limits or _default_limits(), retries=0)
    return httpx.AsyncClient(
        transport=transport,
        timeout=httpx.Timeout(timeout),
        headers=headers,
        follow_redirects=False,
        trust_env=False,
    )


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
